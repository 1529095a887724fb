"""Token-budget sweep: retrieval quality against the tokens an agent must read.

For each cut-off ``k`` one arm answers every query (untimed); the sweep records nDCG@k
and recall@k against the qrels (:mod:`agentmem.metrics`; Järvelin & Kekäläinen 2002 for
nDCG) and the o200k_base tokens (:func:`agentmem.tokens.count_tokens`) of the memories
returned. An arm prefix-stable up to the largest ``k``
(:func:`agentmem.arms.base.prefix_stable_at`) is asked once at that ``k`` and cut; the
others are asked at every ``k``. One row per ``k``:
``arm, k, ndcg, recall, mean_tokens, ndcg_per_100_tokens, fill_at_k, short_at_k`` — the
last two say whether the arm filled its ``k`` slots (:func:`agentmem.metrics.fill_rate`
against the memories each query's predicate and scope admit): an arm answering short
reads fewer tokens for that reason alone. Design and column definitions:
``docs/experiments/budget.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.arms.base import Arm, Query, Result, answer_all, prefix_stable_at
from agentmem.corpus.io import load_corpus, load_qrels, load_queries
from agentmem.embeddings import load_embeddings
from agentmem.metrics import fill_rate, ndcg_at_k, recall_at_k, searchable_counts
from agentmem.runner import opened
from agentmem.sweeps.postfilter import relevant_sets
from agentmem.tokens import count_tokens

#: Default cut-offs.
DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 20, 50)
#: Column order of the budget table (``results/sweeps/budget.csv``).
BUDGET_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String,
    "k": pl.Int64,
    "ndcg": pl.Float64,
    "recall": pl.Float64,
    "mean_tokens": pl.Float64,
    "ndcg_per_100_tokens": pl.Float64,
    "fill_at_k": pl.Float64,
    "short_at_k": pl.Float64,
}
#: Columns of :func:`budget_per_query`.
PER_QUERY_SCHEMA: dict[str, pl.DataType] = {
    "query_id": pl.String,
    "k": pl.Int64,
    "returned": pl.Int64,
    "ndcg": pl.Float64,
    "recall": pl.Float64,
    "tokens": pl.Int64,
    "fill": pl.Float64,
}


def memory_tokens(memories: pl.DataFrame) -> dict[str, int]:
    """Return ``{memory_id: o200k_base tokens of its body}``.

    Uses the ``tokens`` column when present, else counts the bodies with
    :func:`agentmem.tokens.count_tokens`.
    """
    ids = memories["memory_id"].to_list()
    if "tokens" in memories.columns:
        toks = [int(t) for t in memories["tokens"].to_list()]
    else:
        toks = count_tokens(memories["body"].to_list())
    return dict(zip(ids, toks, strict=True))


def budget_per_query(
    arm: Arm,
    queries: list[Query],
    relevant: Mapping[str, set[str]],
    tokens: Mapping[str, int],
    ks: Iterable[int] = DEFAULT_KS,
    searchable: Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """Query an open arm at every ``k`` and score each answer.

    An arm prefix-stable up to the largest ``k``
    (:func:`~agentmem.arms.base.prefix_stable_at`) answers each query once, at that ``k``,
    and every smaller ``k`` reads the first ``k`` of that answer; any other arm is queried
    afresh at every ``k``. The queries go through
    :func:`~agentmem.arms.base.answer_all` (untimed; an arm's batch search when it has one).

    Args:
        arm: an open arm.
        queries: the queries to run.
        relevant: ``{query_id: relevant memory ids}`` (every query must have some).
        tokens: ``{memory_id: token count}``.
        ks: cut-offs (deduplicated, ascending; each >= 1).
        searchable: ``{query_id: memories its filters admit}``
            (:func:`agentmem.metrics.searchable_counts`); None, or a query missing from it,
            counts ``k`` slots.

    Returns:
        One row per (k, query) with the columns of :data:`PER_QUERY_SCHEMA`: ``returned``
        ids (first ``k`` of the answer), nDCG@k, recall@k, their summed ``tokens`` and
        the answer's ``fill`` (:func:`agentmem.metrics.fill_rate`).

    Raises:
        ValueError: when a query has no qrels or a cut-off is < 1.
        KeyError: when the arm returns an id that is not a corpus memory.
    """
    cuts = sorted({int(k) for k in ks})
    if any(k < 1 for k in cuts):
        raise ValueError(f"cut-offs must be >= 1, got {cuts}")
    for q in queries:
        if not relevant.get(q.query_id):
            raise ValueError(f"query {q.query_id} has no qrels")
    once: list[Result] = []
    if cuts and prefix_stable_at(arm, cuts[-1]):
        once = answer_all(arm, queries, cuts[-1])
    rows = []
    for k in cuts:
        answers = once or answer_all(arm, queries, k)
        for q, answer in zip(queries, answers, strict=True):
            rel = relevant[q.query_id]
            ids = answer.memory_ids[:k]
            rows.append(
                {
                    "query_id": q.query_id,
                    "k": k,
                    "returned": len(ids),
                    "ndcg": ndcg_at_k(ids, rel, k),
                    "recall": recall_at_k(ids, rel, k),
                    "tokens": sum(tokens[m] for m in ids),
                    "fill": fill_rate(len(ids), k, (searchable or {}).get(q.query_id)),
                }
            )
    return pl.DataFrame(rows, schema=PER_QUERY_SCHEMA)


def summarise_budget(arm_name: str, per_query: pl.DataFrame) -> pl.DataFrame:
    """Average :func:`budget_per_query` rows per ``k`` into the budget table.

    Returns:
        Columns of :data:`BUDGET_SCHEMA`, ascending ``k``: ``fill_at_k`` is the mean
        ``fill``, ``short_at_k`` the share of queries whose fill is below 1.
    """
    agg = (
        per_query.group_by("k")
        .agg(
            ndcg=pl.col("ndcg").mean(),
            recall=pl.col("recall").mean(),
            mean_tokens=pl.col("tokens").cast(pl.Float64).mean(),
            fill_at_k=pl.col("fill").mean(),
            short_at_k=(pl.col("fill") < 1.0).cast(pl.Float64).mean(),
        )
        .sort("k")
        .with_columns(
            arm=pl.lit(arm_name, pl.String),
            ndcg_per_100_tokens=pl.when(pl.col("mean_tokens") > 0)
            .then(pl.col("ndcg") / pl.col("mean_tokens") * 100.0)
            .otherwise(None),
        )
    )
    return agg.select(list(BUDGET_SCHEMA)).cast(BUDGET_SCHEMA)


def budget_sweep(
    arm_name: str,
    arm_params: Mapping[str, Any] | None,
    store_dir: str | Path,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    ks: Iterable[int] = DEFAULT_KS,
) -> pl.DataFrame:
    """Token-budget table of one arm: quality and tokens returned at each ``k``.

    Reopens the store the pipeline built (:func:`agentmem.runner.opened`),
    runs every query of the corpus at every ``k`` (untimed) and closes the arm (stopping
    any embedded server), also on errors. Each query's slots are min(k, memories its
    predicate and scope admit).

    Args:
        arm_name: registered arm name.
        arm_params: its constructor parameters (``None`` -> defaults).
        store_dir: the store built by the pipeline (``results/stores/{size}/{arm}``).
        corpus_dir: corpus directory (memories with ``tokens``, queries, qrels).
        embeddings_path: the size's embeddings Parquet (query vectors).
        ks: cut-offs.

    Returns:
        One row per ``k`` with the columns of :data:`BUDGET_SCHEMA`.

    Raises:
        KeyError: on an unknown arm; ValueError: a query without qrels or a cut-off < 1;
        agentmem.arms.base.ArmError: when the store cannot be opened or queried.
    """
    corpus = load_corpus(corpus_dir)
    queries = load_queries(corpus_dir, load_embeddings(embeddings_path))
    relevant = relevant_sets(load_qrels(corpus_dir))
    tokens = memory_tokens(corpus.memories)
    searchable = searchable_counts(corpus.memories, {q.query_id: q.filters for q in queries})
    with opened(arm_name, dict(arm_params or {}), store_dir) as arm:
        per_query = budget_per_query(arm, queries, relevant, tokens, ks, searchable)
    return summarise_budget(arm_name, per_query)
