"""The Postgres arms' write path (``remember``) and row read-back (``fetch``).

``remember`` is the normal write path: ``INSERT`` of the memory rows (the ``tsv`` column
is generated, the HNSW and GIN indexes are updated by the insert) and their
``memory_entities`` rows, then ``UPDATE ... superseded_by`` of the memories they correct,
in one transaction that is committed (WAL flushed, as the server's ``fsync`` /
``synchronous_commit`` settings say) when the call returns. Every value, bodies and
vectors included, is a bound parameter.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from agentmem.arms import base
from agentmem.arms.rows import fetch_ids
from agentmem.sql.postgres.schema import MEMORY_COLUMNS, MEMORY_NAMES

#: Text columns of a remembered row that PostgreSQL ``text`` must hold (no NUL character).
_TEXT_COLUMNS = tuple(c for c, t, _ in MEMORY_COLUMNS if t in ("text", "text[]"))


#: Memory rows per ``INSERT`` statement of :func:`write_batch` (at most 15 parameters
#: each, far below PostgreSQL's 65,535 per statement).
_INSERT_CHUNK = 500


@functools.lru_cache(maxsize=16)
def _insert_memories_sql(n: int, with_embedding: bool) -> str:
    """Return the ``INSERT`` of ``n`` memory rows, skipping ids already stored.

    ``INSERT INTO memories (<MEMORY_COLUMNS>[, embedding]) VALUES (%s, ...), ...
    ON CONFLICT (memory_id) DO NOTHING RETURNING memory_id``: the ids it returns are the
    rows written, so a stored id shows as a missing one (no extra lookup). The column
    names are the constants of :data:`MEMORY_COLUMNS`; every value is a placeholder.
    """
    cols = list(MEMORY_NAMES) + (["embedding"] if with_embedding else [])
    row = "(" + ", ".join(["%s"] * len(cols)) + ")"
    return (
        f"INSERT INTO memories ({', '.join(cols)}) VALUES {', '.join([row] * n)} "
        "ON CONFLICT (memory_id) DO NOTHING RETURNING memory_id"
    )


def nul_value(batch: base.Remembered) -> tuple[str, str] | None:
    """Return ``(memory_id, column)`` of the first text value holding NUL, or ``None``.

    PostgreSQL ``text`` cannot store the NUL character (U+0000); the superseded ids
    are checked too (column ``supersedes``).
    """
    for row in batch.memories.select(_TEXT_COLUMNS).iter_rows(named=True):
        for col in _TEXT_COLUMNS:
            value = row[col]
            values = value if isinstance(value, list) else [value]
            if any(v is not None and "\x00" in v for v in values):
                return row["memory_id"], col
    for old, new in batch.supersessions:
        if "\x00" in old:
            return new, "supersedes"
    return None


def write_batch(
    cur: psycopg.Cursor, batch: base.Remembered, *, with_vectors: bool, name: str, where: str
) -> None:
    """Write ``batch`` inside the open transaction of ``cur``'s connection.

    ``INSERT`` of the memory rows in chunks of :data:`_INSERT_CHUNK` (with the
    ``embedding`` column when ``with_vectors``; ``ON CONFLICT DO NOTHING RETURNING``
    tells which ids were stored already), ``INSERT ... SELECT FROM unnest(...)`` of
    their ``memory_entities`` rows (entity ids de-duplicated, as ``build``), and one
    ``UPDATE ... FROM unnest(...)`` setting ``superseded_by`` of every id in a row's
    ``supersedes`` list to that row's id (the last correction of an id wins).

    Args:
        cur: a cursor in an open transaction.
        batch: the validated batch (:func:`~agentmem.arms.base.prepare_memories`).
        with_vectors: the store has an ``embedding`` column.
        name: the arm, for messages.
        where: the store (database and directory), for messages.

    Raises:
        ArmError: when a new id is already stored or a superseded id is not.
        psycopg.Error: from any statement.
    """
    ids = batch.ids
    names = list(MEMORY_NAMES)
    rows: list[Any] = []
    for i, row in enumerate(batch.memories.select(names).iter_rows()):
        rows.extend(row)
        if with_vectors:
            rows.append(batch.vectors[i])
    width = len(names) + int(with_vectors)
    inserted: set[str] = set()
    for lo in range(0, len(ids), _INSERT_CHUNK):
        n = min(_INSERT_CHUNK, len(ids) - lo)
        cur.execute(
            _insert_memories_sql(n, with_vectors),
            rows[lo * width : (lo + n) * width],
        )
        inserted.update(r[0] for r in cur.fetchall())
    if len(inserted) < len(ids):
        first = next(m for m in ids if m not in inserted)
        raise base.ArmError(f"{name}: remember: memory id {first!r} is already stored ({where})")
    pairs = [
        (mid, e)
        for mid, ents in zip(ids, batch.memories["entity_ids"].to_list(), strict=True)
        for e in dict.fromkeys(str(x) for x in ents)
    ]
    if pairs:
        cur.execute(
            "INSERT INTO memory_entities (memory_id, entity_id) "
            "SELECT * FROM unnest(%s::text[], %s::text[])",
            ([m for m, _ in pairs], [e for _, e in pairs]),
        )
    if batch.supersessions:
        last = dict(batch.supersessions)  # old -> its last correction in the batch
        cur.execute(
            "UPDATE memories AS m SET superseded_by = u.new_id "
            "FROM unnest(%s::text[], %s::text[]) AS u(old_id, new_id) "
            "WHERE m.memory_id = u.old_id RETURNING m.memory_id",
            (list(last), list(last.values())),
        )
        done = {r[0] for r in cur.fetchall()}
        for old, new in batch.supersessions:
            if old not in done:
                raise base.ArmError(
                    f"{name}: remember: memory {new!r} supersedes {old!r}, "
                    f"which is not stored ({where})"
                )


def fetch_rows(conn: psycopg.Connection, memory_ids: Sequence[str]) -> pl.DataFrame:
    """Return the stored rows of ``memory_ids``: :data:`MEMORY_SCHEMA` columns and dtypes.

    One ``SELECT ... WHERE memory_id = ANY(%s)``; rows come in the order asked, each id
    once; ids not stored (or holding NUL, which no stored id can) are left out.
    ``entity_ids`` is the stored array; ``form`` is not stored and is null.

    Raises:
        ValueError: when ``memory_ids`` is a single string or holds a non-string.
        psycopg.Error: when the query fails.
    """
    want = [m for m in fetch_ids(memory_ids) if "\x00" not in m]
    names = list(MEMORY_NAMES)
    select = sql.SQL("SELECT {} FROM memories WHERE memory_id = ANY(%s)").format(
        sql.SQL(", ").join(map(sql.Identifier, names))
    )
    found = {r[0]: r for r in conn.execute(select, (want,)).fetchall()} if want else {}
    data: dict[str, list[Any]] = {c: [] for c in base.MEMORY_SCHEMA}
    for mid in want:
        row = found.get(mid)
        if row is None:
            continue
        for col, value in zip(names, row, strict=True):
            data[col].append(value)
        data["form"].append(None)
    return pl.DataFrame(data, schema=base.MEMORY_SCHEMA)
