"""The raw bulk paths an arm's ingest is held against (:class:`~agentmem.arms.base.RawIngest`).

JSON lines in one write, hnswlib in one batch, and for SQLite and PostgreSQL the arm's own
tables read back from its store and written again in one transaction (``executemany``,
``COPY ... (FORMAT BINARY)``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import hnswlib
import numpy as np
import polars as pl
import psycopg
from psycopg import sql

from agentmem.arms.base import Arm, Corpus, Embeddings, RawIngest
from agentmem.bench.errors import BenchError
from agentmem.sql.sqlite.connection import remove_database


def _raw_jsonl(corpus: Corpus, scratch: Path) -> float:
    """Serialise every memory row as compact JSON and write the lines with one write (ms)."""
    rows = corpus.memories.rows(named=True)
    path = scratch / "memories.jsonl"
    t0 = time.perf_counter_ns()
    text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    return (time.perf_counter_ns() - t0) / 1e6


#: hnswlib's own defaults, for a parameter a ``RawIngest.hnsw`` dict leaves out.
HNSW_DEFAULTS = {"M": 16, "ef_construction": 200, "random_seed": 100, "num_threads": 1}


def _raw_hnsw(hnsw: dict[str, int], corpus: Corpus, vectors: Embeddings, scratch: Path) -> float:
    """Metadata Parquet + hnswlib ``init_index`` + one batch ``add_items`` + save (ms).

    Args:
        hnsw: the arm's index parameters (:attr:`RawIngest.hnsw`: ``M``,
            ``ef_construction``, ``random_seed``, ``num_threads``; a missing one takes
            :data:`HNSW_DEFAULTS`).
        corpus: the memories.
        vectors: their embeddings (gathered before the clock starts).
        scratch: directory for ``metadata.parquet`` and ``index.bin``.
    """
    p = {**HNSW_DEFAULTS, **hnsw}
    mem = corpus.memories
    mat = np.ascontiguousarray(vectors.get(mem["memory_id"].to_list()), dtype=np.float32)
    meta = mem.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("label"))
    n, dim = mat.shape
    t0 = time.perf_counter_ns()
    meta.write_parquet(scratch / "metadata.parquet", compression="zstd", statistics=False)
    index = hnswlib.Index(space="cosine", dim=int(dim))
    index.init_index(
        max_elements=max(n, 1),
        ef_construction=int(p["ef_construction"]),
        M=int(p["M"]),
        random_seed=int(p["random_seed"]),
    )
    if n:
        index.add_items(mat, np.arange(n, dtype=np.int64), num_threads=int(p["num_threads"]))
    index.save_index(str(scratch / "index.bin"))
    return (time.perf_counter_ns() - t0) / 1e6


@dataclass
class _TableDump:
    """One table read back from an arm's store: its DDL, column types and rows."""

    name: str
    ddl: str
    columns: list[str]
    copy_types: list[str]
    rows: list[Any]


def _sqlite_dump(path: Path, tables: Sequence[str]) -> list[_TableDump]:
    """Read the stored ``CREATE TABLE`` text and every row of ``tables`` from ``path``.

    Raises:
        BenchError: when the file or a table is missing.
    """
    if not path.is_file():
        raise BenchError(f"no SQLite store at {path}")
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out = []
        for t in tables:
            row = conn.execute(
                "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", (t,)
            ).fetchone()
            if row is None:
                raise BenchError(f"{path} has no table {t!r}")
            ident = '"' + t.replace('"', '""') + '"'
            cols = [c[1] for c in conn.execute(f"PRAGMA table_info({ident})")]
            rows = conn.execute(f"SELECT * FROM {ident}").fetchall()
            out.append(_TableDump(t, str(row[0]), cols, [], rows))
        return out
    finally:
        conn.close()


def _sqlite_write(path: Path, dumps: Sequence[_TableDump]) -> float:
    """Create ``path`` (WAL, ``synchronous=NORMAL``) and write ``dumps`` in one transaction.

    Returns:
        Milliseconds of the transaction: the ``CREATE TABLE`` statements and one
        ``executemany`` ``INSERT`` per table.
    """
    remove_database(path)
    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA journal_mode=WAL").fetchall()
        conn.execute("PRAGMA synchronous=NORMAL")
        stmts = [
            (d.ddl, f'INSERT INTO "{d.name}" VALUES ({", ".join("?" * len(d.columns))})', d.rows)
            for d in dumps
        ]
        t0 = time.perf_counter_ns()
        with conn:
            for ddl, insert, rows in stmts:
                conn.execute(ddl)
                if rows:
                    conn.executemany(insert, rows)
        return (time.perf_counter_ns() - t0) / 1e6
    finally:
        conn.close()


_PG_COLUMNS_SQL = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attgenerated,
       pg_get_expr(d.adbin, d.adrelid),
       CASE WHEN t.typcategory = 'A' THEN e.typname || '[]' ELSE t.typname END
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type e ON e.oid = t.typelem
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""
_PG_CONSTRAINTS_SQL = """
SELECT pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = to_regclass(%s) AND contype IN ('p', 'u', 'c', 'f') ORDER BY conname
"""


def _pg_dump(conn: psycopg.Connection, tables: Sequence[str]) -> list[_TableDump]:
    """Rebuild each table's ``CREATE TABLE`` from the catalog and read its stored rows.

    Generated columns keep their ``GENERATED ALWAYS AS (...) STORED`` expression and are
    left out of the rows (the server computes them during ``COPY``); constraints come
    from ``pg_get_constraintdef``. Indexes are not copied (the arms build them after
    the ingest).

    Raises:
        BenchError: when a table is missing.
    """
    out = []
    for t in tables:
        cols = conn.execute(_PG_COLUMNS_SQL, (t,)).fetchall()
        if not cols:
            raise BenchError(f"database has no table {t!r}")
        defs, names, types = [], [], []
        for name, typ, notnull, generated, expr, copy_type in cols:
            d = sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(typ))
            if generated:
                d += sql.SQL(" GENERATED ALWAYS AS ({}) STORED").format(sql.SQL(expr))
            else:
                names.append(name)
                types.append(copy_type)
                if expr is not None:
                    d += sql.SQL(" DEFAULT {}").format(sql.SQL(expr))
            if notnull:
                d += sql.SQL(" NOT NULL")
            defs.append(d)
        defs += [sql.SQL(r[0]) for r in conn.execute(_PG_CONSTRAINTS_SQL, (t,))]
        ddl = sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(t), sql.SQL(", ").join(defs))
        select = sql.SQL("SELECT {} FROM {}").format(
            sql.SQL(", ").join(map(sql.Identifier, names)), sql.Identifier(t)
        )
        rows = conn.execute(select).fetchall()
        out.append(_TableDump(t, ddl.as_string(conn), names, types, rows))
    return out


def _pg_write(conn: psycopg.Connection, dumps: Sequence[_TableDump]) -> float:
    """Create the tables and ``COPY ... (FORMAT BINARY)`` the rows, in one transaction (ms)."""
    copies = [
        sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
            sql.Identifier(d.name), sql.SQL(", ").join(map(sql.Identifier, d.columns))
        )
        for d in dumps
    ]
    t0 = time.perf_counter_ns()
    with conn.transaction(), conn.cursor() as cur:
        for d, copy in zip(dumps, copies, strict=True):
            cur.execute(d.ddl)
            with cur.copy(copy) as cp:
                cp.set_types(d.copy_types)
                for row in d.rows:
                    cp.write_row(row)
    return (time.perf_counter_ns() - t0) / 1e6


def _raw_tables(spec: RawIngest, arm_name: str, store_dir: Path, scratch: Path) -> float:
    """Read the arm's ingest tables back and time writing them raw (ms, SQLite + PostgreSQL)."""
    total = 0.0
    if spec.sqlite_file and spec.sqlite_tables:
        dumps = _sqlite_dump(store_dir / spec.sqlite_file, spec.sqlite_tables)
        total += _sqlite_write(scratch / f"raw-{spec.sqlite_file}", dumps)
    if spec.pg_tables:
        from agentmem.pg import connect_store, drop_store

        raw_name = f"{arm_name}-raw"
        with connect_store(store_dir, arm_name, create=False) as src:
            dumps = _pg_dump(src.conn, spec.pg_tables)
            with connect_store(store_dir, raw_name, create=True) as dst:
                total += _pg_write(dst.conn, dumps)
        drop_store(store_dir, raw_name)
    return total


def raw_ingest_ms(
    spec: RawIngest,
    arm: Arm,
    corpus: Corpus,
    vectors: Embeddings,
    store_dir: Path,
    scratch: Path,
) -> float:
    """Time the raw bulk path of ``spec`` once (milliseconds); see :class:`RawIngest`.

    Args:
        spec: which raw path.
        arm: the arm, built in ``store_dir`` (the ``tables`` kind reads its store back).
        corpus: the memories.
        vectors: their embeddings.
        store_dir: the arm's store directory (its PostgreSQL server hosts the raw database).
        scratch: an empty directory for the raw files.

    Raises:
        BenchError: on an unknown kind or a missing table.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    if spec.kind == "jsonl":
        return _raw_jsonl(corpus, scratch)
    if spec.kind == "hnsw":
        return _raw_hnsw(spec.hnsw, corpus, vectors, scratch)
    if spec.kind == "tables":
        return _raw_tables(spec, arm.name, store_dir, scratch)
    raise BenchError(f"unknown raw ingest kind {spec.kind!r}")


def describe_raw(spec: RawIngest) -> str:
    """One line naming the raw path of ``spec`` (for the JSON record)."""
    if spec.kind == "jsonl":
        return "json.dumps of every row + one plain file write"
    if spec.kind == "hnsw":
        return "metadata Parquet write + hnswlib init_index + one batch add_items + save_index"
    parts = []
    if spec.sqlite_tables:
        parts.append(
            f"SQLite: same DDL, one transaction, executemany into {', '.join(spec.sqlite_tables)}"
        )
    if spec.pg_tables:
        parts.append(
            "PostgreSQL: same DDL, one transaction, COPY (FORMAT BINARY) into "
            + ", ".join(spec.pg_tables)
        )
    return "; ".join(parts)
