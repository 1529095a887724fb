"""The Postgres arms' bulk load: binary ``COPY`` of the memory tables, then the indexes.

``build`` writes rows with ``COPY ... (FORMAT BINARY)`` (psycopg ``copy`` +
``set_types``) inside the transaction that creates the tables, and builds the indexes
afterwards. Rows leave polars before the clock starts: the ingest time is the
database's COPY (the raw bulk path the ingest benchmark compares against), not the
conversion.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import psycopg
from psycopg import sql

from agentmem.sql.postgres.schema import BUILD_MAINTENANCE_WORK_MEM, MEMORY_COLUMNS, MEMORY_NAMES


@dataclass
class CopyRows:
    """The rows of one build, ready for ``COPY``.

    Attributes:
        statement: ``COPY memories (<columns>) FROM STDIN (FORMAT BINARY)``.
        types: the COPY type of each column, in order.
        memories: one list of values per memory (``embedding`` last when present).
        entities: ``(memory_id, entity_id)`` pairs, entity ids de-duplicated per memory.
    """

    statement: sql.Composable
    types: list[str]
    memories: list[list[Any]]
    entities: list[tuple[str, str]]


def copy_rows(memories: pl.DataFrame, vectors: np.ndarray | None) -> CopyRows:
    """Turn the corpus memories (and their float32 ``(n, 384)`` embeddings) into COPY rows.

    Args:
        memories: frame with every column of :data:`MEMORY_COLUMNS`.
        vectors: row ``i`` the embedding of memory ``i``, or ``None`` for an arm without
            an ``embedding`` column.
    """
    names = list(MEMORY_NAMES)
    with_vectors = vectors is not None
    copy_cols = names + (["embedding"] if with_vectors else [])
    copy_types = [t for _, t, _ in MEMORY_COLUMNS] + (["vector"] if with_vectors else [])
    statement = sql.SQL("COPY memories ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.SQL(", ").join(map(sql.Identifier, copy_cols))
    )
    ent_idx = names.index("entity_ids")
    mem_rows: list[list[Any]] = []
    for i, row in enumerate(memories.select(names).iter_rows()):
        vals = list(row)
        vals[ent_idx] = [str(e) for e in (vals[ent_idx] or [])]
        if vectors is not None:
            vals.append(vectors[i])
        mem_rows.append(vals)
    ent_rows = [
        (mid, e)
        for mid, ents in zip(
            memories["memory_id"].to_list(), memories["entity_ids"].to_list(), strict=True
        )
        for e in dict.fromkeys(str(x) for x in (ents or []))
    ]
    return CopyRows(statement, copy_types, mem_rows, ent_rows)


def bulk_load(
    conn: psycopg.Connection,
    tables: list[sql.Composable],
    rows: CopyRows,
    indexes: list[sql.Composable],
) -> tuple[float, float]:
    """Create the tables, COPY the rows, then build the indexes and vacuum.

    The tables and both COPYs run in one transaction; the indexes are built with
    ``maintenance_work_mem`` = :data:`BUILD_MAINTENANCE_WORK_MEM` (reset afterwards),
    followed by ``VACUUM (ANALYZE)`` of both tables (planner statistics, visibility map
    and hint bits, so the first timed query does not pay for them).

    Returns:
        ``(ingest_ms, index_ms)``: milliseconds of the transaction, and of the indexes
        plus VACUUM.

    Raises:
        psycopg.Error: from any statement.
    """
    t0 = time.perf_counter()
    with conn.transaction(), conn.cursor() as cur:
        for stmt in tables:
            cur.execute(stmt)
        with cur.copy(rows.statement) as cp:
            cp.set_types(rows.types)
            for vals in rows.memories:
                cp.write_row(vals)
        with cur.copy(
            "COPY memory_entities (memory_id, entity_id) FROM STDIN (FORMAT BINARY)"
        ) as cp:
            cp.set_types(["text", "text"])
            for pair in rows.entities:
                cp.write_row(pair)
    t1 = time.perf_counter()
    conn.execute(
        "SELECT set_config('maintenance_work_mem', %s, false)", (BUILD_MAINTENANCE_WORK_MEM,)
    )
    for stmt in indexes:
        conn.execute(stmt)
    conn.execute("VACUUM (ANALYZE) memories")
    conn.execute("VACUUM (ANALYZE) memory_entities")
    t2 = time.perf_counter()
    conn.execute("RESET maintenance_work_mem")
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3
