"""Atomic output helpers: every result file is written to a temp file, then renamed.

An interrupted job therefore never leaves a half-written file that looks finished
(DESIGN §2). ``os.replace`` is atomic on POSIX within one filesystem.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

_UMASK = os.umask(0o022)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success rename it onto ``path``.

    On an exception the temp file is removed and ``path`` is left untouched.
    Parent directories are created.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates 0600; give the result the permissions a plain open() would
        os.chmod(tmp_path, 0o666 & ~_UMASK)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(path: str | Path, text: str) -> None:
    """Atomically write ``text`` (UTF-8) to ``path``."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON, keys in insertion order (deterministic)."""
    write_text(path, json.dumps(obj, indent=2, default=_json_default) + "\n")


def write_parquet(path: str | Path, df: pl.DataFrame) -> None:
    """Atomically write ``df`` to Parquet (zstd, no statistics that embed timestamps)."""
    with atomic_path(path) as tmp:
        df.write_parquet(tmp, compression="zstd", statistics=False)


def write_csv(path: str | Path, df: pl.DataFrame) -> None:
    """Atomically write ``df`` as CSV with a header row."""
    with atomic_path(path) as tmp:
        df.write_csv(tmp)


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"cannot serialise {type(o).__name__} to JSON")


#: Niceness of jobs that run beside the timing jobs (DESIGN §5): on Linux a nice-19 task
#: weighs 15 against a nice-0 task's 1024 in the CFS scheduler, so a timing job sharing
#: a core with background jobs still gets ~90% of it.
BACKGROUND_NICENESS = 19


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
