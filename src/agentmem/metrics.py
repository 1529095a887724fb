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
- Bootstrap CIs: percentile bootstrap over queries (Efron & Tibshirani 1993), seeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

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
    return sum(1 for m in set(list(ranked)[:k]) if m in relevant) / len(relevant)


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
    for i, m in enumerate(list(ranked)[:k], start=1):
        if m in relevant and m not in seen:
            dcg += 1.0 / math.log2(i + 1)
        seen.add(m)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(relevant), k) + 1))
    return dcg / ideal


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


def superseded_ids(memories: pl.DataFrame) -> set[str]:
    """Ids (``memory_id``) of the memories whose ``superseded_by`` is not null."""
    return set(memories.filter(pl.col("superseded_by").is_not_null())["memory_id"].to_list())


def per_query(
    runs: pl.DataFrame,
    qrels: pl.DataFrame,
    queries: pl.DataFrame,
    k: int = 10,
    superseded: set[str] | None = None,
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

    Returns:
        One row per query: query_id, query_class, ndcg_at_10, recall_at_10, mrr,
        precision_at_10, stale_exposure (null when nothing is returned), returned,
        exact_count (bool or null for non-aggregates), latency_ms. (Column names keep
        ``_at_10`` for the default k.)

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
        },
    )


def summarize(scores: pl.DataFrame) -> pl.DataFrame:
    """Aggregate per-query scores by class and overall (``query_class = "all"``).

    Returns:
        query_class, n_queries, ndcg_at_10, recall_at_10, mrr, precision_at_10,
        stale_exposure (mean over the queries that returned something; null when none
        did), exact_count_rate (null when the group has no aggregate query), p50_ms, p95_ms.
    """
    aggs = [
        pl.len().alias("n_queries"),
        *[pl.col(m).mean().alias(m) for m in METRICS],
        pl.col("stale_exposure").mean().alias("stale_exposure"),  # nulls (empty results) skipped
        pl.col("exact_count").cast(pl.Float64).mean().alias("exact_count_rate"),
        pl.col("latency_ms").quantile(0.5, "linear").alias("p50_ms"),
        pl.col("latency_ms").quantile(0.95, "linear").alias("p95_ms"),
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
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    return float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2))
