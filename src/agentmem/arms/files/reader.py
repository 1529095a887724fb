"""Reading the JSONL store: one polars NDJSON parse of the whole file, nothing cached.

A clean file is parsed by :func:`polars.read_ndjson` alone; otherwise the unreadable lines
are sorted out and counted (:mod:`agentmem.arms.files.recovery`) and the readable ones
parsed (docs/arms/files.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from agentmem.arms import base
from agentmem.arms.files.recovery import split_lines

#: Keys every stored JSON object must carry for scoring and ordering.
REQUIRED_KEYS = ("memory_id", "body", "created_day", "seq")

#: Columns (and types) recall reads from each line; other keys are parsed and skipped.
SCAN_SCHEMA: dict[str, pl.DataType] = {
    "memory_id": pl.String(),
    "body": pl.String(),
    "created_day": pl.Int64(),
    "seq": pl.Int64(),
}

#: Columns a scoped recall reads: :data:`SCAN_SCHEMA` plus ``scope_id`` (a line without
#: the key, or with ``null``, belongs to no scope).
SCOPED_SCAN_SCHEMA: dict[str, pl.DataType] = {**SCAN_SCHEMA, "scope_id": pl.String()}

#: Columns ``FileJsonlArm.fetch`` reads from each line: every memory column and the
#: ``supersedes`` list a correction carries.
FETCH_SCHEMA: dict[str, pl.DataType] = {**base.MEMORY_SCHEMA, base.SUPERSEDES: pl.List(pl.String)}


@dataclass(frozen=True)
class StoreRead:
    """One read of the JSONL store.

    Attributes:
        table: the readable memories, the columns read (:data:`SCAN_SCHEMA` unless
            asked otherwise), in file order.
        size: bytes of the file.
        unreadable_lines: lines skipped (not JSON, not an object, a required key missing,
            ``null`` or of the wrong type); blank lines are not counted.
        unreadable_bytes: bytes of the skipped lines (and of a fragment a memory was
            recovered from), newlines included.
        first_unreadable: 1-based number of the first skipped line (0 when none).
    """

    table: pl.DataFrame
    size: int
    unreadable_lines: int = 0
    unreadable_bytes: int = 0
    first_unreadable: int = 0


def file_key(st: os.stat_result) -> tuple[int, ...]:
    """What identifies one state of the file: device, inode, size, modification time."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_store(path: Path, schema: dict[str, pl.DataType] = SCAN_SCHEMA) -> StoreRead:
    """Read the whole JSONL store from disk and parse it with polars' NDJSON reader.

    This is the recall access path. The file's bytes are read afresh and every line is
    parsed; only the ``schema`` columns are kept (:data:`SCAN_SCHEMA` for recall). A clean
    file is parsed by :func:`polars.read_ndjson` alone; when that fails, or a required
    value is ``null``, the lines are sorted into readable and unreadable ones with
    :mod:`json` (:func:`~agentmem.arms.files.recovery.split_lines`) and the readable ones
    parsed by polars. Nothing is cached.

    Args:
        path: the ``memories.jsonl`` file.
        schema: the columns to parse (must include :data:`SCAN_SCHEMA`'s;
            :data:`SCOPED_SCAN_SCHEMA` for a scoped recall).

    Returns:
        The :class:`StoreRead` (readable memories and the unreadable-line tally).

    Raises:
        ArmError: when the file cannot be read (names the path).
    """
    try:
        # bytes, not the path: polars would expand glob characters ([, *, ?) in a path
        data = path.read_bytes()
    except OSError as exc:
        raise base.ArmError(f"file-jsonl: cannot read store {path}: {exc}") from exc
    try:
        table = pl.read_ndjson(data, schema=schema)
        if not any(table.get_column(c).null_count() for c in REQUIRED_KEYS):
            return StoreRead(table, len(data))
    except pl.exceptions.PolarsError:
        pass
    good, bad_lines, bad_bytes, first = split_lines(data)
    try:
        table = pl.read_ndjson(good, schema=schema) if good else pl.DataFrame(schema=schema)
    except pl.exceptions.PolarsError as exc:  # lines json accepts and polars does not
        raise base.ArmError(f"file-jsonl: cannot parse store {path}: {exc}") from exc
    return StoreRead(table, len(data), bad_lines, bad_bytes, first)
