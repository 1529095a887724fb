"""Build one arm on one corpus size, run every query, time it, and record raw results.

Measurement rules (docs/MEASUREMENT.md §1): one warm-up call, then the median of up to
``repeats`` timed calls per query, fewer once they add up to ``min_time_ms``
(``time.perf_counter_ns`` around ``Arm.query`` only). The ranked ids of the first timed
call are stored. Scores are *not* computed here: :mod:`agentmem.metrics` turns
the raw run into metrics later (ann-benchmarks style).

Outputs (docs/DATA.md): ``runs`` Parquet (one row per (query, rank); an empty result is one
row with null rank/memory_id), ``build`` JSON (ingest_ms, index_ms, storage from the
engine's own accounting with a per-object breakdown, bytes per memory) and ``plans`` JSON
(one EXPLAIN per query class).
"""

from __future__ import annotations

import logging
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

from agentmem.arms.base import Arm, Query, Result, answer_all
from agentmem.arms.factory import make_arm
from agentmem.corpus.io import load_corpus, load_queries
from agentmem.embeddings import load_embeddings
from agentmem.io import write_json, write_parquet
from agentmem.metrics import fill_rate, searchable_counts

log = logging.getLogger(__name__)

RUN_SCHEMA = {
    "query_id": pl.String,
    "rank": pl.Int32,
    "memory_id": pl.String,
    "count": pl.Int64,
    "latency_ms": pl.Float64,
}


@contextmanager
def opened(name: str, params: dict[str, Any] | None, store_dir: str | Path) -> Iterator[Arm]:
    """Open the store an earlier job built, for reading; the arm is closed afterwards.

    For an arm whose product locks its store to one process (``exclusive_store``) the
    store is copied first, into a hidden directory beside it that is removed afterwards,
    and the copy is opened: readers that run at the same time then never meet the lock.

    Raises:
        KeyError: unknown arm; ``agentmem.arms.base.ArmError``: the store cannot be opened.
    """
    arm = make_arm(name, params)
    store = Path(store_dir)
    private: Path | None = None
    try:
        if getattr(type(arm), "exclusive_store", False) and store.is_dir():
            private = Path(tempfile.mkdtemp(prefix=f".{store.name}-reader-", dir=store.parent))
            shutil.copytree(store, private / store.name, symlinks=True)
            store = private / store.name
        arm.open(store)
        yield arm
    finally:
        arm.close()
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)


def time_query(
    arm: Arm, q: Query, k: int, warmup: int = 1, repeats: int = 3, min_time_ms: float = 0.0
) -> tuple[Result, float]:
    """Run ``q`` ``warmup`` times untimed, then timed until ``repeats`` calls or ``min_time_ms``.

    The timed calls stop after ``repeats`` calls, or earlier once their summed latency
    reaches ``min_time_ms`` (at least one call; 0 always makes ``repeats``): Google
    Benchmark's ``min_time``, per query. A call that long is dominated by its work, not
    by the timer or a cold cache, so one measures it (docs/MEASUREMENT.md §1).

    Returns:
        ``(result of the first timed call, median latency of the timed calls in ms)``.
    """
    for _ in range(warmup):
        arm.query(q, k)
    times: list[float] = []
    first: Result | None = None
    while len(times) < repeats:
        t0 = time.perf_counter_ns()
        res = arm.query(q, k)
        times.append((time.perf_counter_ns() - t0) / 1e6)
        if first is None:
            first = res
        if min_time_ms and sum(times) >= min_time_ms:
            break
    assert first is not None
    return first, statistics.median(times)


def run_rows(query_id: str, res: Result, latency_ms: float | None, k: int) -> list[dict]:
    """Rows of the runs table for one query (one per rank; one null row if empty).

    ``latency_ms`` is ``None`` (null) for an answer of a batch pass (:func:`batch_pass`).
    """
    ids = res.memory_ids[:k]
    if not ids:
        return [
            {
                "query_id": query_id,
                "rank": None,
                "memory_id": None,
                "count": res.count,
                "latency_ms": latency_ms,
            }
        ]
    return [
        {
            "query_id": query_id,
            "rank": r,
            "memory_id": m,
            "count": res.count,
            "latency_ms": latency_ms,
        }
        for r, m in enumerate(ids, start=1)
    ]


#: queries per :func:`~agentmem.arms.base.answer_all` call of a batch pass: the progress
#: bar moves once per chunk
BATCH_CHUNK = 500


def batch_pass(
    arm: Arm, queries: Sequence[Query], k: int, label: str, progress: bool = True
) -> Iterator[tuple[Query, Result]]:
    """Each query with the arm's answer at ``k``, from :func:`answer_all` (untimed).

    The queries go to the arm :data:`BATCH_CHUNK` at a time, so an arm with a batch search
    (``query_many``) answers many in one call; the answers equal ``arm.query(q, k)``.

    Raises:
        ArmError: as :meth:`Arm.query`.
    """
    with tqdm(total=len(queries), desc=label, unit="q", disable=not progress) as bar:
        for at in range(0, len(queries), BATCH_CHUNK):
            chunk = list(queries[at : at + BATCH_CHUNK])
            yield from zip(chunk, answer_all(arm, chunk, k), strict=True)
            bar.update(len(chunk))


def short_unfiltered(
    queries: Sequence[Query], returned: Mapping[str, int], memories: pl.DataFrame, k: int
) -> tuple[int, int, int]:
    """Count the queries without a predicate that were answered with fewer ids than slots.

    Args:
        queries: the queries run.
        returned: ``{query_id: ids returned (first k)}``.
        memories: the corpus memories (a query's slots are min(k, memories of its scope)).
        k: cut-off.

    Returns:
        ``(short, asked, fewest)``: queries without a predicate whose
        :func:`agentmem.metrics.fill_rate` is below 1, queries without a predicate, and
        the fewest ids one of the short ones got (0 when none is short).
    """
    plain = {q.query_id: q.filters for q in queries if q.predicate is None}
    searchable = searchable_counts(memories, plain)
    short = [returned[q] for q in plain if fill_rate(returned[q], k, searchable[q]) < 1.0]
    return len(short), len(plain), min(short, default=0)


def warn_short(arm_name: str, arm: Arm, short: tuple[int, int, int], k: int) -> None:
    """Log one warning when an arm that ranks by vector answered unfiltered queries short.

    ``short`` is :func:`short_unfiltered`'s count. A text-only arm
    (``capabilities.vector_access == "none"``) returns only the memories that match its
    terms, so its short answers are not warned about; an arm that ranks by vector should
    fill every slot its scope can (pgvector's HNSW index scan stops at
    ``hnsw.ef_search`` rows, docs/arms/postgres.md).
    """
    n, asked, fewest = short
    caps = getattr(arm, "capabilities", None)
    if n == 0 or getattr(caps, "vector_access", "none") == "none":
        return
    log.warning(
        "%s: %d of %d queries without a predicate returned fewer than k = %d ids although "
        "their scope held more (fewest: %d); the score tables' fill_at_k columns show it",
        arm_name,
        n,
        asked,
        k,
        fewest,
    )


@dataclass(frozen=True)
class RunFiles:
    """Where the outputs of one setting of :func:`run_arm_settings` go.

    Attributes:
        scoped: whether the queries keep their ``scope_id`` (False: every query searches
            every memory, the unscoped setting of a dataset with scopes).
        runs, build, plans: the runs Parquet, build JSON and plans JSON to write.
    """

    scoped: bool
    runs: str | Path
    build: str | Path
    plans: str | Path


def run_arm(
    arm_name: str,
    params: dict[str, Any] | None,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    store_dir: str | Path,
    runs_out: str | Path,
    build_out: str | Path,
    plans_out: str | Path,
    k: int = 10,
    warmup: int = 1,
    repeats: int = 3,
    min_time_ms: float = 0.0,
    progress: bool = True,
    scoped: bool = True,
    batch: bool = False,
) -> dict[str, Any]:
    """Build ``arm_name`` from scratch in ``store_dir``, run all queries, write the outputs.

    :func:`run_arm_settings` with one setting (``scoped``; False runs the queries without
    their ``scope_id``); ``batch`` as there (one untimed pass, null latency).

    Returns:
        The build record written to ``build_out``.

    Raises:
        As :func:`run_arm_settings`.
    """
    files = RunFiles(scoped, runs_out, build_out, plans_out)
    return run_arm_settings(
        arm_name,
        params,
        corpus_dir,
        embeddings_path,
        store_dir,
        [files],
        k=k,
        warmup=warmup,
        repeats=repeats,
        min_time_ms=min_time_ms,
        progress=progress,
        batch=batch,
    )[0]


def run_arm_settings(
    arm_name: str,
    params: dict[str, Any] | None,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    store_dir: str | Path,
    files: Sequence[RunFiles],
    k: int = 10,
    warmup: int = 1,
    repeats: int = 3,
    min_time_ms: float = 0.0,
    progress: bool = True,
    batch: bool = False,
) -> list[dict[str, Any]]:
    """Build ``arm_name`` once in ``store_dir``, run all queries in each setting of ``files``.

    With ``batch`` the queries are one untimed pass (:func:`batch_pass`: an arm with a
    batch search answers many per call, each answer equal to its ``query``) and the runs'
    ``latency_ms`` is null: a pass that only scores quality (the external datasets'). It
    needs ``warmup == 0`` and ``repeats == 1``.

    The store directory is wiped first, so an interrupted earlier run never leaks into
    this one. Queries only read the store (the timed repeats rely on it too), so the
    settings share one build. The arm is always closed (embedded servers stopped), even
    on errors. When an arm that ranks by vector answers queries without a predicate with
    fewer ids than their scope allows, one warning per setting says how many
    (:func:`warn_short`).

    Returns:
        The build record written to each ``build`` file, in the order of ``files``; a
        product arm's also holds ``products``, the installed version of each distribution
        it drives.

    Raises:
        KeyError: unknown arm; ``agentmem.corpus.io.CorpusError``: bad corpus;
        ``agentmem.arms.base.ArmError``: the engine failed; ValueError: no ``files``, or
        ``batch`` with timed calls.
    """
    if not files:
        raise ValueError(f"{arm_name}: run_arm_settings needs at least one setting's files")
    if batch and (warmup, repeats) != (0, 1):
        raise ValueError(
            f"{arm_name}: a batch pass is one untimed call per query (warmup 0, repeats 1), "
            f"got warmup {warmup}, repeats {repeats}"
        )
    corpus = load_corpus(corpus_dir)
    vectors = load_embeddings(embeddings_path)
    store = Path(store_dir)
    if store.exists():
        shutil.rmtree(store)
    store.mkdir(parents=True)
    arm = make_arm(arm_name, params)
    done: list[tuple[RunFiles, list[Query], list[dict], dict[str, int], dict[str, Any]]] = []
    try:
        t0 = time.perf_counter()
        stats = arm.build(corpus, vectors, store)
        build_wall = (time.perf_counter() - t0) * 1000
        storage = arm.storage()
        for f in files:
            queries = load_queries(corpus_dir, vectors, scoped=f.scoped)
            label = f"{arm_name}: queries" + ("" if f.scoped else " (unscoped)")
            rows: list[dict] = []
            returned: dict[str, int] = {}
            plans: dict[str, Any] = {}
            answers: Iterator[tuple[Query, Result, float | None]]
            if batch:
                answers = (
                    (q, res, None) for q, res in batch_pass(arm, queries, k, label, progress)
                )
            else:
                answers = (
                    (q, *time_query(arm, q, k, warmup, repeats, min_time_ms))
                    for q in tqdm(
                        queries, desc=label, unit="q", disable=not progress, mininterval=2.0
                    )
                )
            for q, res, ms in answers:
                rows.extend(run_rows(q.query_id, res, ms, k))
                returned[q.query_id] = len(res.memory_ids[:k])
            for q in queries:
                if q.query_class not in plans:
                    plans[q.query_class] = {
                        "query_id": q.query_id,
                        "text": q.text,
                        "plan": arm.explain(q),
                    }
            done.append((f, queries, rows, returned, plans))
    finally:
        arm.close()
    n = corpus.memories.height
    product_versions = getattr(type(arm), "product_versions", None)
    builds = []
    for f, queries, rows, returned, plans in done:
        warn_short(arm_name, arm, short_unfiltered(queries, returned, corpus.memories, k), k)
        build = {
            "arm": arm_name,
            "family": arm.family,
            "params": params or {},
            "memories": n,
            "queries": len(queries),
            "scoped": f.scoped,
            "ingest_ms": round(stats.ingest_ms, 3),
            "index_ms": round(stats.index_ms, 3),
            "build_wall_ms": round(build_wall, 3),
            "storage_bytes": int(storage.total_bytes),
            "bytes_per_memory": round(storage.total_bytes / n, 1) if n else None,
            "storage_source": storage.source,
            "storage_objects": {k_: int(v) for k_, v in sorted(storage.objects.items())},
            "storage_counts": {k_: int(v) for k_, v in sorted(storage.counts.items())},
        }
        if product_versions is not None:  # a product arm: the versions of what it drives
            build["products"] = product_versions()
        write_parquet(f.runs, pl.DataFrame(rows, schema=RUN_SCHEMA))
        write_json(f.build, build)
        write_json(f.plans, {"arm": arm_name, "plans": plans})
        builds.append(build)
    return builds
