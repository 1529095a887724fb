"""What a crash trial writes: its families, result columns and record bodies.

See docs/experiments/crash.md for the trial and what "committed" means per family. The
writer child imports this module: it imports no arm (the store files, named after the
file arm's, are in :mod:`.store`).
"""

from __future__ import annotations

import json
from typing import Any

FAMILIES: tuple[str, ...] = (
    "file-append",
    "file-rewrite",
    "sqlite",
    "postgres-writer",
    "postgres-server",
)
"""Crash families, in report order (same as ``agentmem.config.CRASH_FAMILIES``)."""

FIELDS: tuple[str, ...] = (
    "family",
    "trial",
    "kill_after_ms",
    "readable",
    "committed",
    "present",
    "missing_committed",
    "integrity_ok",
    "recall_ok",
    "detail",
)
"""Columns of one result row, in order (``detail`` is a short human-readable note)."""

PG_TABLE = "crash_records"
"""Table the postgres families write (``id bigint PRIMARY KEY, body text NOT NULL``)."""

PG_FAMILIES = ("postgres-writer", "postgres-server")

_FILLER = (
    "the agent noted that the deployment window moved to thursday after the review; "
    "keep the rollback plan, page the on-call owner, and record the decision in the log. "
)


def record_body(record_id: int, width: int) -> str:
    """Deterministic body text of exactly ``width`` characters for ``record_id``.

    The record's tag (:func:`record_tag`) and ``"|"``, followed by repeated filler prose,
    cut to ``width`` (at least 1). Readers verify a body with
    ``body == record_body(id, len(body))``, which detects a body that was garbled or
    belongs to another record.

    Args:
        record_id: the record id (positive int).
        width: length of the body in characters.

    Returns:
        The body (ASCII, no characters that JSON escapes).
    """
    width = max(1, width)
    head = f"{record_tag(record_id)}|"
    reps = width // len(_FILLER) + 2
    return (head + _FILLER * reps)[:width]


def record_tag(record_id: int) -> str:
    """``"r"`` and the id in nine digits, e.g. ``r000000042``: no tag contains another."""
    return f"r{record_id:09d}"


def _body_width(record_id: int, record_chars: int) -> int:
    """Body width that makes the JSON line ``{"id": id, "body": ...}`` ``record_chars`` long."""
    return record_chars - len(json.dumps({"id": record_id, "body": ""}))


def plain_record(record_id: int, record_chars: int) -> dict[str, Any]:
    """A record ``{id, body}`` whose JSON object is ``record_chars`` long."""
    return {"id": record_id, "body": record_body(record_id, _body_width(record_id, record_chars))}


def memory_record(record_id: int, record_chars: int) -> dict[str, Any]:
    """A record as a ``file-jsonl`` memory object whose JSON line is ``record_chars`` long.

    Keys: ``memory_id`` (the tag), ``id``, ``body``, ``created_day`` (0) and ``seq`` (the id).
    """
    row: dict[str, Any] = {"memory_id": record_tag(record_id), "id": record_id, "body": ""}
    row.update(created_day=0, seq=record_id)
    width = record_chars - len(json.dumps(row))
    row["body"] = record_body(record_id, width)
    return row
