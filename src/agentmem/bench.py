"""Benchmarks of the harness itself: is what we time the engines, not us?

``make bench`` (``scripts/bench.py``) runs five measurements and writes
``results/bench/{harness,ingest,remember,embedding,pipeline}.json`` plus ``summary.md``
(one row per measure: value, target, met?):

1. **Harness overhead per arm** — on a generated corpus (default size ``s``, ~2,000
   memories), each arm is built, then for every query ``Arm.query(q, k)`` and the arm's
   bare driver call (``raw_query_call(q, k)``: the same SQL text and parameters, the same
   hnswlib ``knn_query``, the same file re-read, prepared once) are timed interleaved in
   one run, alternating which goes first, ``rounds`` times each after a warm-up. Per
   query the median of each side is taken; the reported figure is the ratio of the
   medians over queries, ``median(arm) / median(bare)``. Target ≤ 1.2×.
2. **Ingest throughput per arm** — memories/s from :class:`~agentmem.arms.base.BuildStats`
   against the raw bulk path the arm declares (:meth:`~agentmem.arms.base.BenchHooks.
   raw_ingest`), measured in the same run on the same rows and table layout: ``COPY ...
   (FORMAT BINARY)`` for PostgreSQL, one transaction with ``executemany`` for SQLite,
   one batch ``add_items`` for hnswlib, one plain write of the JSON lines for the file.
   Ratio = arm throughput / raw throughput. Target ≥ 0.8×.
3. **Remember of one memory per arm** — on the store built from the same corpus,
   ``Arm.remember`` of a one-row frame, ``n`` times (fresh ids, the corpus's cached
   vectors); p50 and p95 ms per call. Targets by family (:data:`REMEMBER_MAX_P50_MS`):
   p50 ≤ 5 ms for ``sqlite``, ≤ 10 ms for ``postgres``; other families are reported
   without a target.
4. **Embedding throughput** — :func:`agentmem.embeddings.embed_texts` with an empty cache
   against a bare ``SentenceTransformer.encode`` of the same texts, chunk by chunk,
   alternating which goes first. Target ≥ 0.9×.
5. **Pipeline** (opt-in, slow) — wall time of a full ``snakemake --cores 16`` run (what
   ``make reproduce`` runs; ``--pipeline-cores``) in a temporary working directory, of
   an immediate rerun (should do nothing), and of rebuilding one figure (its plotting
   module touched: Snakemake 9 then compares checksums and does nothing, so the rebuild
   is also forced); peak RSS of the largest job. Targets: ≤ 600 s, ≤ 5 s, ≤ 20 s. The
   per-job Snakemake ``benchmark:`` files of the full run (wall s, peak RSS, CPU s) are
   collected into ``pipeline_jobs.csv`` and the slowest jobs / rules are profiled in
   ``summary.md``; the process tree is also polled with psutil as a fallback.

Sections 1–2 need the arm's optional bench hooks (:class:`~agentmem.arms.base.BenchHooks`,
declared by every built-in arm); an arm without them (a plug-in, say) is skipped there
with a line saying so, and still measured in section 3.

All timings use :func:`time.perf_counter_ns` with the garbage collector paused. An arm
that cannot be benchmarked gets an ``error`` entry naming why; the run goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import logging
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import hnswlib
import numpy as np
import polars as pl
import psutil
import psycopg
from psycopg import sql
from tqdm import tqdm

from agentmem.arms import ARMS
from agentmem.arms.base import (
    Arm,
    BareCall,
    BenchHooks,
    Corpus,
    Embeddings,
    Query,
    RawIngest,
)
from agentmem.config import Config, ConfigError, SizeConfig, load_config
from agentmem.io import write_csv, write_json, write_text

log = logging.getLogger(__name__)

#: ``Arm.query`` may cost at most this many times the bare driver call (ratio of medians).
HARNESS_MAX_RATIO = 1.2
#: An arm's ingest must reach at least this share of the raw bulk path's memories/s.
INGEST_MIN_RATIO = 0.8
#: The cached embedding path must reach at least this share of bare ``encode``'s texts/s.
EMBEDDING_MIN_RATIO = 0.9
#: Pipeline wall-time limits in seconds (on the 2-core machine).
PIPELINE_MAX_S = {"full": 600.0, "rerun": 5.0, "figure": 20.0}
#: The figure rebuilt in the pipeline benchmark and the module whose mtime is touched.
PIPELINE_FIGURE = "results/figures/crash.svg"
PIPELINE_FIGURE_MODULE = "src/agentmem/report/figures/crash.py"
#: Fallback corpus sizes when the config file has none of the requested name.
DEFAULT_SIZES = {"s": SizeConfig(facts=600, queries_per_class=12)}
RESULT_FILES = ("harness", "ingest", "remember", "embedding", "pipeline")


class BenchError(RuntimeError):
    """A measurement could not be taken (the message says why)."""


# ------------------------------------------------------------------ statistics, targets
def median(values: Sequence[float]) -> float:
    """Median of ``values``; ``nan`` when empty."""
    return float(statistics.median(values)) if len(values) else math.nan


def safe_ratio(num: float, den: float) -> float:
    """``num / den``, or ``nan`` when either is not finite or ``den <= 0``."""
    if not (math.isfinite(num) and math.isfinite(den)) or den <= 0:
        return math.nan
    return num / den


def ratio_of_medians(num: Sequence[float], den: Sequence[float]) -> float:
    """``median(num) / median(den)`` (``nan`` when undefined), e.g. arm vs bare latency."""
    return safe_ratio(median(num), median(den))


def target_met(value: float | None, op: str, threshold: float) -> bool | None:
    """Whether ``value op threshold`` holds (``op`` is ``"<="`` or ``">="``).

    Returns:
        ``None`` when ``value`` is missing or not finite (nothing was measured).

    Raises:
        ValueError: on another ``op``.
    """
    if op not in ("<=", ">="):
        raise ValueError(f"target op must be '<=' or '>=', got {op!r}")
    if value is None or not math.isfinite(value):
        return None
    return value <= threshold if op == "<=" else value >= threshold


def harness_stats(arm_ns: Sequence[Sequence[int]], bare_ns: Sequence[Sequence[int]]) -> dict:
    """Summarise interleaved timings of ``Arm.query`` and the bare driver call.

    Args:
        arm_ns: per query, the ``Arm.query`` times in nanoseconds (one per round).
        bare_ns: per query, the bare-call times in nanoseconds, same shape.

    Returns:
        ``arm_median_ms`` / ``bare_median_ms`` (median over queries of each query's
        median), ``ratio`` (their ratio: the figure held against the target),
        ``ratio_total`` (sum of per-query medians, arm over bare: the time-weighted
        view), ``per_query_ratio_median`` and ``overhead_median_us`` (median over queries
        of arm minus bare, microseconds).

    Raises:
        ValueError: when the two sides have different numbers of queries.
    """
    if len(arm_ns) != len(bare_ns):
        raise ValueError(f"{len(arm_ns)} arm timings but {len(bare_ns)} bare timings")
    arm_q = [median(t) / 1e6 for t in arm_ns]
    bare_q = [median(t) / 1e6 for t in bare_ns]
    return {
        "arm_median_ms": round(median(arm_q), 6),
        "bare_median_ms": round(median(bare_q), 6),
        "ratio": _round(ratio_of_medians(arm_q, bare_q)),
        "ratio_total": _round(safe_ratio(sum(arm_q), sum(bare_q))),
        "per_query_ratio_median": _round(
            median([safe_ratio(a, b) for a, b in zip(arm_q, bare_q, strict=True)])
        ),
        "overhead_median_us": round(
            median([(a - b) * 1e3 for a, b in zip(arm_q, bare_q, strict=True)]), 3
        ),
    }


def throughput_stats(n: int, arm_ms: Sequence[float], raw_ms: Sequence[float]) -> dict:
    """Throughput of ``n`` items written by the arm and by the raw path (medians of runs).

    Returns:
        ``arm_per_s`` and ``raw_per_s`` (``n`` / median seconds) and ``ratio`` =
        arm / raw throughput = median raw time / median arm time.
    """
    arm_s, raw_s = median(arm_ms) / 1e3, median(raw_ms) / 1e3
    return {
        "arm_median_ms": round(median(arm_ms), 3),
        "raw_median_ms": round(median(raw_ms), 3),
        "arm_per_s": _round(safe_ratio(n, arm_s), 1),
        "raw_per_s": _round(safe_ratio(n, raw_s), 1),
        "ratio": _round(safe_ratio(raw_s, arm_s)),
    }


def _round(x: float, nd: int = 4) -> float | None:
    """Round for JSON; ``None`` for nan/inf (JSON has no nan)."""
    return round(x, nd) if x is not None and math.isfinite(x) else None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Collect once, then keep the cyclic garbage collector off inside the block."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def interleaved_times(
    fa: Callable[[], Any],
    fb: Callable[[], Any],
    rounds: int,
    warmup: int = 1,
    b_first: bool = False,
) -> tuple[list[int], list[int]]:
    """Time ``fa`` and ``fb`` alternately: ``warmup`` untimed calls each, then ``rounds`` pairs.

    The pair order alternates every round (``ab, ba, ab, ...``, or starting with ``ba``
    when ``b_first``), so a drift in machine speed hits both sides alike.

    Returns:
        ``(times of fa, times of fb)`` in nanoseconds (:func:`time.perf_counter_ns`).
    """
    for _ in range(warmup):
        fa()
        fb()
    ta: list[int] = []
    tb: list[int] = []
    clock = time.perf_counter_ns
    for r in range(rounds):
        a_first = (r % 2 == 0) != b_first
        for f, sink in ((fa, ta), (fb, tb)) if a_first else ((fb, tb), (fa, ta)):
            t0 = clock()
            f()
            sink.append(clock() - t0)
    return ta, tb


# ---------------------------------------------------------------------- 1. harness
def no_hooks_reason(arm: Arm) -> str | None:
    """Why ``arm`` cannot take part in the harness and ingest measures, or ``None``.

    Those measures need the optional :class:`~agentmem.arms.base.BenchHooks`
    (``bare_call``, ``raw_query_call``, ``raw_ids``, ``raw_ingest``) that every built-in
    arm declares; an arm from another package may leave them out.

    Returns:
        ``None`` when the arm has every hook, else one line naming the missing ones.
    """
    if isinstance(arm, BenchHooks):
        return None
    missing = [h for h in ("bare_call", "raw_query_call", "raw_ids", "raw_ingest")
               if not hasattr(arm, h)]  # fmt: skip
    return (
        f"{arm.name}: skipped, declares no bench hooks (missing {', '.join(missing)}; "
        "see agentmem.arms.base.BenchHooks)"
    )


def harness_overhead(
    arm: Arm,
    queries: Sequence[Query],
    k: int = 10,
    rounds: int = 5,
    warmup: int = 1,
    progress: bool = True,
) -> dict:
    """Time ``arm.query(q, k)`` against its bare driver call for every query, interleaved.

    The bare call is ``arm.raw_query_call(q, k)`` (built once per query, outside the
    timing). Queries alternate which side goes first.

    Args:
        arm: a built (open) arm.
        queries: the queries.
        k: result size.
        rounds: timed calls per side and query.
        warmup: untimed calls per side and query first.
        progress: show a tqdm bar.

    Returns:
        :func:`harness_stats` plus ``queries`` (timed), ``rounds``, ``skipped`` (queries
        whose call raised, with the error) and the target.

    Raises:
        BenchError: when the arm declares no bench hooks (:func:`no_hooks_reason`) or no
            query could be timed.
    """
    reason = no_hooks_reason(arm)
    if reason is not None:
        raise BenchError(reason)
    raw = arm.raw_query_call  # type: ignore[attr-defined]
    arm_ns: list[list[int]] = []
    bare_ns: list[list[int]] = []
    skipped: list[dict[str, str]] = []
    bar = tqdm(queries, desc=f"{arm.name}: harness", unit="q", disable=not progress, leave=False)
    with gc_paused():
        for i, q in enumerate(bar):
            try:
                bare = raw(q, k)
                ta, tb = interleaved_times(
                    functools.partial(arm.query, q, k), bare, rounds, warmup, b_first=bool(i % 2)
                )
            except Exception as exc:  # report, never crash the run
                skipped.append({"query_id": q.query_id, "error": f"{type(exc).__name__}: {exc}"})
                continue
            arm_ns.append(ta)
            bare_ns.append(tb)
    if not arm_ns:
        first = skipped[0]["error"] if skipped else "no queries"
        raise BenchError(f"{arm.name}: no query could be timed ({first})")
    out = {"queries": len(arm_ns), "rounds": rounds, "k": k, **harness_stats(arm_ns, bare_ns)}
    bare: BareCall = type(arm).bare_call  # type: ignore[attr-defined]
    out["bare_call"] = bare.does
    out["beyond_bare"] = bare.beyond
    out["target"] = f"<= {HARNESS_MAX_RATIO}"
    out["met"] = target_met(out["ratio"], "<=", HARNESS_MAX_RATIO)
    out["skipped"] = skipped
    return out


# ----------------------------------------------------------------------- 2. ingest
def _wipe(path: Path) -> None:
    """Remove ``path`` (a directory tree) if it exists, then create it empty."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)


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
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
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


def ingest_benchmark(
    arm_name: str,
    params: dict[str, Any] | None,
    corpus: Corpus,
    vectors: Embeddings,
    store_dir: Path,
    scratch: Path,
    rounds: int = 5,
    progress: bool = True,
) -> tuple[dict, Arm]:
    """Build ``arm_name`` ``rounds`` times, each followed by one raw bulk write of its rows.

    ``store_dir`` is wiped once; each round builds a fresh arm instance in it (an arm's
    ``build`` replaces its store: files are recreated, the PostgreSQL database dropped
    and created again) and then times the arm's raw path (its
    :meth:`~agentmem.arms.base.BenchHooks.raw_ingest`) on the same rows. For arms with
    PostgreSQL tables one extra handle keeps the embedded server up across rounds, so no
    round pays for a server restart. Both sides run with the garbage collector paused.
    The last build is left open and returned, for :func:`harness_overhead`.

    Returns:
        ``(record, open arm)``; the record has :func:`throughput_stats`, the per-round
        times, the basis and the target (``ratio`` is ``None`` when the raw path failed).

    Raises:
        BenchError: when the arm declares no bench hooks (:func:`no_hooks_reason`).
        agentmem.arms.base.ArmError: when a build fails (the arm is closed first).
    """
    from agentmem.pg import PgError, connect_store, drop_store
    from agentmem.runner import make_arm

    arm: Arm | None = make_arm(arm_name, params)
    reason = no_hooks_reason(arm)
    if reason is not None:
        arm.close()
        raise BenchError(reason)
    spec: RawIngest = arm.raw_ingest()  # type: ignore[attr-defined]
    arm_ms: list[float] = []
    raw_ms: list[float] = []
    build_ms: list[dict[str, float]] = []
    raw_error: str | None = None
    keeper = None
    keep_name = f"{arm_name}-keep"
    _wipe(store_dir)
    try:
        bar = tqdm(range(rounds), desc=f"{arm_name}: ingest", disable=not progress, leave=False)
        for r in bar:
            if arm is None:
                arm = make_arm(arm_name, params)
            try:
                with gc_paused():
                    stats = arm.build(corpus, vectors, store_dir)
            except BaseException:
                arm.close()
                raise
            if keeper is None and spec.pg_tables and rounds > 1:
                with contextlib.suppress(PgError):
                    keeper = connect_store(store_dir, keep_name, create=True)
            build_ms.append(
                {"ingest_ms": round(stats.ingest_ms, 3), "index_ms": round(stats.index_ms, 3)}
            )
            both = spec.basis == "ingest+index"
            arm_ms.append(stats.ingest_ms + (stats.index_ms if both else 0.0))
            if raw_error is None:
                try:
                    with gc_paused():
                        raw_ms.append(
                            raw_ingest_ms(spec, arm, corpus, vectors, store_dir, scratch / f"r{r}")
                        )
                except Exception as exc:  # report, never crash the run
                    raw_error = f"{type(exc).__name__}: {exc}"
            shutil.rmtree(scratch / f"r{r}", ignore_errors=True)
            if r < rounds - 1:
                arm.close()
                arm = None
    finally:
        if keeper is not None:
            keeper.close()
            with contextlib.suppress(PgError):
                drop_store(store_dir, keep_name)
    assert arm is not None
    n = corpus.memories.height
    rec: dict[str, Any] = {"memories": n, "rounds": rounds}
    rec["basis"] = spec.basis
    rec["raw_path"] = _describe_raw(spec)
    rec["beyond_raw"] = spec.beyond
    rec.update(throughput_stats(n, arm_ms, raw_ms if raw_error is None else []))
    if raw_error is not None:
        rec["ratio"] = None
        rec["raw_error"] = raw_error
    rec["target"] = f">= {INGEST_MIN_RATIO}"
    rec["met"] = target_met(rec["ratio"], ">=", INGEST_MIN_RATIO)
    rec["arm_ms"] = [round(x, 3) for x in arm_ms]
    rec["raw_ms"] = [round(x, 3) for x in raw_ms]
    rec["builds"] = build_ms
    return rec, arm


def _describe_raw(spec: RawIngest) -> str:
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


# --------------------------------------------------------------------- remember
#: ``remember`` of one memory: p50 limit in milliseconds per arm family (on this machine);
#: arms of other families are reported without a target.
REMEMBER_MAX_P50_MS: dict[str, float] = {"sqlite": 5.0, "postgres": 10.0}


#: Corpus columns a remembered copy keeps (ids, order, supersession and tokens are new).
REMEMBER_COLUMNS = (
    "session_id",
    "turn_no",
    "kind",
    "body",
    "fact_id",
    "created_day",
    "source",
    "confidence",
    "entity_ids",
    "form",
)


def remember_rows(
    corpus: Corpus, vectors: Embeddings, n: int, prefix: str = "bench-remember"
) -> tuple[pl.DataFrame, Embeddings]:
    """``n`` new memories for single-row remembers: corpus rows under fresh ids.

    Row ``i`` copies corpus memory ``i mod N`` (in ``seq`` order; ``N`` = corpus size):
    body, session, kind, fact, day, source, confidence, entities and form, with
    ``memory_id = f"{prefix}-{i:06d}"``, no ``seq`` (``remember`` gives one after every
    stored memory), no ``superseded_by`` and no ``tokens`` (counted by ``remember``).
    Its vector is that corpus memory's cached vector.

    Args:
        corpus: the bench corpus (at least one memory).
        vectors: its embeddings.
        n: rows wanted (>= 0).
        prefix: id prefix (must not clash with corpus ids).

    Returns:
        ``(frame, embeddings of the new ids)``.

    Raises:
        BenchError: on an empty corpus or ``n < 0``.
    """
    mem = corpus.memories.sort("seq")
    if mem.height == 0 or n < 0:
        raise BenchError(f"need a non-empty corpus and n >= 0 (corpus {mem.height}, n {n})")
    src = mem[[i % mem.height for i in range(n)]]
    ids = [f"{prefix}-{i:06d}" for i in range(n)]
    keep = [c for c in REMEMBER_COLUMNS if c in src.columns]
    frame = src.select(keep).with_columns(memory_id=pl.Series(ids, dtype=pl.String))
    mat = vectors.get(src["memory_id"].to_list()) if n else np.zeros((0, vectors.dim), np.float32)
    return frame.select("memory_id", *keep), Embeddings(ids, np.ascontiguousarray(mat))


def remember_benchmark(
    arm: Arm,
    corpus: Corpus,
    vectors: Embeddings,
    n: int = 200,
    warmup: int = 3,
    progress: bool = True,
) -> dict:
    """Time ``arm.remember`` of one memory, ``n`` times, on an open store.

    ``warmup`` untimed single-row remembers first, then ``n`` timed ones, each a one-row
    frame of :func:`remember_rows` (fresh ids, the corpus's cached vectors), with the
    garbage collector paused; the frames are cut before the clock starts. Afterwards
    ``arm.fetch`` of the timed ids checks that every one was stored.

    Args:
        arm: an open arm whose store holds ``corpus``.
        corpus: the memories it was built from.
        vectors: their embeddings.
        n: timed remembers (>= 1).
        warmup: untimed remembers first.
        progress: show a tqdm bar.

    Returns:
        ``family``, ``store_memories`` (before the first remember), ``remembers`` (n),
        ``warmup``, ``p50_ms``, ``p95_ms``, ``mean_ms``, ``max_ms`` (milliseconds per
        call), ``stored`` (timed ids that ``fetch`` returns), ``target`` (``"<= X ms"``
        for a family of :data:`REMEMBER_MAX_P50_MS`, else ``None``) and ``met``
        (``False`` whenever a timed memory was not stored; ``None`` without a target).

    Raises:
        BenchError: when ``n < 1``.
        agentmem.arms.base.ArmError: when a remember or the fetch fails.
    """
    if n < 1:
        raise BenchError(f"remember benchmark needs n >= 1, got {n}")
    rows, vecs = remember_rows(corpus, vectors, warmup + n)
    frames = [rows.slice(i, 1) for i in range(rows.height)]
    for f in frames[:warmup]:
        arm.remember(f, vecs)
    times: list[int] = []
    clock = time.perf_counter_ns
    bar = tqdm(frames[warmup:], desc=f"{arm.name}: remember", disable=not progress, leave=False)
    with gc_paused():
        for f in bar:
            t0 = clock()
            arm.remember(f, vecs)
            times.append(clock() - t0)
    timed_ids = rows["memory_id"].to_list()[warmup:]
    stored = arm.fetch(timed_ids).height
    ms = np.asarray(times, dtype=np.float64) / 1e6
    family = str(type(arm).family)
    limit = REMEMBER_MAX_P50_MS.get(family)
    p50 = float(np.percentile(ms, 50))
    met = None if limit is None else target_met(p50, "<=", limit)
    return {
        "family": family,
        "store_memories": corpus.memories.height,
        "remembers": n,
        "warmup": warmup,
        "p50_ms": round(p50, 4),
        "p95_ms": round(float(np.percentile(ms, 95)), 4),
        "mean_ms": round(float(ms.mean()), 4),
        "max_ms": round(float(ms.max()), 4),
        "stored": stored,
        "target": None if limit is None else f"<= {limit:g} ms",
        "met": False if stored < n else met,
    }


# -------------------------------------------------------------------- 3. embedding
def embedding_benchmark(
    texts: Sequence[str],
    work_dir: Path,
    rounds: int = 1,
    chunk: int = 250,
    batch_size: int = 64,
    progress: bool = True,
) -> dict:
    """Time :func:`~agentmem.embeddings.embed_texts` (empty cache) against bare ``encode``.

    The model is loaded and warmed up first (outside the timing). The texts are cut into
    chunks of ``chunk``; for each chunk (and each of ``rounds`` passes) the bare
    ``SentenceTransformer.encode(chunk, batch_size, normalize_embeddings=True)`` and the
    cache path (``embed_texts`` into a new, empty cache directory) run back to back, the
    order alternating from chunk to chunk, so a change of machine speed (other load on
    the two cores) hits both sides alike.

    Args:
        texts: the texts (duplicates are removed first, so both sides encode all of them).
        work_dir: directory for the caches and outputs (created).
        rounds: passes over all chunks.
        chunk: texts per timed call.
        batch_size: encoder batch size (the config's ``embedding.batch_size``).
        progress: show a tqdm bar.

    Returns:
        ``texts``, per-call seconds of each side, ``bare_per_s`` / ``cache_per_s`` (all
        texts over the summed seconds), ``ratio`` = median over chunks of the paired
        throughput ratio (cache / bare, i.e. bare seconds / cache seconds),
        ``ratio_total`` (summed seconds, bare / cache) and the target.

    Raises:
        BenchError: when the cache path did not encode every text of a chunk.
    """
    from agentmem.embeddings import embed_texts, load_model

    uniq = list(dict.fromkeys(texts))
    work_dir.mkdir(parents=True, exist_ok=True)
    model = load_model()
    model.encode(uniq[:batch_size], batch_size=batch_size, normalize_embeddings=True)
    chunks = [uniq[i : i + chunk] for i in range(0, len(uniq), max(chunk, 1))]
    bare_s: list[float] = []
    cache_s: list[float] = []
    jobs = [(r, c) for r in range(rounds) for c in range(len(chunks))]
    for j, (r, c) in enumerate(tqdm(jobs, desc="embedding", disable=not progress, leave=False)):
        part = chunks[c]
        cache_dir = work_dir / f"cache-{r}-{c}"
        shutil.rmtree(cache_dir, ignore_errors=True)

        def bare(part: list[str] = part) -> None:
            model.encode(
                part,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )

        def cached(part: list[str] = part, cache_dir: Path = cache_dir) -> None:
            ids = [f"t{i}" for i in range(len(part))]
            out = work_dir / "out.parquet"
            stats = embed_texts(ids, part, out, cache_dir, batch_size, progress=False)
            if stats["encoded"] != len(part):
                raise BenchError(f"cache path encoded {stats['encoded']} of {len(part)} texts")

        order = ((bare, bare_s), (cached, cache_s))
        for f, sink in order if j % 2 == 0 else order[::-1]:
            with gc_paused():
                t0 = time.perf_counter_ns()
                f()
                sink.append((time.perf_counter_ns() - t0) / 1e9)
        shutil.rmtree(cache_dir, ignore_errors=True)
    n = len(uniq) * rounds
    ratio = median([safe_ratio(b, c) for b, c in zip(bare_s, cache_s, strict=True)])
    return {
        "texts": len(uniq),
        "rounds": rounds,
        "chunk": chunk,
        "batch_size": batch_size,
        "torch_threads": _torch_threads(),
        "bare_s": [round(x, 3) for x in bare_s],
        "cache_s": [round(x, 3) for x in cache_s],
        "bare_per_s": _round(safe_ratio(n, sum(bare_s)), 1),
        "cache_per_s": _round(safe_ratio(n, sum(cache_s)), 1),
        "ratio": _round(ratio),
        "ratio_total": _round(safe_ratio(sum(bare_s), sum(cache_s))),
        "target": f">= {EMBEDDING_MIN_RATIO}",
        "met": target_met(ratio, ">=", EMBEDDING_MIN_RATIO),
    }


def _torch_threads() -> int | None:
    """Intra-op threads torch uses (``None`` when torch is not importable)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - install problem
        return None
    return int(torch.get_num_threads())


# --------------------------------------------------------------------- 4. pipeline
def run_monitored(cmd: Sequence[str], log_path: Path, poll_s: float = 0.5) -> dict:
    """Run ``cmd``, polling its process tree's memory every ``poll_s`` seconds.

    Returns:
        ``wall_s``, ``returncode``, ``peak_job_rss_mb`` (largest RSS of any single
        descendant process: the largest job), ``peak_job_cmd`` (its command line,
        shortened), ``peak_root_rss_mb`` (the command itself) and ``nothing_to_do``
        (Snakemake said "Nothing to be done").
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    peak_job, peak_cmd, peak_root = 0, "", 0
    with log_path.open("w") as logf:
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen(list(cmd), stdout=logf, stderr=subprocess.STDOUT)
        root = psutil.Process(proc.pid)
        while True:
            try:
                peak_root = max(peak_root, root.memory_info().rss)
                for child in root.children(recursive=True):
                    try:
                        rss = child.memory_info().rss
                        if rss > peak_job:
                            peak_job, peak_cmd = rss, " ".join(child.cmdline())[:300]
                    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                        continue
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                pass
            try:
                proc.wait(timeout=poll_s)
                break
            except subprocess.TimeoutExpired:
                continue
        wall = (time.perf_counter_ns() - t0) / 1e9
    text = log_path.read_text(errors="replace")
    return {
        "wall_s": round(wall, 3),
        "returncode": proc.returncode,
        "nothing_to_do": "Nothing to be done" in text,
        "peak_job_rss_mb": round(peak_job / 2**20, 1),
        "peak_job_cmd": peak_cmd,
        "peak_root_rss_mb": round(peak_root / 2**20, 1),
        "log": str(log_path),
    }


def _snakemake_bin() -> str:
    """The ``snakemake`` beside this interpreter, else the one on ``PATH``.

    Raises:
        BenchError: when there is none.
    """
    here = Path(sys.executable).with_name("snakemake")
    if here.is_file():
        return str(here)
    found = shutil.which("snakemake")
    if found is None:
        raise BenchError("snakemake not found beside the interpreter nor on PATH")
    return found


#: Columns of a Snakemake ``benchmark:`` TSV that :func:`read_job_benchmarks` needs.
JOB_TSV_COLUMNS = ("s", "max_rss", "cpu_time")
#: Values Snakemake writes when psutil could not measure (``NA``) or had no value (``-``).
_MISSING = frozenset({"", "-", "NA", "na", "nan", "NaN", "None"})
#: Column types of ``pipeline_jobs.csv`` (one row per job of the ``full`` phase).
JOB_SCHEMA = {
    "job": pl.String,
    "rule": pl.String,
    "wall_s": pl.Float64,
    "max_rss_mb": pl.Float64,
    "cpu_s": pl.Float64,
}


def _tsv_float(text: str) -> float | None:
    """A TSV cell as a float; ``None`` for ``NA``, ``-``, empty or non-finite values."""
    text = text.strip()
    if text in _MISSING:
        return None
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _tsv_column(rows: Sequence[Sequence[str]], i: int) -> list[float]:
    """The measured values of column ``i`` over ``rows`` (missing cells dropped)."""
    vals = [_tsv_float(r[i]) if i < len(r) else None for r in rows]
    return [v for v in vals if v is not None]


def read_job_benchmarks(bench_dir: Path) -> list[dict[str, Any]]:
    """Read every Snakemake ``benchmark:`` file under ``bench_dir`` into one record per job.

    The workflow writes ``results/benchmarks/<rule>/<wildcards...>.tsv`` (or
    ``results/benchmarks/<rule>.tsv`` for a rule without wildcards): a tab-separated
    header ``s  h:m:s  max_rss  max_vms  max_uss  max_pss  io_in  io_out  mean_load
    cpu_time`` and one data row. Snakemake samples the job's whole process tree with
    psutil (every 0.5 s at first, then every 30 s), so a very short job may have ``NA``
    (or ``-``) instead of a memory or CPU figure: those become ``None``. A file with
    several data rows (``repeat()``) gives the mean wall and CPU time and the largest RSS.

    Args:
        bench_dir: the ``results/benchmarks`` directory; missing or empty gives ``[]``.

    Returns:
        Records sorted by ``job``, each with ``job`` (the path below ``bench_dir``
        without ``.tsv``, e.g. ``run_arm/m/file-jsonl``), ``rule`` (the first path
        component, or the file stem at top level), ``wall_s`` (column ``s``: wall-clock
        seconds), ``max_rss_mb`` (column ``max_rss``: peak resident set size in MiB,
        bytes / 2**20 summed over the job's processes) and ``cpu_s`` (column
        ``cpu_time``: user + system CPU seconds of those processes); any of the last
        three may be ``None``.

    Raises:
        BenchError: naming the file when its header lacks ``s``, ``max_rss`` or
            ``cpu_time``, or it has no data row.
    """
    bench_dir = Path(bench_dir)
    if not bench_dir.is_dir():
        return []
    jobs: list[dict[str, Any]] = []
    for path in sorted(bench_dir.rglob("*.tsv")):
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        header = lines[0].split("\t") if lines else []
        missing = [c for c in JOB_TSV_COLUMNS if c not in header]
        if missing:
            raise BenchError(
                f"{path}: not a Snakemake benchmark file (header lacks {', '.join(missing)}; "
                f"got {lines[0][:80]!r})"
                if lines
                else f"{path}: empty benchmark file (no header)"
            )
        if len(lines) < 2:
            raise BenchError(f"{path}: benchmark file has a header but no data row")
        rows = [ln.split("\t") for ln in lines[1:]]
        wall, rss, cpu = (_tsv_column(rows, header.index(c)) for c in JOB_TSV_COLUMNS)
        rel = path.relative_to(bench_dir).with_suffix("")
        jobs.append(
            {
                "job": rel.as_posix(),
                "rule": rel.parts[0],
                "wall_s": round(statistics.fmean(wall), 3) if wall else None,
                "max_rss_mb": max(rss) if rss else None,
                "cpu_s": round(statistics.fmean(cpu), 3) if cpu else None,
            }
        )
    return jobs


def summarise_jobs(jobs: Sequence[dict[str, Any]], top: int = 15) -> dict[str, Any]:
    """Aggregate :func:`read_job_benchmarks` records for the pipeline record.

    Missing values (``None``) count as 0 in sums and are skipped by maxima; jobs
    without a wall time sort last.

    Args:
        jobs: job records (``job``, ``rule``, ``wall_s``, ``max_rss_mb``, ``cpu_s``).
        top: how many of the slowest jobs to keep.

    Returns:
        ``jobs_total`` (count), ``jobs_wall_s_sum`` (seconds, summed over jobs: the
        serial cost, not the wall time of the run), ``slowest_jobs`` (the ``top``
        records by ``wall_s``, descending), ``by_rule`` (per rule ``rule``, ``jobs``,
        ``wall_s_sum``, ``wall_s_max``, ``max_rss_mb_max``; sorted by ``wall_s_sum``
        descending, then rule name) and ``largest_job`` (``job``, ``rule``,
        ``max_rss_mb`` of the job with the largest peak RSS in MiB; ``None`` when no job
        has one).
    """

    def wall(j: dict[str, Any]) -> float:
        return j["wall_s"] if j["wall_s"] is not None else -math.inf

    slowest = sorted(jobs, key=lambda j: (-wall(j), j["job"]))[:top]
    groups: dict[str, list[dict[str, Any]]] = {}
    for j in jobs:
        groups.setdefault(j["rule"], []).append(j)
    by_rule = []
    for rule, js in groups.items():
        walls = [j["wall_s"] for j in js if j["wall_s"] is not None]
        rss = [j["max_rss_mb"] for j in js if j["max_rss_mb"] is not None]
        by_rule.append(
            {
                "rule": rule,
                "jobs": len(js),
                "wall_s_sum": round(sum(walls), 3),
                "wall_s_max": max(walls) if walls else None,
                "max_rss_mb_max": max(rss) if rss else None,
            }
        )
    by_rule.sort(key=lambda r: (-r["wall_s_sum"], r["rule"]))
    with_rss = [j for j in jobs if j["max_rss_mb"] is not None]
    big = max(with_rss, key=lambda j: j["max_rss_mb"], default=None)
    return {
        "jobs_total": len(jobs),
        "jobs_wall_s_sum": round(sum(j["wall_s"] or 0.0 for j in jobs), 3),
        "slowest_jobs": [dict(j) for j in slowest],
        "by_rule": by_rule,
        "largest_job": None
        if big is None
        else {"job": big["job"], "rule": big["rule"], "max_rss_mb": big["max_rss_mb"]},
    }


def write_job_csv(path: Path, jobs: Sequence[dict[str, Any]]) -> None:
    """Atomically write job records as CSV (columns of :data:`JOB_SCHEMA`, empty cell = NA)."""
    write_csv(path, pl.DataFrame(list(jobs), schema=JOB_SCHEMA, orient="row"))


def _link_locomo(repo: Path, config_file: Path, tmp: Path, tmp_cfg: Path) -> dict[str, Any]:
    """Make the config's LoCoMo file reachable from the temporary working directory.

    ``external.locomo.path`` is read with :func:`~agentmem.config.load_config`; a relative
    path is taken relative to ``repo`` (where ``make reproduce`` runs). When that file
    exists: a relative path inside the tree gets the same relative path under ``tmp`` as
    a symlink to the resolved file (the data is never copied); a relative path leading
    out of the tree (``../...``) cannot be mirrored under ``tmp``, so the temporary copy
    of the config (``tmp_cfg``) gets the resolved absolute path instead; an absolute
    path needs nothing.

    Returns:
        ``locomo`` (whether the LoCoMo targets can run), ``locomo_path`` (the resolved
        file or ``None``) and ``locomo_link`` (the symlink made under ``tmp`` or
        ``None``).
    """
    raw = load_config(config_file).external.locomo.path
    p = Path(raw)
    src = p if p.is_absolute() else repo / p
    out: dict[str, Any] = {"locomo": src.is_file(), "locomo_path": None, "locomo_link": None}
    if not out["locomo"]:
        return out
    target = src.resolve()
    out["locomo_path"] = str(target)
    if p.is_absolute():
        return out
    link = Path(os.path.normpath(tmp / p))
    if link.is_relative_to(tmp) and link != tmp:
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
        out["locomo_link"] = str(link)
    else:
        import yaml

        data = yaml.safe_load(tmp_cfg.read_text()) or {}
        data.setdefault("external", {}).setdefault("locomo", {})["path"] = str(target)
        write_text(tmp_cfg, yaml.safe_dump(data, sort_keys=False))
        out["locomo_config_rewritten"] = str(tmp_cfg)
    return out


def pipeline_benchmark(
    repo: Path,
    config_file: Path,
    out_dir: Path,
    cores: int = 16,
    keep: bool = False,
) -> dict:
    """Time a full workflow run, a rerun and one figure rebuild in a temporary directory.

    ``config/`` and ``profiles/`` are copied into a fresh temporary working directory;
    every run is ``snakemake -s <repo>/Snakefile --directory <tmp> --cores <cores>
    --configfile <config>``. Phases: ``full`` (from an empty ``results/``), ``rerun``
    (immediately after: should do nothing), ``touch`` (the mtime of
    :data:`PIPELINE_FIGURE_MODULE` set to now, then :data:`PIPELINE_FIGURE` asked for; the
    module's original times are restored afterwards, even on failure) and ``figure``
    (:data:`PIPELINE_FIGURE` rebuilt with ``--force``). Snakemake 9 reruns a job for a
    newer input only when the input's checksum changed too, so a bare ``touch`` rebuilds
    nothing; ``figure`` is what an edit of the plotting code costs: the DAG plus that
    one job.

    The config's LoCoMo file, when it exists, is linked into the working directory
    (:func:`_link_locomo`), so the LoCoMo targets run as in ``make reproduce``. Right
    after ``full`` (before the forced rebuild overwrites a figure's file), the jobs'
    Snakemake benchmark files ``<tmp>/results/benchmarks/**/*.tsv`` are read
    (:func:`read_job_benchmarks`), summarised (:func:`summarise_jobs`) and written to
    ``out_dir/pipeline_jobs.csv``.

    Args:
        repo: the repository (holds ``Snakefile``, ``config/``, ``profiles/``).
        config_file: the configuration to run.
        out_dir: where the per-phase logs and ``pipeline_jobs.csv`` go.
        cores: ``--cores`` (default 16, as ``make reproduce``).
        keep: keep the temporary working directory (its path is in the record).

    Returns:
        ``config``, ``cores``, ``workdir``, the LoCoMo fields of :func:`_link_locomo`,
        ``phases`` (one :func:`run_monitored` record per phase, with its target and
        whether it was met), ``peak_job_rss_mb`` (psutil, MiB), the fields of
        :func:`summarise_jobs` plus ``jobs_csv`` (or ``jobs_error`` when a benchmark file
        could not be read) and ``error`` when a phase failed.

    Raises:
        BenchError: when the config file does not exist.
    """
    repo = repo.resolve()
    config_file = config_file.resolve()
    if not config_file.is_file():
        raise BenchError(f"config file {config_file} does not exist")
    tmp = Path(tempfile.mkdtemp(prefix="agentmem-bench-pipeline-"))
    shutil.copytree(repo / "config", tmp / "config")
    if (repo / "profiles").is_dir():
        shutil.copytree(repo / "profiles", tmp / "profiles")
    try:
        cfg = tmp / "config" / config_file.relative_to(repo / "config")
    except ValueError:
        cfg = tmp / "config" / f"bench-{config_file.name}"
        shutil.copy2(config_file, cfg)
    base = [_snakemake_bin(), "-s", str(repo / "Snakefile"), "--directory", str(tmp)]
    base += ["--cores", str(cores), "--configfile", str(cfg)]
    module = repo / PIPELINE_FIGURE_MODULE
    rec: dict[str, Any] = {"config": str(config_file), "cores": cores, "workdir": str(tmp)}
    phases: dict[str, dict] = {}
    try:
        rec.update(_link_locomo(repo, config_file, tmp, cfg))
        log.info("pipeline: LoCoMo %s", rec["locomo_path"] or "not found: targets skipped")
        for phase in ("full", "rerun"):
            log.info("pipeline: %s run (--cores %d) ...", phase, cores)
            phases[phase] = run_monitored(base, out_dir / f"pipeline_{phase}.log")
            if phase == "full":
                rec.update(_collect_jobs(tmp / "results" / "benchmarks", out_dir))
            if phases[phase]["returncode"] != 0:
                raise BenchError(f"snakemake {phase} run failed: see {phases[phase]['log']}")
        # the target goes before the options: --configfile takes several values
        target = [base[0], PIPELINE_FIGURE, *base[1:]]
        st = module.stat()
        try:
            os.utime(module)
            log.info("pipeline: touched %s, asking for %s ...", module, PIPELINE_FIGURE)
            phases["touch"] = run_monitored(target, out_dir / "pipeline_touch.log")
        finally:
            os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
        log.info("pipeline: rebuilding %s (--force) ...", PIPELINE_FIGURE)
        phases["figure"] = run_monitored([*target, "--force"], out_dir / "pipeline_figure.log")
    except BenchError as exc:
        rec["error"] = str(exc)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for phase, limit in PIPELINE_MAX_S.items():
        if phase in phases:
            p = phases[phase]
            ok = p["returncode"] == 0
            p["target"] = f"<= {limit:g} s"
            p["met"] = target_met(p["wall_s"], "<=", limit) if ok else False
    if "rerun" in phases:  # a rerun must do nothing
        phases["rerun"]["met"] = bool(phases["rerun"]["met"] and phases["rerun"]["nothing_to_do"])
    if "figure" in phases:  # the forced rebuild must have run the plotting job
        phases["figure"]["met"] = bool(
            phases["figure"]["met"] and not phases["figure"]["nothing_to_do"]
        )
    rec["phases"] = phases
    rec["peak_job_rss_mb"] = max((p["peak_job_rss_mb"] for p in phases.values()), default=None)
    return rec


def _collect_jobs(bench_dir: Path, out_dir: Path) -> dict[str, Any]:
    """Read, summarise and write (``out_dir/pipeline_jobs.csv``) the jobs' benchmark files.

    Returns:
        :func:`summarise_jobs` plus ``jobs_csv``; ``{"jobs_error": ...}`` when a file
        cannot be read (the pipeline record still gets its timings).
    """
    try:
        jobs = read_job_benchmarks(bench_dir)
    except (BenchError, OSError) as exc:
        log.error("pipeline: %s", exc)
        return {"jobs_error": f"{type(exc).__name__}: {exc}"}
    csv = out_dir / "pipeline_jobs.csv"
    write_job_csv(csv, jobs)
    log.info("pipeline: %d job benchmark files -> %s", len(jobs), csv)
    return {**summarise_jobs(jobs), "jobs_csv": str(csv)}


# ---------------------------------------------------------------------- summary
def summary_rows(results: dict[str, dict | None]) -> list[dict[str, Any]]:
    """Flatten the four result records into summary rows.

    Args:
        results: ``{"harness": ..., "ingest": ..., "embedding": ..., "pipeline": ...}``;
            a missing or ``None`` entry contributes no rows.

    Returns:
        Rows with ``measure``, ``value`` (text), ``target`` (text), ``met`` (``True``,
        ``False`` or ``None`` for "not measured") and ``note``.
    """
    rows: list[dict[str, Any]] = []
    harness = results.get("harness") or {}
    for name, r in (harness.get("arms") or {}).items():
        if "error" in r or "not_run" in r:
            note = r.get("error") or r["not_run"]
            rows.append(
                _row(f"harness overhead: {name}", "—", f"≤ {HARNESS_MAX_RATIO}×", None, note)
            )
            continue
        note = (
            f"median {r['arm_median_ms']:.3f} ms vs bare {r['bare_median_ms']:.3f} ms; "
            f"+{r['overhead_median_us']:.1f} µs/query; {r['queries']} queries × {r['rounds']}"
        )
        if r["met"] is False and r.get("beyond_bare"):
            note += f"; beyond the bare call: {r['beyond_bare']}"
        rows.append(
            _row(
                f"harness overhead: {name}",
                _x(r["ratio"]),
                f"≤ {HARNESS_MAX_RATIO}×",
                r["met"],
                note,
            )
        )
    ingest = results.get("ingest") or {}
    for name, r in (ingest.get("arms") or {}).items():
        if "error" in r or "not_run" in r:
            note = r.get("error") or r["not_run"]
            rows.append(_row(f"ingest: {name}", "—", f"≥ {INGEST_MIN_RATIO}×", None, note))
            continue
        if r.get("ratio") is None:
            note = r.get("raw_error", "no raw path")
        else:
            note = (
                f"{r['arm_per_s']:,.0f} vs raw {r['raw_per_s']:,.0f} memories/s "
                f"({r['basis']}); {r['memories']} memories × {r['rounds']}"
            )
            if r["met"] is False and r.get("beyond_raw"):
                note += f"; beyond the raw path: {r['beyond_raw']}"
        rows.append(
            _row(f"ingest: {name}", _x(r.get("ratio")), f"≥ {INGEST_MIN_RATIO}×", r["met"], note)
        )
    rows += _remember_rows(results.get("remember") or {})
    emb = results.get("embedding")
    if emb:
        if "error" in emb:
            rows.append(
                _row(
                    "embedding: cache path vs encode",
                    "—",
                    f"≥ {EMBEDDING_MIN_RATIO}×",
                    None,
                    emb["error"],
                )
            )
        else:
            note = (
                "median of the paired per-chunk ratios; over all chunks "
                f"{emb['cache_per_s']:,.0f} vs bare {emb['bare_per_s']:,.0f} texts/s "
                f"({_x(emb.get('ratio_total'))}); {emb['texts']} texts in chunks of "
                f"{emb.get('chunk', '?')}, alternating, {emb['rounds']} pass(es)"
            )
            rows.append(
                _row(
                    "embedding: cache path vs encode",
                    _x(emb["ratio"]),
                    f"≥ {EMBEDDING_MIN_RATIO}×",
                    emb["met"],
                    note,
                )
            )
    pipe = results.get("pipeline")
    if pipe:
        phases = pipe.get("phases", {})
        labels = {
            "full": "pipeline: full run",
            "rerun": "pipeline: rerun (nothing changed)",
            "touch": "pipeline: figure asked for after touching its code's mtime",
            "figure": "pipeline: one figure rebuilt (--force)",
        }
        for phase, label in labels.items():
            p = phases.get(phase)
            limit = PIPELINE_MAX_S.get(phase)
            target = "—" if limit is None else f"≤ {limit:g} s"
            if p is None:
                rows.append(_row(label, "—", target, None, pipe.get("error", "not run")))
                continue
            note = f"exit {p['returncode']}; config {Path(pipe['config']).name}"
            if phase in ("rerun", "touch"):
                note += "; nothing to do" if p["nothing_to_do"] else "; jobs ran"
            if phase == "touch":
                note += " (Snakemake 9 also compares input checksums)"
            rows.append(_row(label, f"{p['wall_s']:.1f} s", target, p.get("met"), note))
        largest = pipe.get("largest_job")
        if largest and largest.get("max_rss_mb") is not None:
            rows.append(
                _row(
                    "pipeline: peak RSS of the largest job",
                    f"{largest['max_rss_mb']:,.0f} MiB",
                    "—",
                    None,
                    f"{largest['job']} (Snakemake benchmark max_rss, full run)",
                )
            )
        elif pipe.get("peak_job_rss_mb") is not None and phases:
            big = max(phases.values(), key=lambda p: p["peak_job_rss_mb"])
            rows.append(
                _row(
                    "pipeline: peak RSS of the largest job",
                    f"{pipe['peak_job_rss_mb']:,.0f} MiB",
                    "—",
                    None,
                    big["peak_job_cmd"][:120],
                )
            )
    return rows


def _remember_rows(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """Summary rows of the remember record: p50 per arm against its family's target."""
    rows = []
    for name, r in (rec.get("arms") or {}).items():
        label = f"remember one memory: {name}"
        if "error" in r:
            rows.append(_row(label, "—", "—", None, r["error"]))
            continue
        limit = REMEMBER_MAX_P50_MS.get(r["family"])
        target = "—" if limit is None else f"p50 ≤ {limit:g} ms"
        note = (
            f"p95 {r['p95_ms']:.3f} ms, mean {r['mean_ms']:.3f} ms; {r['remembers']} calls "
            f"on a store of {r['store_memories']} memories (family {r['family']}"
            f"{'' if limit is not None else ': no target'})"
        )
        if r["stored"] < r["remembers"]:
            note += f"; only {r['stored']} of {r['remembers']} memories stored"
        rows.append(_row(label, f"{r['p50_ms']:.3f} ms", target, r["met"], note))
    return rows


def _num(x: float | None, fmt: str = ",.1f") -> str:
    """``x`` formatted, or ``—`` when missing."""
    return "—" if x is None else format(x, fmt)


def pipeline_job_tables(pipe: dict[str, Any] | None, top: int = 10) -> list[str]:
    """Markdown sections profiling the jobs of the pipeline's full run.

    Args:
        pipe: the pipeline record (:func:`pipeline_benchmark`); ``None``, or one without
            ``slowest_jobs`` / ``by_rule``, gives no lines.
        top: rows per table.

    Returns:
        Lines of two tables: ``## Slowest jobs`` (job, wall s, peak RSS MiB, CPU s) and
        ``## Wall time by rule`` (rule, jobs, sum s, max s), each introduced by a
        sentence with the job count and summed wall time.
    """
    if not pipe:
        return []
    lines: list[str] = []
    slowest = pipe.get("slowest_jobs") or []
    total = pipe.get("jobs_total", len(slowest))
    serial = pipe.get("jobs_wall_s_sum")
    intro = (
        f"{total} jobs in the full run; summed job wall time {_num(serial)} s "
        "(Snakemake `benchmark:` files; peak RSS in MiB over the job's processes)."
    )
    if slowest:
        lines += ["## Slowest jobs", "", intro, ""]
        lines += ["| job | wall s | peak RSS MB | CPU s |", "|---|---:|---:|---:|"]
        for j in slowest[:top]:
            lines.append(
                f"| {j['job']} | {_num(j['wall_s'])} | {_num(j['max_rss_mb'], ',.0f')} "
                f"| {_num(j['cpu_s'])} |"
            )
        lines.append("")
    by_rule = pipe.get("by_rule") or []
    if by_rule:
        lines += ["## Wall time by rule", ""]
        if not slowest:
            lines += [intro, ""]
        lines += ["| rule | jobs | sum s | max s |", "|---|---:|---:|---:|"]
        for r in by_rule[:top]:
            lines.append(
                f"| {r['rule']} | {r['jobs']} | {_num(r['wall_s_sum'])} | {_num(r['wall_s_max'])} |"
            )
        lines.append("")
    return lines


def _row(measure: str, value: str, target: str, met: bool | None, note: str) -> dict[str, Any]:
    return {"measure": measure, "value": value, "target": target, "met": met, "note": note}


def _x(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.3f}×"


def render_summary(
    rows: Sequence[dict[str, Any]], header: str = "", sections: Sequence[str] = ()
) -> str:
    """Render summary rows as a Markdown table ``| measure | value | target | met? | note |``.

    ``met`` renders as ``yes``, ``**no**`` or ``n/a`` (not measured or no target).

    Args:
        rows: :func:`summary_rows`.
        header: a paragraph above the table.
        sections: further Markdown lines placed below the table and its count line
            (e.g. :func:`pipeline_job_tables`).
    """
    lines = ["# agentmem benchmark summary", ""]
    if header:
        lines += [header, ""]
    lines += ["| measure | value | target | met? | note |", "|---|---|---|---|---|"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "n/a"}[r["met"]]
        note = str(r["note"]).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['measure']} | {r['value']} | {r['target']} | {met} | {note} |")
    missed = sum(1 for r in rows if r["met"] is False)
    lines += ["", f"{len(rows)} measures; {missed} target(s) missed."]
    if sections:
        lines += ["", *sections]
    return "\n".join(lines).rstrip("\n") + "\n"


# ------------------------------------------------------------------------- driver
def _environment() -> dict[str, Any]:
    """Machine facts recorded with every result file."""
    return {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def _load_cfg(config_file: Path) -> Config:
    """The validated config, or the built-in defaults when the file is missing."""
    try:
        return load_config(config_file)
    except ConfigError as exc:
        if not config_file.exists():
            log.warning("%s; using built-in defaults", exc)
            return Config()
        raise


def prepare_corpus(
    size: str, cfg: Config, out_dir: Path, progress: bool = True
) -> tuple[Path, Path]:
    """Generate corpus ``size`` in ``out_dir/corpus/<size>``; embed it (cache ``out_dir/cache``).

    Returns:
        ``(corpus_dir, embeddings_path)``.

    Raises:
        BenchError: on a size that neither the config nor :data:`DEFAULT_SIZES` defines.
    """
    from agentmem.corpus import write_corpus
    from agentmem.embeddings import embed_corpus

    sizes = {**DEFAULT_SIZES, **cfg.sizes}
    if size not in sizes:
        raise BenchError(f"unknown size {size!r}; known: {sorted(sizes)}")
    corpus_dir = out_dir / "corpus" / size
    emb = out_dir / "embeddings" / f"{size}.parquet"
    write_corpus(corpus_dir, sizes[size], cfg.corpus)
    embed_corpus(
        corpus_dir, emb, out_dir / "cache", batch_size=cfg.embedding.batch_size, progress=progress
    )
    return corpus_dir, emb


def bench_arms(
    arm_names: Sequence[str],
    arm_params: dict[str, dict[str, Any]],
    corpus: Corpus,
    vectors: Embeddings,
    queries: Sequence[Query],
    work_dir: Path,
    k: int = 10,
    rounds: int = 5,
    ingest_rounds: int = 5,
    remember_n: int = 200,
    progress: bool = True,
) -> tuple[dict[str, dict], dict[str, dict], dict[str, dict]]:
    """Run the ingest, harness-overhead and remember measurements for each arm in turn.

    Per arm with the bench hooks: :func:`ingest_benchmark` (which leaves the last build
    open), then :func:`harness_overhead` on that build, then :func:`remember_benchmark`
    on the same store; an arm without them (:func:`no_hooks_reason`, e.g. a plug-in) gets
    ``{"not_run": reason}`` in the first two and is built once for the third. Then the
    arm is closed and its store removed. A failure is recorded as ``{"error": ...}`` for
    that arm and the next arm runs.

    Args:
        arm_names: the arms, in order.
        arm_params: constructor parameters by arm name (config ``arm_params``).
        corpus: the bench corpus.
        vectors: its embeddings (memories and queries).
        queries: the harness queries.
        work_dir: scratch directory for the stores and raw copies (removed per arm).
        k: result size.
        rounds: harness rounds per query and side.
        ingest_rounds: builds per arm.
        remember_n: timed remembers per arm; 0 skips the remember measure.
        progress: show progress bars.

    Returns:
        ``(harness records by arm, ingest records by arm, remember records by arm)``.
    """
    from agentmem.runner import make_arm

    harness: dict[str, dict] = {}
    ingest: dict[str, dict] = {}
    remember: dict[str, dict] = {}
    for name in arm_names:
        store = work_dir / "stores" / name
        scratch = work_dir / "raw" / name
        arm: Arm | None = None
        try:
            arm = make_arm(name, arm_params.get(name))
            reason = no_hooks_reason(arm)
            if reason is None:
                arm.close()
                arm = None
                log.info("%s: ingest (%d builds) ...", name, ingest_rounds)
                ingest[name], arm = ingest_benchmark(
                    name,
                    arm_params.get(name),
                    corpus,
                    vectors,
                    store,
                    scratch,
                    ingest_rounds,
                    progress,
                )
            else:
                log.info("%s", reason)
                ingest[name] = harness[name] = {"not_run": reason}
                if remember_n:
                    _wipe(store)
                    arm.build(corpus, vectors, store)
        except Exception as exc:  # report, never crash the run
            msg = f"cannot build: {type(exc).__name__}: {exc}"
            ingest[name] = harness[name] = remember[name] = {"error": msg}
            log.error("%s: %s", name, msg)
            if arm is not None:
                arm.close()
                arm = None
        if arm is not None:
            try:
                if name not in harness:
                    log.info(
                        "%s: harness overhead (%d queries x %d rounds) ...",
                        name,
                        len(queries),
                        rounds,
                    )
                    try:
                        harness[name] = harness_overhead(arm, queries, k, rounds, progress=progress)
                    except Exception as exc:  # report, never crash the run
                        harness[name] = {"error": f"{type(exc).__name__}: {exc}"}
                        log.error("%s: %s", name, harness[name]["error"])
                if remember_n:
                    log.info("%s: remember (%d single-memory calls) ...", name, remember_n)
                    try:
                        remember[name] = remember_benchmark(
                            arm, corpus, vectors, remember_n, progress=progress
                        )
                    except Exception as exc:  # report, never crash the run
                        remember[name] = {"error": f"{type(exc).__name__}: {exc}"}
                        log.error("%s: %s", name, remember[name]["error"])
            finally:
                arm.close()
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return harness, ingest, remember


def _read_result(path: Path) -> dict | None:
    """A result JSON written earlier, or ``None``."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_bench(
    size: str = "s",
    out_dir: Path = Path("results/bench"),
    config_file: Path = Path("config/config.yaml"),
    arms: Sequence[str] | None = None,
    rounds: int = 5,
    ingest_rounds: int = 5,
    remember_n: int = 200,
    embedding: bool = True,
    embed_rounds: int = 1,
    embed_texts_n: int = 2000,
    pipeline: bool = False,
    pipeline_cores: int = 16,
    repo: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run the benchmarks; write one JSON per section (:data:`RESULT_FILES`) and ``summary.md``.

    The summary also shows results of sections not run this time if their JSON file is
    already in ``out_dir`` (each carries ``measured_at``), so ``--pipeline`` can be run
    on its own later.

    Args:
        size: corpus size name (from the config's ``sizes``; default ``s``).
        out_dir: output directory (corpus, embedding cache and scratch stores go under it).
        config_file: the configuration (sizes, corpus options, arm parameters, ``run.k``).
        arms: arm names (default: every registered arm); an empty list skips sections 1-3.
        rounds: timed calls per side and query (harness).
        ingest_rounds: builds per arm (ingest).
        remember_n: timed single-memory remembers per arm (section 3); 0 skips it.
        embedding: run section 3.
        embed_rounds: passes over the texts in section 3.
        embed_texts_n: number of texts embedded in section 3.
        pipeline: run section 4 (slow).
        pipeline_cores: ``snakemake --cores`` in section 4 (default 16, as ``make reproduce``).
        repo: the repository root (default: the current directory).
        progress: show progress bars.

    Returns:
        ``{"harness", "ingest", "remember", "embedding", "pipeline", "rows"}``.

    Raises:
        BenchError: on an unknown arm or size.
    """
    from agentmem.corpus.io import load_corpus, load_queries
    from agentmem.embeddings import load_embeddings

    repo = (repo or Path.cwd()).resolve()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = _load_cfg(Path(config_file))
    arm_names = list(ARMS) if arms is None else list(arms)
    unknown = [a for a in arm_names if a not in ARMS]
    if unknown:
        raise BenchError(f"unknown arms {unknown}; known: {sorted(ARMS)}")
    results: dict[str, Any] = {}
    work = out_dir / "work"
    if arm_names or embedding:
        corpus_dir, emb_path = prepare_corpus(size, cfg, out_dir, progress)
        corpus = load_corpus(corpus_dir)
        vectors = load_embeddings(emb_path)
    if arm_names:
        queries = load_queries(corpus_dir, vectors)
        env = _environment()
        harness, ingest, remember = bench_arms(
            arm_names,
            dict(cfg.arm_params),
            corpus,
            vectors,
            queries,
            work,
            k=cfg.run.k,
            rounds=rounds,
            ingest_rounds=ingest_rounds,
            remember_n=remember_n,
            progress=progress,
        )
        common = {"size": size, "memories": corpus.memories.height, **env}
        results["harness"] = {**common, "queries": len(queries), "arms": harness}
        results["ingest"] = {**common, "arms": ingest}
        write_json(out_dir / "harness.json", results["harness"])
        write_json(out_dir / "ingest.json", results["ingest"])
        if remember_n:
            results["remember"] = {**common, "remembers": remember_n, "arms": remember}
            write_json(out_dir / "remember.json", results["remember"])
    if embedding:
        pool = corpus.memories["body"].to_list() + [
            q.text for q in load_queries(corpus_dir, vectors)
        ]
        texts = list(dict.fromkeys(pool))[:embed_texts_n]
        log.info("embedding: %d texts, %d round(s) ...", len(texts), embed_rounds)
        env = _environment()
        try:
            rec = embedding_benchmark(
                texts,
                work / "embedding",
                rounds=embed_rounds,
                batch_size=cfg.embedding.batch_size,
                progress=progress,
            )
        except Exception as exc:  # report, never crash the run
            rec = {"error": f"{type(exc).__name__}: {exc}"}
        results["embedding"] = {"size": size, **env, **rec}
        write_json(out_dir / "embedding.json", results["embedding"])
    if pipeline:
        env = _environment()
        try:
            rec = pipeline_benchmark(repo, Path(config_file), out_dir, cores=pipeline_cores)
        except Exception as exc:  # report, never crash the run
            rec = {"error": f"{type(exc).__name__}: {exc}", "phases": {}}
        results["pipeline"] = {**env, **rec}
        write_json(out_dir / "pipeline.json", results["pipeline"])
    shutil.rmtree(work, ignore_errors=True)
    for name in RESULT_FILES:
        if name not in results:
            results[name] = _read_result(out_dir / f"{name}.json")
    rows = summary_rows(results)
    stamps = [f"{n}: {results[n].get('measured_at', '?')}" for n in RESULT_FILES if results.get(n)]
    loads = [
        f"{n} {results[n]['load_avg_1m']}"
        for n in RESULT_FILES
        if results.get(n) and "load_avg_1m" in results[n]
    ]
    header = (
        f"Measured on {platform.node() or 'this machine'} ({os.cpu_count()} CPUs; "
        f"1-minute load average at the start: {', '.join(loads) or 'n/a'}). "
        f"Result files in `{out_dir}` ({'; '.join(stamps)})."
    )
    tables = pipeline_job_tables(results.get("pipeline"))
    write_text(out_dir / "summary.md", render_summary(rows, header, tables))
    results["rows"] = rows
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python scripts/bench.py [--size s] [--out results/bench] [--pipeline]``.

    ``--pipeline-cores N`` sets ``snakemake --cores`` for ``--pipeline`` (default 16).

    Returns:
        0 (targets missed are reported in the summary, not by the exit status); 2 on a
        usage error.
    """
    p = argparse.ArgumentParser(
        prog="bench.py",
        description=(
            "Benchmark the harness itself: Arm.query vs the bare driver call, ingest vs the "
            "raw bulk path, remember of one memory, the embedding rule vs bare encode, and "
            "(--pipeline) the whole "
            "workflow. Writes results/bench/*.json and summary.md."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--size", default="s", help="corpus size from the config")
    p.add_argument("--out", type=Path, default=Path("results/bench"), help="output directory")
    p.add_argument(
        "--config-file",
        type=Path,
        default=Path("config/config.yaml"),
        help="config for sizes, arm parameters and --pipeline",
    )
    p.add_argument(
        "--arms",
        default=None,
        help="comma-separated arms (None: all; '' skips harness and ingest)",
    )
    p.add_argument("--rounds", type=int, default=5, help="harness rounds per query and side")
    p.add_argument("--ingest-rounds", type=int, default=5, help="builds per arm")
    p.add_argument(
        "--remember",
        type=int,
        default=200,
        metavar="N",
        help="timed single-memory remembers per arm (0 skips the remember measure)",
    )
    p.add_argument("--embed-rounds", type=int, default=1, help="passes of the embedding test")
    p.add_argument("--embed-texts", type=int, default=2000, help="texts in the embedding test")
    p.add_argument("--skip-embedding", action="store_true", help="skip the embedding test")
    p.add_argument("--pipeline", action="store_true", help="also time the whole workflow (slow)")
    p.add_argument(
        "--pipeline-cores",
        type=int,
        default=16,
        metavar="N",
        help="snakemake --cores for --pipeline (16 is what `make reproduce` uses)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    for flag in ("rounds", "ingest_rounds", "embed_rounds", "embed_texts", "pipeline_cores"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}")
    if args.remember < 0:
        p.error(f"--remember must be >= 0, got {args.remember}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    log.setLevel(logging.INFO)  # our progress lines; pgserver and the model stay quiet
    arms = None if args.arms is None else [a for a in args.arms.split(",") if a.strip()]
    try:
        res = run_bench(
            size=args.size,
            out_dir=args.out,
            config_file=args.config_file,
            arms=arms,
            rounds=args.rounds,
            ingest_rounds=args.ingest_rounds,
            remember_n=args.remember,
            embedding=not args.skip_embedding,
            embed_rounds=args.embed_rounds,
            embed_texts_n=args.embed_texts,
            pipeline=args.pipeline,
            pipeline_cores=args.pipeline_cores,
            progress=not args.no_progress,
        )
    except (BenchError, ConfigError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    print((args.out / "summary.md").read_text())
    missed = sum(1 for r in res["rows"] if r["met"] is False)
    log.info("summary: %s (%d target(s) missed)", args.out / "summary.md", missed)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
