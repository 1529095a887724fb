"""What the integrity trials share: their error, the store-directory check, error wrapping."""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from agentmem.procs import ProcessError

_P = ParamSpec("_P")
_R = TypeVar("_R")


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


def trial_errors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Make ``fn`` raise failures of its embedded server or child processes as TrialError.

    A :class:`~agentmem.pg.PgError` or :class:`~agentmem.procs.ProcessError` leaving
    ``fn`` becomes a :class:`TrialError` with the same message (the original is chained).
    """

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except ProcessError as exc:
            raise TrialError(str(exc)) from exc
        except Exception as exc:
            # a PgError exists only once agentmem.pg is imported: not imported here, so a
            # crash trial's writer child (which imports this package) loads no psycopg
            pg_errors = sys.modules.get("agentmem.pg.errors")
            if pg_errors is not None and isinstance(exc, pg_errors.PgError):
                raise TrialError(str(exc)) from exc
            raise

    return wrapper
