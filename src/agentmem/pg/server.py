"""The embedded PostgreSQL server of one data directory (:class:`EmbeddedServer`).

Facts this works around: pgserver caches its server object per process, so after the
postmaster is SIGKILLed ``get_server`` returns the dead server. A killed or stopped
postmaster stays a zombie until its parent reaps it, and pgserver counts zombies as
running; here a zombie is dead (:func:`~agentmem.procs.process_alive`). pgserver only
stops a server when the last process in ``pgdata/.handle_pids.json`` lets go, so pids of
processes that died without cleaning up are pruned from that list before use. pgserver
rewrites that list in place (truncate, then write), so it is read only under pgserver's
lock. Joining a shared server and letting go of it last are serialised across processes
by :func:`~agentmem.pg.postmaster.data_dir_lock`, so a server is never stopped under a
process that is joining it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import psutil

from agentmem.pg.errors import PgError
from agentmem.pg.postmaster import (
    STOP_TIMEOUT_S,
    data_dir_lock,
    handle_pids,
    import_pgserver,
    kill_leftover_servers,
    log_tail,
    pg_ctl_stop,
    postmaster_pid,
    prune_handle_pids,
    report_server_cpu,
    start_in_fresh_process,
)
from agentmem.pg.template import seed_data_dir
from agentmem.procs import (
    child_subreaper,
    children,
    descendants,
    kill,
    process_alive,
    process_gone,
    reap,
    share_background_priority,
    wait_gone,
    wait_until,
)


class EmbeddedServer:
    """The embedded PostgreSQL server (pgserver) of one data directory.

    It is held in one of two ways:

    * **shared**, by the arms (:func:`agentmem.pg.connect_store`): :meth:`acquire` and
      :meth:`release`. pgserver runs in this process; holders in this process share one
      reference-counted object per data directory, other processes join through
      pgserver's ``pgdata/.handle_pids.json``, and the last release anywhere stops the
      server (``pg_ctl stop``, fast mode). Joining and the last release of a process
      hold the data directory's lock (:func:`~agentmem.pg.postmaster.data_dir_lock`,
      file ``<pgdata>.lock``), so they never overlap. An acquire after the postmaster
      died restarts it (crash recovery replays WAL). A process that exits still holding
      references lets go at exit, the same way.
    * **owned**, by the integrity trials: ``with EmbeddedServer(pgdata) as srv``,
      :meth:`start`, :meth:`kill`, :meth:`stop`. Every :meth:`start` runs pgserver in a
      fresh Python process, so the server can be SIGKILLed and started again on the same
      directory. While it is started this process is a Linux child subreaper
      (``pg_ctl`` daemonises the postmaster), so the postmaster and the backends of a
      killed postmaster are reaped here; PostgreSQL would otherwise refuse to restart
      while a zombie holds ``postmaster.pid``. Nothing of the server survives
      :meth:`stop` or the end of the ``with`` block, also on exceptions.

    Args:
        pgdata: the data directory (initialised by ``initdb`` if missing, or copied from
            the template cluster, :mod:`agentmem.pg.template`; its parent must exist). As
            root the server runs as OS user ``pgserver``, which gets read/execute access on
            the path's ancestors (pgserver does this).
        create: allow initialising a new data directory; with False a directory that
            holds no ``PG_VERSION`` is an error (used to reopen an existing store).

    Attributes:
        pgdata: resolved data directory (the postmaster's ``-D`` argument).
        create: as given.
        refs: shared handles held by this process.
    """

    _registry: ClassVar[dict[Path, EmbeddedServer]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()
    _exit_hook: ClassVar[bool] = False

    def __init__(self, pgdata: str | Path, *, create: bool = True) -> None:
        self.pgdata = Path(pgdata).expanduser().resolve()
        self.create = create
        self.refs = 0
        self._server: Any = None  # pgserver's PostgresServer, when shared
        self._uri: str | None = None  # URI of the postgres database, when owned and started
        self._pid: int | None = None  # postmaster pid, when owned and started
        self._reaper: contextlib.ExitStack | None = None
        self._seen: set[int] = set()

    # ------------------------------------------------------------------ both ways
    @property
    def pid(self) -> int | None:
        """Pid of the postmaster this handle started or joined (``None`` if unknown/stopped)."""
        if self._server is None:
            return self._pid
        try:
            return int(self._server.get_pid())
        except Exception:
            return postmaster_pid(self.pgdata)

    def uri(self, database: str | None = None) -> str:
        """Return a libpq URI for ``database`` (default ``postgres``) over the Unix socket.

        Raises:
            PgError: when an owned server is not started.
        """
        if self._server is not None:
            return str(self._server.get_uri(database))
        if self._uri is None:
            raise PgError(f"PostgreSQL on {self.pgdata} is not running")
        if database is None:
            return self._uri
        # pgserver's form, postgresql://postgres:@/<database>?host=<socket dir>
        return urlsplit(self._uri)._replace(path="/" + database).geturl()

    def _check(self) -> None:
        """Check the data directory's parent and, without ``create``, the cluster.

        Raises:
            PgError: naming the path when the parent is missing or not a directory,
                ``pgdata`` is not a directory, or (without ``create``) holds no cluster.
        """
        parent = self.pgdata.parent
        if not parent.exists():
            raise PgError(f"store directory {parent} does not exist")
        if not parent.is_dir():
            raise PgError(f"store directory {parent} is not a directory")
        if self.pgdata.exists() and not self.pgdata.is_dir():
            raise PgError(f"PostgreSQL data directory {self.pgdata} is not a directory")
        if not self.create and not (self.pgdata / "PG_VERSION").is_file():
            raise PgError(f"{self.pgdata} is not a PostgreSQL data directory (no PG_VERSION file)")

    # ---------------------------------------------------------------------- shared
    @classmethod
    def acquire(cls, pgdata: Path, *, create: bool) -> EmbeddedServer:
        """Start (or join) the shared server for ``pgdata`` and take one reference.

        Args:
            pgdata: data directory; with ``create`` it is initialised (``initdb``) when
                missing; without ``create`` it must already hold a cluster.
            create: allow initialising a new data directory.

        Returns:
            The handle shared by this process; call :meth:`release` once when done.

        Raises:
            PgError: naming ``pgdata`` when the cluster is missing, the server cannot
                start (the tail of the server log is included), or another process keeps
                the data directory locked for :data:`~agentmem.pg.postmaster.LOCK_TIMEOUT_S`
                seconds.
        """
        wanted = cls(pgdata, create=create)
        wanted._check()
        with cls._registry_lock:
            handle = cls._registry.get(wanted.pgdata)
            if handle is not None and handle._running():
                # held by this process, so listed as a holder: nobody stops it meanwhile
                handle.refs += 1
                return handle
            with data_dir_lock(wanted.pgdata):
                if handle is None:
                    handle = wanted
                    handle._server = handle._join()
                # pgserver may hand back a cached server object whose postmaster has died
                try:
                    handle._ensure_running()
                    # pg_ctl starts the postmaster in a session of its own: a niced
                    # (background) job lowers that session too, or it would not stay niced
                    share_background_priority(postmaster_pid(handle.pgdata))
                except PgError:
                    if handle.refs == 0:  # nobody in this process uses it: leave nothing running
                        cls._registry.pop(handle.pgdata, None)
                        handle._stop_shared()
                    raise
            cls._registry[handle.pgdata] = handle
            handle.refs += 1
            return handle

    def release(self) -> None:
        """Drop one shared reference; the last one in this process stops the server.

        Waits until the postmaster has exited (a zombie awaiting reaping counts as
        exited). A server still held by another live process is left running.

        Raises:
            PgError: when another process keeps the data directory locked for
                :data:`~agentmem.pg.postmaster.LOCK_TIMEOUT_S` seconds (the server is
                then left running).
        """
        with self._registry_lock:
            self.refs -= 1
            if self.refs > 0:
                return
            self._registry.pop(self.pgdata, None)
            with data_dir_lock(self.pgdata):
                self._stop_shared()

    @classmethod
    def _release_at_exit(cls) -> None:
        """Let go of every server this process still holds (run at interpreter exit).

        Replaces pgserver's own exit hook, which would stop a server without the data
        directory's lock.
        """
        with cls._registry_lock:
            handles = list(cls._registry.values())
            cls._registry.clear()
            for handle in handles:
                handle.refs = 0
                try:
                    with data_dir_lock(handle.pgdata):
                        handle._stop_shared()
                except PgError:
                    pass  # the server stays up; the next process to join prunes this pid

    def _join(self) -> Any:
        """Run ``pgserver.get_server`` after pruning stale handle pids and zombies.

        The caller holds :func:`~agentmem.pg.postmaster.data_dir_lock`.
        """
        pgserver = import_pgserver()
        from pgserver.postgres_server import PostgresServer

        pgdata = self.pgdata
        if self.create:
            seed_data_dir(pgdata)  # a copy of the template cluster, when workflow jobs keep one
        prune_handle_pids(pgdata)
        old = postmaster_pid(pgdata)
        if old is not None and not process_alive(old):
            # a crashed postmaster that is still a zombie: pgserver (and postgres' own
            # lock-file check) would take it for a running server.
            wait_until(lambda: process_gone(old), STOP_TIMEOUT_S)
        try:
            server = pgserver.get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:  # pgserver raises CalledProcessError, AssertionError, ...
            # pgserver caches the object before starting the postmaster; a failed start
            # (e.g. processes of a killed server still hold its shared memory) is retried
            # by _ensure_running on that cached object.
            server = PostgresServer._instances.get(pgdata)
            if server is None:
                raise PgError(
                    f"cannot start embedded PostgreSQL in {pgdata}: {exc}{log_tail(pgdata, 20)}"
                ) from exc
        # pgserver adds this pid only when it constructs the server object; make sure the
        # process is listed even when pgserver handed back a cached object.
        with PostgresServer._lock:
            server.global_process_id_list.get_and_add(os.getpid())
        # at exit, let go under the data directory's lock (not through pgserver's hook)
        atexit.unregister(server._cleanup)
        if not EmbeddedServer._exit_hook:
            atexit.register(EmbeddedServer._release_at_exit)
            EmbeddedServer._exit_hook = True
        return server

    def _ensure_running(self) -> None:
        """Make sure the postmaster runs, restarting it if it died under this process.

        pgserver would hand back its cached, dead server object; instead wait until the
        dead postmaster is reaped and start the cluster again (crash recovery replays
        WAL). A start is retried for up to :data:`STOP_TIMEOUT_S` seconds, because
        processes of a killed postmaster can hold its shared memory for a moment.

        Raises:
            PgError: when the server is not running within :data:`STOP_TIMEOUT_S` seconds
                (the tail of the server log is included).
        """
        pid = self.pid
        if self._ready() and process_alive(pid):
            return
        import_pgserver()
        from pgserver.postgres_server import PostgresServer

        if pid is not None and not process_alive(pid):
            wait_until(lambda: process_gone(pid), STOP_TIMEOUT_S)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        last: BaseException | None = None
        while True:
            try:
                with PostgresServer._lock:
                    self._server.ensure_postgres_running()
                if self._ready() and process_alive(self.pid):
                    return
            except Exception as exc:  # CalledProcessError, TimeoutExpired, AssertionError
                last = exc
            if time.monotonic() >= deadline:
                raise PgError(
                    f"cannot (re)start embedded PostgreSQL in {self.pgdata} (dead postmaster "
                    f"pid {pid}): {last or 'postmaster not running'}{log_tail(self.pgdata, 20)}"
                )
            time.sleep(0.25)

    def _ready(self) -> bool:
        """Whether pgserver recorded a started postmaster (a failed start leaves none)."""
        return getattr(self._server, "_postmaster_info", None) is not None

    def _running(self) -> bool:
        """Whether the postmaster this handle joined is started and alive."""
        return self._ready() and process_alive(self.pid)

    def _stop_shared(self) -> None:
        """Let go of the server via pgserver; stop it if no other live process holds it.

        The caller holds :func:`~agentmem.pg.postmaster.data_dir_lock`, so no process
        joins between the check for other holders and the stop.
        """
        import_pgserver()
        pid = self.pid
        others = self._other_holders()  # our cleanup below changes only our own entry
        if process_alive(pid) and others == []:
            # the last holder: pgserver's cleanup stops the server, and with it goes the
            # CPU time of its backends, which only the job's log will then have
            report_server_cpu(self.pgdata, pid)
        try:
            self._server.cleanup()
        except Exception:  # pgserver raises when the server already died; checked below
            pass
        if not process_alive(pid) or others is None or others:
            return
        if not pg_ctl_stop(self.pgdata, timeout=60):
            try:
                psutil.Process(pid).terminate()  # type: ignore[arg-type]
            except psutil.Error:
                pass
        if not wait_until(lambda: not process_alive(pid), STOP_TIMEOUT_S):
            try:
                psutil.Process(pid).kill()  # type: ignore[arg-type]
            except psutil.Error:
                pass

    def _other_holders(self) -> list[int] | None:
        """Return live pids other than this process listed in ``.handle_pids.json``.

        ``None`` when the list is unreadable: the holders are unknown, so the server is
        left running (the next process to join replaces the list).
        """
        pids = handle_pids(self.pgdata)
        if pids is None:
            return None
        return [p for p in pids if p != os.getpid() and process_alive(p)]

    # ----------------------------------------------------------------------- owned
    def __enter__(self) -> EmbeddedServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 120.0) -> str:
        """Start (or restart after a crash) the owned server from a fresh process.

        Args:
            timeout: seconds allowed for initdb + start (+ crash recovery).

        Returns:
            The URI of the ``postgres`` database (:meth:`uri`).

        Raises:
            PgError: naming the data directory (with the server log's tail) when the
                directory is missing/invalid or the server does not come up.
        """
        self._check()
        if self._reaper is None:
            self._reaper = contextlib.ExitStack()
            self._reaper.enter_context(child_subreaper())
        try:
            if self.create:
                seed_data_dir(self.pgdata)
            self._uri, self._pid = start_in_fresh_process(self.pgdata, timeout)
        except PgError:
            self._sweep()
            raise
        self._seen.add(self._pid)
        share_background_priority(self._pid)  # a niced (background) job's server stays niced
        return self._uri

    def processes(self) -> list[int]:
        """Pids of the postmaster and all its descendants right now (empty when stopped)."""
        if self._pid is None or not process_alive(self._pid):
            return []
        pids = [self._pid, *descendants(self._pid)]
        self._seen.update(pids)
        return pids

    def kill(self, timeout: float = 15.0) -> list[int]:
        """SIGKILL the postmaster (a server crash), then wait until its backends are gone.

        Only the postmaster receives SIGKILL; its children notice the postmaster's death
        and exit by themselves (any still alive after ``timeout`` seconds are SIGKILLed
        too). All of them are reaped. The data directory is left exactly as the crash
        left it; :meth:`start` then performs crash recovery.

        Args:
            timeout: seconds to wait for the orphaned backends.

        Returns:
            The pids that belonged to the server when it was killed.

        Raises:
            PgError: when processes of the server survive SIGKILL.
        """
        if self._pid is None:
            return []
        pids = self.processes()
        kill(self._pid)
        self._finish(pids, timeout)
        return pids

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the owned server (``pg_ctl stop -m fast``; SIGKILL if that fails) and reap it.

        Idempotent. Also releases the child-subreaper setting taken by :meth:`start`.

        Raises:
            PgError: when processes of the server survive SIGKILL.
        """
        try:
            if self._pid is not None and process_alive(self._pid):
                pids = self.processes()
                pg_ctl_stop(self.pgdata, timeout)
                if process_alive(self._pid):
                    kill(self._pid)
                self._finish(pids, timeout)
            self._sweep()
        finally:
            self._uri = self._pid = None
            if self._reaper is not None:
                self._reaper.close()
                self._reaper = None

    def _finish(self, pids: list[int], timeout: float) -> None:
        """Wait for ``pids`` to die (SIGKILL stragglers) and reap them."""
        survivors = wait_gone(pids, timeout)
        for pid in survivors:
            kill(pid)
        survivors = wait_gone(survivors, 5.0)
        self._sweep()
        self._uri = self._pid = None
        if survivors:
            raise PgError(f"PostgreSQL processes {survivors} of {self.pgdata} did not exit")

    def _sweep(self) -> None:
        """Reap every postgres process of this server that has died and was re-parented here.

        Also kills any process still running this data directory that a failed start may
        have left behind (:func:`~agentmem.pg.postmaster.kill_leftover_servers`).
        """
        for pid in list(self._seen):
            reap(pid)
            if not process_alive(pid):
                self._seen.discard(pid)
        for kid in children(os.getpid()):
            try:
                comm = Path(f"/proc/{kid}/comm").read_text().strip()
            except OSError:
                continue
            if comm == "postgres" and not process_alive(kid):
                reap(kid)
        kill_leftover_servers(self.pgdata)


__all__ = ["EmbeddedServer"]
