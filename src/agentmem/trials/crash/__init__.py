"""Crash trials (docs/MEASUREMENT.md §2, docs/STUDY.md §4): SIGKILL amid writes, then reopen.

A writer child (:mod:`.writer`) writes records (:mod:`.records`) and reports the ids it
considers committed; the parent (:mod:`.runner`) SIGKILLs it, or the PostgreSQL
postmaster, and reopens the store (:mod:`.store`) to count the committed records that
are missing and check integrity. The trial, its families and their integrity checks are
described in docs/experiments/crash.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentmem.trials.crash.records import (
    FAMILIES,
    FIELDS,
    PG_FAMILIES,
    PG_TABLE,
    record_body,
    record_tag,
)

if TYPE_CHECKING:
    from agentmem.trials.crash.runner import run_crash_trials
    from agentmem.trials.crash.store import (
        STORE_FILES,
        StoreReadout,
        read_store,
        recall_through_arm,
    )

#: the names the parent's modules hold, imported on first use: the writer child
#: (``python -m agentmem.trials.crash``) imports this package, and needs none of them
_LAZY = {
    "run_crash_trials": "agentmem.trials.crash.runner",
    "STORE_FILES": "agentmem.trials.crash.store",
    "StoreReadout": "agentmem.trials.crash.store",
    "read_store": "agentmem.trials.crash.store",
    "recall_through_arm": "agentmem.trials.crash.store",
}


def __getattr__(name: str) -> Any:
    """``run_crash_trials`` and the store's names, imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "FAMILIES",
    "FIELDS",
    "PG_FAMILIES",
    "PG_TABLE",
    "STORE_FILES",
    "StoreReadout",
    "read_store",
    "recall_through_arm",
    "record_body",
    "record_tag",
    "run_crash_trials",
]
