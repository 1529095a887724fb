"""Retrieval metrics, computed centrally from raw runs and qrels (never by an arm).

Definitions (binary relevance, cut-off ``k``; BEIR/TREC conventions; the study's
conventions for precision):

- precision@k = |relevant ∩ returned[:k]| / |returned[:k]|  (÷ number *returned*, as in
  the study; 0 when nothing is returned).
- recall@k = |relevant ∩ returned[:k]| / |relevant|.
- MRR = 1 / rank of the first relevant result (0 when none in the list) — Voorhees, TREC-8 QA.
- nDCG@k (binary) = DCG / IDCG with DCG = Σ_{i=1..k} rel_i / log2(i + 1) and IDCG the DCG of
  min(|relevant|, k) relevant results ranked first — Järvelin & Kekäläinen (2002).
- exact-count rate: share of aggregate queries whose returned count equals the expected
  count (a missing count is not exact).
- stale exposure@k = |superseded ∩ returned[:k]| / |returned[:k]|: the share of the
  returned top-``k`` whose memory is superseded (``superseded_by`` not null in the corpus's
  ``memories.parquet``). Undefined (NaN; null in the per-query frame) when nothing is
  returned, and left out of the means, so an empty answer neither hides nor adds stale
  memories. A public Graphiti pull request (getzep/graphiti #1804) measured on a
  78,515-edge production graph that 52.7 % of fact-search candidates were already-
  invalidated facts.
- fill@k = min(|returned|, slots) / slots with slots = min(k, |searchable|): the share of
  the result slots an exact search would fill that the arm filled. The searchable set is
  the memories the query's scope and predicate admit (:func:`searchable_counts`); where it
  is not known, slots = k. 1 when there is no slot (nothing to return, nothing missed).
  "short@k" is the share of queries with fill@k below 1. The same definition as the
  post-filter sweep's fill rate. A text arm returns only the memories that match its
  terms, so its short answers are its answer; an arm that ranks every searchable memory
  by vector and answers short is capped by its search (pgvector's HNSW index scan returns
  at most ``hnsw.ef_search`` rows).
- Bootstrap CIs: percentile bootstrap over queries (Efron & Tibshirani 1993), seeded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache

import polars as pl

from agentmem.types import Predicate

METRICS = ("ndcg_at_10", "recall_at_10", "mrr", "precision_at_10")


def precision_at_k(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    """Share of the returned top-``k`` that is relevant (÷ number returned; 0 if none)."""
    top = list(ranked)[:k]
    if not top:
        return 0.0
    return sum(1 for m in top if m in relevant) / len(top)


def recall_at_k(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    """Share of the relevant set found in the top ``k``.

    Raises:
        ValueError: when ``relevant`` is empty (recall is undefined).
    """
    if not relevant:
        raise ValueError("recall is undefined for a query with no relevant memories")
    return len(set(_top(ranked, k)).intersection(relevant)) / len(relevant)


def reciprocal_rank(ranked: Sequence[str], relevant: set[str], k: int | None = None) -> float:
    """1 / (1-based rank of the first relevant id), 0 if none within ``k`` (all if None)."""
    for i, m in enumerate(ranked if k is None else list(ranked)[:k], start=1):
        if m in relevant:
            return 1.0 / i
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    """Binary nDCG@k (Järvelin & Kekäläinen 2002); duplicates count once.

    Raises:
        ValueError: when ``relevant`` is empty.
    """
    if not relevant:
        raise ValueError("nDCG is undefined for a query with no relevant memories")
    seen: set[str] = set()
    dcg = 0.0
    for i, m in enumerate(_top(ranked, k), start=1):
        if m in relevant and m not in seen:
            dcg += _discount(i)
        seen.add(m)
    ideal = sum(_discount(i) for i in range(1, min(len(relevant), k) + 1))
    return dcg / ideal


def ranked_lists(runs: pl.DataFrame) -> dict[str, list[str]]:
    """``{query_id: memory ids by rank}`` of a runs table (a null id marks an empty answer).

    Args:
        runs: the runner's rows (``query_id``, ``rank``, ``memory_id``), any order.
    """
    lists = (
        runs.sort("query_id", "rank", nulls_last=True)
        .group_by("query_id", maintain_order=True)
        .agg(pl.col("memory_id").drop_nulls())
    )
    return dict(zip(lists["query_id"], lists["memory_id"].to_list(), strict=True))


def _top(ranked: Sequence[str], k: int) -> Sequence[str]:
    """The first ``k`` of ``ranked`` (a list is sliced, anything else listed first)."""
    return ranked[:k] if isinstance(ranked, list | tuple) else list(ranked)[:k]


@cache
def _discount(rank: int) -> float:
    """The gain discount of nDCG at a 1-based ``rank``: ``1 / log2(rank + 1)``."""
    return 1.0 / math.log2(rank + 1)


def stale_exposure(ranked: Sequence[str], superseded: set[str], k: int = 10) -> float:
    """Share of the returned top-``k`` whose memory is superseded (÷ number returned).

    Args:
        ranked: the run's memory ids, best first (each position counts once).
        superseded: ids of the memories whose ``superseded_by`` is not null (any other
            id counts as current).
        k: cut-off.

    Returns:
        A value in [0, 1]; NaN when nothing is returned (0/0). Graphiti's pull request
        getzep/graphiti #1804 found 52.7 % already-invalidated facts among fact-search
        candidates on a 78,515-edge production graph.
    """
    top = list(ranked)[:k]
    if not top:
        return math.nan
    return sum(1 for m in top if m in superseded) / len(top)


def fill_rate(returned: int, k: int, searchable: int | None = None) -> float:
    """Share of the result slots filled: ``min(returned, slots) / slots``.

    Args:
        returned: ids the arm returned (all of them; only the first ``k`` count).
        k: cut-off (>= 1).
        searchable: memories the query's scope and predicate admit
            (:func:`searchable_counts`); ``None`` when not known (then ``slots = k``).

    Returns:
        A value in [0, 1] with ``slots = min(k, searchable)``; 1.0 when ``slots == 0``.

    Raises:
        ValueError: when ``k < 1`` or a count is negative.
    """
    if k < 1 or returned < 0 or (searchable is not None and searchable < 0):
        raise ValueError(f"need k >= 1 and counts >= 0, got {returned=}, {k=}, {searchable=}")
    slots = k if searchable is None else min(k, searchable)
    return 1.0 if slots == 0 else min(returned, slots) / slots


def _admits(p: Predicate, columns: Sequence[str]) -> pl.Expr:
    """``p`` as a polars filter; the semantics of :meth:`Predicate.matches` (null fails)."""
    if p.field not in columns:  # a missing column reads as null
        return pl.lit(p.op == "is_null")
    c = pl.col(p.field)
    if p.op == "is_null":
        return c.is_null()
    return ((c == p.value) if p.op == "=" else (c <= p.value)).fill_null(False)


def query_filters(
    queries: pl.DataFrame, *, scoped: bool = True
) -> dict[str, tuple[Predicate, ...]]:
    """Each query's filters, as :attr:`agentmem.types.Query.filters` would hold them.

    Args:
        queries: rows of ``queries.parquet`` (query_id, predicate_field, predicate_op,
            predicate_value; an optional scope_id).
        scoped: keep each query's ``scope_id`` (False: the unscoped setting).

    Returns:
        ``{query_id: (scope predicate?, predicate?)}``, the scope first; ``()`` for none.

    Raises:
        ValueError: on a malformed predicate (:meth:`Predicate.parse`).
    """
    has_scope = scoped and "scope_id" in queries.columns
    out: dict[str, tuple[Predicate, ...]] = {}
    for row in queries.iter_rows(named=True):
        scope = row["scope_id"] if has_scope else None
        pred = Predicate.parse(
            row.get("predicate_field"), row.get("predicate_op"), row.get("predicate_value")
        )
        parts = (Predicate("scope_id", "=", scope) if scope else None, pred)
        out[row["query_id"]] = tuple(p for p in parts if p is not None)
    return out


def searchable_counts(
    memories: pl.DataFrame, filters: Mapping[str, Sequence[Predicate]]
) -> dict[str, int]:
    """How many memories each query may return: those its filters all admit.

    Args:
        memories: the corpus memories (the columns the filters name; a missing column
            reads as null, as in :meth:`Predicate.matches`).
        filters: ``{query_id: predicates to AND}`` (:func:`query_filters`, or
            ``Query.filters``); an empty sequence admits every memory.

    Returns:
        ``{query_id: number of memories}`` (the ``searchable`` of :func:`fill_rate`).
    """
    cache: dict[tuple[Predicate, ...], int] = {(): memories.height}
    out: dict[str, int] = {}
    for qid, fs in filters.items():
        key = tuple(fs)
        if key not in cache:
            cond = pl.all_horizontal([_admits(p, memories.columns) for p in key])
            cache[key] = memories.filter(cond).height
        out[qid] = cache[key]
    return out


def superseded_ids(memories: pl.DataFrame) -> set[str]:
    """Ids (``memory_id``) of the memories whose ``superseded_by`` is not null."""
    return set(memories.filter(pl.col("superseded_by").is_not_null())["memory_id"].to_list())


def per_query(
    runs: pl.DataFrame,
    qrels: pl.DataFrame,
    queries: pl.DataFrame,
    k: int = 10,
    superseded: set[str] | None = None,
    searchable: Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """Score every query of one arm's run.

    Args:
        runs: rows of ``results/runs/{size}/{arm}.parquet`` (query_id, rank, memory_id
            (null for an empty result), count, latency_ms).
        qrels: query_id, memory_id (grade ignored: binary).
        queries: query_id, class, expected_count.
        k: cut-off.
        superseded: ids of the superseded memories (:func:`superseded_ids`); None leaves
            ``stale_exposure`` null for every query (not measured).
        searchable: ``{query_id: memories its predicate (and scope) admit}``
            (:func:`searchable_counts`); None (or a query missing from it) counts its
            slots as ``k``.

    Returns:
        One row per query: query_id, query_class, ndcg_at_10, recall_at_10, mrr,
        precision_at_10, stale_exposure (null when nothing is returned), returned,
        exact_count (bool or null for non-aggregates), latency_ms, fill_at_10
        (:func:`fill_rate`). (Column names keep ``_at_10`` for the default k.)

    Raises:
        ValueError: when a query in ``queries`` has no run rows or no qrels.
    """
    rel: dict[str, set[str]] = {}
    for q, m in zip(qrels["query_id"], qrels["memory_id"], strict=True):
        rel.setdefault(q, set()).add(m)
    ranked: dict[str, list[str]] = {}
    count: dict[str, int | None] = {}
    lat: dict[str, float] = {}
    for row in runs.sort("query_id", "rank", nulls_last=True).iter_rows(named=True):
        qid = row["query_id"]
        ranked.setdefault(qid, [])
        if row["memory_id"] is not None:
            ranked[qid].append(row["memory_id"])
        count[qid] = row["count"]
        lat[qid] = row["latency_ms"]
    out = []
    for row in queries.iter_rows(named=True):
        qid = row["query_id"]
        if qid not in ranked:
            raise ValueError(f"query {qid} has no rows in the run")
        if qid not in rel:
            raise ValueError(f"query {qid} has no qrels")
        r, R = ranked[qid], rel[qid]
        exp = row["expected_count"]
        stale = None if superseded is None else stale_exposure(r, superseded, k)
        out.append(
            {
                "query_id": qid,
                "query_class": row["class"],
                "ndcg_at_10": ndcg_at_k(r, R, k),
                "recall_at_10": recall_at_k(r, R, k),
                "mrr": reciprocal_rank(r, R, k),
                "precision_at_10": precision_at_k(r, R, k),
                "stale_exposure": None if stale is None or math.isnan(stale) else stale,
                "returned": min(len(r), k),
                "exact_count": None if exp is None else (count[qid] == exp),
                "latency_ms": lat[qid],
                "fill_at_10": fill_rate(len(r), k, (searchable or {}).get(qid)),
            }
        )
    return pl.DataFrame(
        out,
        schema={
            "query_id": pl.String,
            "query_class": pl.String,
            "ndcg_at_10": pl.Float64,
            "recall_at_10": pl.Float64,
            "mrr": pl.Float64,
            "precision_at_10": pl.Float64,
            "stale_exposure": pl.Float64,
            "returned": pl.Int32,
            "exact_count": pl.Boolean,
            "latency_ms": pl.Float64,
            "fill_at_10": pl.Float64,
        },
    )


def summarize(scores: pl.DataFrame) -> pl.DataFrame:
    """Aggregate per-query scores by class and overall (``query_class = "all"``).

    Returns:
        query_class, n_queries, ndcg_at_10, recall_at_10, mrr, precision_at_10,
        stale_exposure (mean over the queries that returned something; null when none
        did), exact_count_rate (null when the group has no aggregate query), p50_ms, p95_ms,
        fill_at_10 (mean :func:`fill_rate`) and short_at_10 (share of queries with a fill
        below 1); both null for per-query scores written without ``fill_at_10``.
    """
    fill = (
        pl.col("fill_at_10")
        if "fill_at_10" in scores.columns
        else pl.lit(None, dtype=pl.Float64).alias("fill_at_10")
    )
    aggs = [
        pl.len().alias("n_queries"),
        *[pl.col(m).mean().alias(m) for m in METRICS],
        pl.col("stale_exposure").mean().alias("stale_exposure"),  # nulls (empty results) skipped
        pl.col("exact_count").cast(pl.Float64).mean().alias("exact_count_rate"),
        pl.col("latency_ms").quantile(0.5, "linear").alias("p50_ms"),
        pl.col("latency_ms").quantile(0.95, "linear").alias("p95_ms"),
        fill.mean().alias("fill_at_10"),
        (fill < 1.0).cast(pl.Float64).mean().alias("short_at_10"),
    ]
    by = scores.group_by("query_class", maintain_order=True).agg(aggs)
    allrow = scores.select(aggs).with_columns(query_class=pl.lit("all"))
    return pl.concat([by, allrow.select(by.columns)]).with_columns(
        pl.col("n_queries").cast(pl.Int64)
    )


def bootstrap_ci(
    values: Sequence[float], n_boot: int = 2000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (Efron & Tibshirani 1993).

    Returns:
        ``(low, high)``; ``(nan, nan)`` for an empty sample.
    """
    return bootstrap_cis([values], n_boot=n_boot, alpha=alpha, seed=seed)[0]


@lru_cache(maxsize=64)
def _resample_counts(n: int, n_boot: int, seed: int):  # noqa: ANN202 (numpy, imported late)
    """How often each of ``n`` items is drawn in each of ``n_boot`` resamples of ``seed``.

    Shape ``(n_boot, n)``, float64, read-only; row sums are ``n``. Made once per
    (n, n_boot, seed): a dataset scores every run on the same queries, so each size
    recurs once per run (32 MB at n = n_boot = 2,000).
    """
    import numpy as np

    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    flat = (idx + np.arange(n_boot)[:, None] * n).ravel()
    counts = np.bincount(flat, minlength=n_boot * n).reshape(n_boot, n).astype(float)
    counts.flags.writeable = False
    return counts


def bootstrap_cis(
    samples: Sequence[Sequence[float]], n_boot: int = 2000, alpha: float = 0.05, seed: int = 0
) -> list[tuple[float, float]]:
    """:func:`bootstrap_ci` of several samples of one length, on one set of resamples.

    The resamples are drawn once (``seed``) and applied to every sample, so each interval
    equals :func:`bootstrap_ci` of that sample with the same seed (paired metrics of the
    same queries). Each resample's mean is its draw counts times the sample over n: every
    sample's means in one matrix product.

    Returns:
        One ``(low, high)`` per sample; ``(nan, nan)`` each when the samples are empty.

    Raises:
        ValueError: when the samples differ in length.
    """
    import numpy as np  # here: scoring a run needs no numpy

    xs = [np.asarray(v, dtype=float) for v in samples]
    sizes = {x.size for x in xs}
    if len(sizes) > 1:
        raise ValueError(f"bootstrap_cis needs samples of one length, got sizes {sorted(sizes)}")
    if not xs or not xs[0].size:
        return [(math.nan, math.nan)] * len(xs)
    n = xs[0].size
    means = _resample_counts(n, n_boot, seed) @ np.column_stack(xs) / n
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    return [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]
