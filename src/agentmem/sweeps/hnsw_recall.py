"""HNSW recall sweep: recall@k of the vector arms' hnswlib index against exact search.

For the corpus vectors of one size, builds the index as :class:`agentmem.arms.vector.FileVecArm`
does and measures its recall@k against exact cosine top-k
(:func:`agentmem.arms.vector.recall_by_ef`: one index) at several ``ef_search`` values, so that the
arm default can be checked to reach >= 0.99 at the main size. Written by the Snakemake rule
``measure_hnsw_recall`` as ``results/tables/hnsw_recall_{size}.json``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.embeddings import load_embeddings
from agentmem.io import write_json


def hnsw_recall(
    embeddings: str | Path,
    memories: str | Path,
    queries: str | Path,
    out: str | Path,
    k: int = 10,
    ef_values: tuple[int, ...] = (10, 40, 100, 200, 400, 1000),
) -> dict:
    """Measure hnswlib recall@k against exact search over the corpus vectors.

    Args:
        embeddings: ``results/embeddings/{size}.parquet``.
        memories: ``memories.parquet`` (ids of the corpus vectors).
        queries: ``queries.parquet`` (ids of the query vectors).
        out: JSON file to write: ``{k, memories, queries, default_ef_search,
            recall_at_default, by_ef: {ef: recall}}``.
        k: neighbours per query.
        ef_values: ef_search values to evaluate (the arm default is always added).

    Returns:
        The document written to ``out``.
    """
    from agentmem.arms.vector import DEFAULT_EF_SEARCH, recall_by_ef

    emb = load_embeddings(embeddings)
    mem_ids = pl.read_parquet(memories, columns=["memory_id"])["memory_id"].to_list()
    q_ids = pl.read_parquet(queries, columns=["query_id"])["query_id"].to_list()
    X, Q = emb.get(mem_ids), emb.get(q_ids)
    efs = sorted({*ef_values, DEFAULT_EF_SEARCH})
    by_ef = {str(ef): round(float(r), 5) for ef, r in recall_by_ef(X, Q, k, efs).items()}
    doc = {
        "k": k,
        "memories": len(mem_ids),
        "queries": len(q_ids),
        "default_ef_search": DEFAULT_EF_SEARCH,
        "recall_at_default": by_ef[str(DEFAULT_EF_SEARCH)],
        "by_ef": by_ef,
    }
    write_json(out, doc)
    return doc
