"""Exact cosine top-k in numpy and the recall@k of an HNSW index against it.

Recall follows ann-benchmarks' tie-aware ``k-nn`` recall (:func:`topk_recall`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentmem.arms.vector.hnsw import DEFAULT_EF_SEARCH, DEFAULT_SEED, build_hnsw


def _normalise(matrix: np.ndarray) -> np.ndarray:
    """Return float32 rows scaled to unit L2 norm (all-zero rows stay zero)."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.maximum(norms, np.float32(1e-30))


def exact_topk(vectors_matrix: np.ndarray, queries_matrix: np.ndarray, k: int) -> np.ndarray:
    """Exact cosine top-``k`` by brute force in numpy.

    Args:
        vectors_matrix: ``(n, dim)`` corpus vectors (normalised here).
        queries_matrix: ``(m, dim)`` query vectors (normalised here).
        k: neighbours per query; clamped to ``n``.

    Returns:
        int64 array ``(m, min(k, n))`` of row numbers, most similar first.
    """
    sims = _normalise(queries_matrix) @ _normalise(vectors_matrix).T
    k = min(k, sims.shape[1])
    if k <= 0:
        return np.zeros((sims.shape[0], 0), dtype=np.int64)
    part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1).astype(np.int64)


def topk_recall(
    approx: np.ndarray,
    vectors_matrix: np.ndarray,
    queries_matrix: np.ndarray,
    k: int,
    eps: float = 1e-6,
) -> float:
    """Recall@k of approximate neighbours against exact cosine search, tie-aware.

    Follows the ann-benchmarks ``k-nn`` recall: a returned neighbour counts as a hit
    when its exact cosine similarity is at least the true ``k``-th best similarity minus
    ``eps``, so duplicate vectors (exact ties) are not counted as misses; hits per
    query are capped at ``k``; recall = mean over queries of ``hits / k``.

    Args:
        approx: ``(m, k)`` row labels returned by the approximate index.
        vectors_matrix: ``(n, dim)`` corpus vectors.
        queries_matrix: ``(m, dim)`` query vectors.
        k: neighbours per query (clamped to ``n``).
        eps: similarity tolerance for ties.

    Returns:
        Recall in ``[0, 1]``; 1.0 when there are no queries or ``k == 0``.
    """
    sims = _normalise(queries_matrix) @ _normalise(vectors_matrix).T
    k = min(k, sims.shape[1])
    if sims.shape[0] == 0 or k <= 0:
        return 1.0
    kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1]
    got = np.take_along_axis(sims, np.asarray(approx, dtype=np.int64)[:, :k], axis=1)
    hits = np.minimum((got >= (kth[:, None] - eps)).sum(axis=1), k)
    return float(np.mean(hits / k))


def recall_by_ef(
    vectors_matrix: np.ndarray,
    queries_matrix: np.ndarray,
    k: int,
    ef_values: Sequence[int],
    *,
    M: int = 16,
    ef_construction: int = 200,
    random_seed: int = DEFAULT_SEED,
    num_threads: int = 1,
) -> dict[int, float]:
    """Recall@k of one hnswlib cosine index against exact numpy cosine top-k, per ``ef``.

    Builds the index once, exactly as the vector arms do (:func:`build_hnsw`), then for
    each value searches every query with ``ef = max(value, k)`` and scores the answers
    with :func:`topk_recall` (exact numpy cosine over all vectors). ``ef`` is a search
    setting, so every value is measured on the same graph.

    Args:
        vectors_matrix: ``(n, dim)`` corpus vectors.
        queries_matrix: ``(m, dim)`` query vectors.
        k: neighbours per query (clamped to ``n``).
        ef_values: HNSW search breadths to evaluate.
        M: graph out-degree.
        ef_construction: build candidate-list size.
        random_seed: level-generator seed.
        num_threads: build threads.

    Returns:
        ``{ef: mean recall@k in [0, 1]}`` for each of ``ef_values``.

    Raises:
        ValueError: when the matrices are not 2-D or their dims differ.
    """
    vecs = np.asarray(vectors_matrix, dtype=np.float32)
    qs = np.asarray(queries_matrix, dtype=np.float32)
    if vecs.ndim != 2 or qs.ndim != 2 or vecs.shape[1] != qs.shape[1]:
        raise ValueError(f"incompatible shapes: vectors {vecs.shape}, queries {qs.shape}")
    k = min(k, vecs.shape[0])
    if k <= 0 or qs.shape[0] == 0:
        return {int(ef): 1.0 for ef in ef_values}
    index = build_hnsw(
        vecs,
        M=M,
        ef_construction=ef_construction,
        random_seed=random_seed,
        num_threads=num_threads,
    )
    out = {}
    for ef in ef_values:
        index.set_ef(max(int(ef), k))
        labels, _ = index.knn_query(np.ascontiguousarray(qs), k=k, num_threads=1)
        out[int(ef)] = topk_recall(labels, vecs, qs, k)
    return out


def recall_vs_exact(
    vectors_matrix: np.ndarray,
    queries_matrix: np.ndarray,
    k: int,
    ef_search: int = DEFAULT_EF_SEARCH,
    *,
    M: int = 16,
    ef_construction: int = 200,
    random_seed: int = DEFAULT_SEED,
    num_threads: int = 1,
) -> float:
    """Recall@k of an hnswlib cosine index at one ``ef_search`` (:func:`recall_by_ef`).

    Args and errors as :func:`recall_by_ef`, with the one search breadth ``ef_search``.

    Returns:
        Mean recall@k in ``[0, 1]``.
    """
    by_ef = recall_by_ef(
        vectors_matrix,
        queries_matrix,
        k,
        [ef_search],
        M=M,
        ef_construction=ef_construction,
        random_seed=random_seed,
        num_threads=num_threads,
    )
    return by_ef[int(ef_search)]
