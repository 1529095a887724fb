"""Atomic output helpers: every result file is written to a temp file, then renamed.

An interrupted job therefore never leaves a half-written file that looks finished
(docs/DATA.md). ``os.replace`` is atomic on POSIX within one filesystem. The workflow
scripts' :func:`~agentmem.procs.run_in_background` is re-exported here for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmem.procs import run_in_background

if TYPE_CHECKING:
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


__all__ = [
    "atomic_path",
    "run_in_background",
    "write_csv",
    "write_json",
    "write_parquet",
    "write_text",
]
