"""Process helpers: liveness, waiting, reaping, killing, child subreaper and CPU priority.

Used by the embedded PostgreSQL server (:mod:`agentmem.pg`), the integrity trials
(:mod:`agentmem.trials`) and every workflow script that runs beside the timing jobs.
A zombie (exited, not yet reaped) counts as dead throughout: it no longer runs or serves,
although ``kill(pid, 0)`` still finds it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

#: Niceness of jobs that run beside the timing jobs (docs/MEASUREMENT.md §1): on Linux a
#: nice-19 task weighs 15 against a nice-0 task's 1024 in the CFS scheduler, so a timing
#: job sharing a core with background jobs still gets ~90% of it.
BACKGROUND_NICENESS = 19
#: Environment variable a workflow job sets to ``1`` (:func:`agentmem.jobs.start_job`): the
#: process stopping an embedded PostgreSQL server then writes the server's CPU time to its
#: stderr, the job's log (:func:`agentmem.pg.postmaster.report_server_cpu`). Unset, as in
#: the command line and the library, nothing is written.
SERVER_CPU_LOG_ENV = "AGENTMEM_LOG_SERVER_CPU"
#: Environment variable naming the directory of the template cluster new embedded
#: PostgreSQL data directories are copied from (:mod:`agentmem.pg.template`); workflow
#: jobs set it (:func:`agentmem.jobs.start_job`). Unset, every new store runs ``initdb``.
PG_TEMPLATE_ENV = "AGENTMEM_PG_TEMPLATE_DIR"
#: The line a workflow job writes to its log as it exits (:func:`report_job_cpu`), followed
#: by the CPU seconds of :func:`job_cpu_s`; the run's timeline reads it
#: (:mod:`agentmem.bench.timeline`).
JOB_CPU_LINE = "agentmem: job CPU s: "

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


class ProcessError(RuntimeError):
    """A child process could not be stopped (the message names its pid)."""


# ------------------------------------------------------------------------------ liveness
def process_alive(pid: int | None) -> bool:
    """Return whether process ``pid`` exists and is neither a zombie nor dead.

    A stopped or killed process stays a zombie until its parent reaps it; it no longer
    runs, so it counts as dead here (``kill(pid, 0)`` and pgserver count it alive).
    ``None`` and ``0`` are never alive.
    """
    if not pid:
        return False
    import psutil  # here: start_job imports this module and needs no psutil

    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def process_gone(pid: int) -> bool:
    """Return whether ``pid`` no longer exists at all (not even as a zombie)."""
    import psutil

    return not psutil.pid_exists(pid)


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate()`` every ``interval`` seconds until true or ``timeout`` seconds pass.

    Returns:
        True when the predicate became true, False on timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def children(pid: int) -> list[int]:
    """Return the direct children of ``pid`` (zombies included; empty when it is gone)."""
    import psutil

    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def descendants(pid: int) -> list[int]:
    """Return all descendants of ``pid`` from one process-table snapshot (empty when gone)."""
    import psutil

    try:
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


# ------------------------------------------------------------------------ reap and kill
def reap(pid: int) -> None:
    """Reap ``pid`` if it is a dead child of this process (no-op otherwise)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    """Wait until every pid is dead, reaping this process's children; return the survivors."""
    pending = set(pids)
    deadline = time.monotonic() + timeout
    while pending:
        for pid in list(pending):
            reap(pid)
            if not process_alive(pid):
                pending.discard(pid)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return sorted(pending)


def kill(pid: int | None) -> None:
    """Send SIGKILL to ``pid`` (no-op for ``None`` or a process that is already gone)."""
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def kill_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGKILL the process group led by ``proc`` and reap ``proc``.

    ``proc`` must have been started with ``start_new_session=True`` so that its pid is
    also its process-group id; every process in that group receives SIGKILL.

    Args:
        proc: the child.
        timeout: seconds to wait for ``proc`` to be reaped.

    Raises:
        ProcessError: if the child survives SIGKILL for ``timeout`` seconds.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProcessError(f"child process {proc.pid} survived SIGKILL for {timeout} s") from None


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


# ----------------------------------------------------------------------- child processes
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


# --------------------------------------------------------------------------- CPU time
def job_cpu_s() -> float:
    """CPU seconds (user + system) of this process and of its children it has reaped.

    ``getrusage`` of the process and of its waited-for descendants. A shared embedded
    PostgreSQL server, daemonised by ``pg_ctl``, is never reaped by the job and is not in
    it (its CPU is logged apart, :func:`agentmem.pg.postmaster.report_server_cpu`); an
    owned one (the crash trials'), reaped by the job as its child subreaper, is.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def report_job_cpu() -> None:
    """Write :func:`job_cpu_s` to stderr (a workflow job's log) after :data:`JOB_CPU_LINE`.

    Registered by :func:`agentmem.jobs.start_job` to run at exit, so that the run's timeline
    has every job's whole CPU time: Snakemake's benchmark files sample it (every 5 s for
    the first 30 samples, as the Snakefile sets, then every 30 s) and lose what a job
    spends after its last sample (docs/BENCHMARKS.md).
    """
    with contextlib.suppress(OSError, ValueError):  # stderr already closed: nothing to say
        print(f"{JOB_CPU_LINE}{job_cpu_s():.3f}", file=sys.stderr, flush=True)


def figures_in_log(text: str, prefix: str) -> list[float]:
    """The numbers that follow ``prefix`` at the start of lines of ``text``, in order.

    A line whose first word after ``prefix`` is not a number is skipped.
    """
    vals = []
    for line in text.splitlines():
        if line.startswith(prefix):
            with contextlib.suppress(ValueError, IndexError):
                vals.append(float(line[len(prefix) :].split()[0]))
    return vals


def job_cpu_in_log(text: str) -> float | None:
    """The last :data:`JOB_CPU_LINE` figure in a job's log text; ``None`` if it has none."""
    vals = figures_in_log(text, JOB_CPU_LINE)
    return vals[-1] if vals else None


# --------------------------------------------------------------------------- CPU priority
def run_in_background(niceness: int = BACKGROUND_NICENESS) -> int:
    """Lower this process's CPU priority to ``niceness`` (never raises it).

    Called first by every workflow script that neither times anything nor encodes
    (scoring, untimed sweeps, plots, LoCoMo runs, crash trials), so that with ``--cores``
    above the machine's core count the jobs holding ``bench_slot`` (timing jobs and the
    encoder) are not slowed by them.
    Children (e.g. an embedded PostgreSQL server started by the job) inherit it.

    Args:
        niceness: target niceness, 0..19.

    Returns:
        The niceness now in effect (unchanged where ``os.nice`` is unavailable).
    """
    if not hasattr(os, "nice"):  # pragma: no cover - Windows
        return 0
    current = os.nice(0)
    if niceness > current:
        current = os.nice(niceness - current)
    return current


#: The thread-count variables Snakemake sets to a job's ``threads`` (``snakemake.shell``):
#: OpenMP, OpenBLAS (also as GotoBLAS), MKL, Accelerate and numexpr read them at load time.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def run_single_threaded() -> None:
    """Give this process and its children one BLAS and OpenMP thread.

    A background job declares ``threads: 0`` (it takes no core from ``--cores``), and
    Snakemake exports that 0 in :data:`THREAD_VARIABLES`. OpenBLAS reads 0 as "every
    core", libgomp rejects it (``Invalid value for environment variable OMP_NUM_THREADS``)
    and takes every core too. Their idle workers spin before they sleep: on 2 busy cores a
    loop of numpy matrix-vector products took 2.3x the CPU time with 0 that it took with 1.
    The variables are set for what the process loads and starts later, and threadpoolctl
    limits the pools of the libraries already loaded.
    """
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)


def share_background_priority(pid: int | None = None) -> bool:
    """Give process ``pid``'s scheduling group this process's niceness, if it is positive.

    Linux's autogroup scheduler (``/proc/sys/kernel/sched_autogroup_enabled``) shares
    the CPU fairly between *sessions* first and applies a process's niceness only inside
    its session. A process that starts its own session, such as a PostgreSQL postmaster
    (``pg_ctl`` calls ``setsid``) or a crash-trial writer, would compete with the whole
    workflow as an equal, however nice it is. Writing the niceness into
    ``/proc/<pid>/autogroup`` lowers that session as a whole. Called by background jobs
    (:func:`run_in_background`) for the servers and children they start.

    Args:
        pid: a process whose session should be lowered; ``None`` for this process.

    Returns:
        True when the group niceness was set; False when this process is not niced, the
        kernel has no autogroups, or permission is missing (never raises).
    """
    if not hasattr(os, "nice"):  # pragma: no cover - Windows
        return False
    niceness = os.nice(0)
    if niceness <= 0:
        return False
    target = Path(f"/proc/{'self' if pid is None else int(pid)}/autogroup")
    try:
        target.write_text(str(niceness))
        if pid is not None:
            os.setpriority(os.PRIO_PROCESS, int(pid), niceness)
    except OSError:
        return False
    return True


__all__ = [
    "BACKGROUND_NICENESS",
    "THREAD_VARIABLES",
    "ProcessError",
    "child_env",
    "child_subreaper",
    "children",
    "descendants",
    "kill",
    "kill_group",
    "process_alive",
    "process_gone",
    "reap",
    "run_in_background",
    "run_single_threaded",
    "share_background_priority",
    "wait_gone",
    "wait_until",
]
