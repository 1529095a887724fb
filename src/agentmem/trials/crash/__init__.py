"""Crash trials (docs/MEASUREMENT.md §2, docs/STUDY.md §4): SIGKILL amid writes, then reopen.

A writer child (:mod:`.writer`) writes records (:mod:`.records`) and reports the ids it
considers committed; the parent (:mod:`.runner`) SIGKILLs it, or the PostgreSQL
postmaster, and reopens the store (:mod:`.store`) to count the committed records that
are missing and check integrity. The trial, its families and their integrity checks are
described in docs/experiments/crash.md.
"""

from agentmem.trials.crash.records import (
    FAMILIES,
    FIELDS,
    PG_FAMILIES,
    PG_TABLE,
    STORE_FILES,
    record_body,
    record_tag,
)
from agentmem.trials.crash.runner import run_crash_trials
from agentmem.trials.crash.store import StoreReadout, read_store, recall_through_arm

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
