"""The SQLite arms' rows: tuples written by ``build`` and ``remember``, frames read by ``fetch``.

``build`` and ``remember`` write the same rows: the memory row under an integer ``id``,
its entity rows (entity ids de-duplicated, in order), its FTS5 row and its vector row as
the arm's layout needs (docs/arms/sqlite.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import polars as pl

from agentmem.arms import base
from agentmem.sql.sqlite.schema import (
    BTREE_INDEXES_SQL,
    FTS_SQL,
    INSERT_ENTITY_SQL,
    INSERT_MEMORY_SQL,
    INSERT_VECTOR_SQL,
    MEMORY_COLUMNS,
    TABLES_SQL,
    VECTORS_SQL,
)

#: Ids bound per ``IN (...)`` list in :func:`read_memories`.
_FETCH_CHUNK = 500


def memory_rows(memories: pl.DataFrame, first_id: int) -> list[tuple[Any, ...]]:
    """``(id, *MEMORY_COLUMNS)`` tuples of ``memories``, ids counting up from ``first_id``."""
    rows = memories.select(MEMORY_COLUMNS).iter_rows()
    return [(first_id + i, *r) for i, r in enumerate(rows)]


def entity_rows(
    memory_ids: Sequence[str], entity_lists: Iterable[Sequence[Any] | None]
) -> list[tuple[str, str]]:
    """``(memory_id, entity_id)`` tuples, each memory's entity ids de-duplicated in order."""
    return [
        (mid, str(e))
        for mid, ents in zip(memory_ids, entity_lists, strict=True)
        for e in dict.fromkeys(str(x) for x in (ents or []))
    ]


def vector_rows(matrix: np.ndarray, first_id: int) -> list[tuple[Any, ...]]:
    """``(id, float32 bytes)`` tuples of the rows of ``matrix``, ids from ``first_id``."""
    return [(first_id + i, matrix[i].tobytes()) for i in range(len(matrix))]


@dataclass(frozen=True)
class VectorLayout:
    """How an SQLite arm stores one embedding per memory.

    Attributes:
        create_sql: DDL of the vector table (run after the B-tree indexes).
        insert_sql: ``INSERT`` of one row, its parameters as :attr:`rows` makes them.
        rows: ``(float32 matrix (n, 384), first id) -> parameter tuples``, one per row.
    """

    create_sql: str
    insert_sql: str
    rows: Callable[[np.ndarray, int], list[tuple[Any, ...]]]


#: One float32 BLOB per memory (sqlite-hybrid).
FLOAT32_VECTORS = VectorLayout(VECTORS_SQL, INSERT_VECTOR_SQL, vector_rows)


def bulk_load(
    conn: apsw.Connection,
    rows: list[tuple[Any, ...]],
    ent_rows: list[tuple[str, str]],
    vec_rows: list[tuple[Any, ...]] | None,
    *,
    application_id: int,
    fts: bool,
    vectors: VectorLayout = FLOAT32_VECTORS,
) -> tuple[float, float]:
    """Create a fresh store's tables, load its rows, then build its indexes.

    The tables, ``PRAGMA application_id`` and the memory and entity rows are written in
    one transaction with ``executemany``; the B-tree indexes, the FTS5 index (when
    ``fts``), the vector table of ``vectors`` and its rows (when ``vec_rows`` is not
    ``None``) and ``ANALYZE`` in a second.

    Returns:
        ``(ingest_ms, index_ms)``: wall time of the two transactions in milliseconds.

    Raises:
        apsw.Error: when SQLite fails.
    """
    t0 = time.perf_counter()
    with conn:
        conn.execute(TABLES_SQL)
        conn.execute(f"PRAGMA application_id = {application_id}")
        conn.executemany(INSERT_MEMORY_SQL, rows)
        conn.executemany(INSERT_ENTITY_SQL, ent_rows)
    t1 = time.perf_counter()
    with conn:
        conn.execute(BTREE_INDEXES_SQL)
        if fts:
            conn.execute(FTS_SQL)
        if vec_rows is not None:
            conn.execute(vectors.create_sql)
            conn.executemany(vectors.insert_sql, vec_rows)
        conn.execute("ANALYZE")
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3


def write_remembered(
    conn: apsw.Connection,
    batch: base.Remembered,
    *,
    arm: str,
    path: Path | None,
    fts: bool,
    vectors: VectorLayout | None,
) -> None:
    """Write ``batch`` inside the caller's open transaction (``SqliteArm.remember``).

    Each memory gets the next integer ``id``; its entity rows, its FTS5 row (when
    ``fts``; the external-content index is kept in step with ``INSERT INTO
    memories_fts(rowid, body)``) and its vector row (when ``vectors``) follow; then
    ``superseded_by`` of every id in a row's ``supersedes`` list becomes that row's id,
    in row order.

    Args:
        conn: the connection, inside ``BEGIN IMMEDIATE``.
        batch: the validated batch (:func:`~agentmem.arms.base.prepare_memories`).
        arm: the arm's name, for messages.
        path: the database file, for messages.
        fts: the store keeps an FTS5 index.
        vectors: how the store keeps an embedding per memory, or ``None`` (it keeps none).

    Raises:
        ArmError: when a new id is already stored or a superseded id is not.
    """
    ids = batch.ids
    for mid in ids:
        if conn.execute("SELECT 1 FROM memories WHERE memory_id = ?", (mid,)).fetchall():
            raise base.ArmError(f"{arm}: remember: memory id {mid!r} is already stored ({path})")
    first = 1 + int(conn.execute("SELECT coalesce(max(id), 0) FROM memories").fetchall()[0][0])
    mem = batch.memories
    rowids = range(first, first + len(ids))
    conn.executemany(INSERT_MEMORY_SQL, memory_rows(mem, first))
    ent_rows = entity_rows(ids, mem["entity_ids"].to_list())
    if ent_rows:
        conn.executemany(INSERT_ENTITY_SQL, ent_rows)
    if fts:
        conn.executemany(
            "INSERT INTO memories_fts(rowid, body) VALUES (?, ?)",
            list(zip(rowids, mem["body"].to_list(), strict=True)),
        )
    if vectors is not None:
        conn.executemany(vectors.insert_sql, vectors.rows(batch.vectors, first))
    for old, new in batch.supersessions:
        conn.execute("UPDATE memories SET superseded_by = ? WHERE memory_id = ?", (new, old))
        if conn.changes() != 1:
            raise base.ArmError(
                f"{arm}: remember: memory {new!r} supersedes {old!r}, which is not stored ({path})"
            )


def read_memories(conn: apsw.Connection, memory_ids: Sequence[str]) -> pl.DataFrame:
    """Read the stored rows of ``memory_ids`` back as a :data:`MEMORY_SCHEMA` frame.

    Rows come in the order asked, each id once (``memory_ids`` holds no repeats); ids
    not stored are left out. ``entity_ids`` comes from ``memory_entities`` in insertion
    order; ``form`` is not stored and is null. Ids are bound :data:`_FETCH_CHUNK` at a
    time.

    Raises:
        apsw.Error: when SQLite fails.
    """
    found: dict[str, tuple[Any, ...]] = {}
    ents: dict[str, list[str]] = {}
    for i in range(0, len(memory_ids), _FETCH_CHUNK):
        chunk = memory_ids[i : i + _FETCH_CHUNK]
        marks = ", ".join("?" * len(chunk))
        for r in conn.execute(
            f"SELECT {', '.join(MEMORY_COLUMNS)} FROM memories WHERE memory_id IN ({marks})",
            chunk,
        ):
            found[r[0]] = r
        for mid, ent in conn.execute(
            "SELECT memory_id, entity_id FROM memory_entities "
            f"WHERE memory_id IN ({marks}) ORDER BY rowid",
            chunk,
        ):
            ents.setdefault(mid, []).append(ent)
    data: dict[str, list[Any]] = {c: [] for c in base.MEMORY_SCHEMA}
    for mid in memory_ids:
        row = found.get(mid)
        if row is None:
            continue
        for col, value in zip(MEMORY_COLUMNS, row, strict=True):
            data[col].append(value)
        data["entity_ids"].append(ents.get(mid, []))
        data["form"].append(None)
    return pl.DataFrame(data, schema=base.MEMORY_SCHEMA)
