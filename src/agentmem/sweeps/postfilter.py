"""Post-filter overfetch sweep: how many neighbours must a filtered vector search fetch?

A post-filtering arm (``capabilities.filter_stage == "post-filter"``, e.g.
``file-vec-meta``) fetches ``k * overfetch`` approximate neighbours, filters them on
metadata and cuts to ``k``. The sweep reopens its store at each overfetch factor (its
:attr:`~agentmem.arms.base.ArmBase.candidate_param`) and runs every filtered query,
reporting slots filled, recall@k and the share of the corpus fetched; the arms that
filter inside their HNSW search answer the same queries once each, as reference lines
(:func:`postfilter_roles`). A quality sweep: one untimed call per query and point (the
latency of each arm at its configured parameter is :mod:`agentmem.runner`'s). Definitions
and output columns: ``docs/experiments/postfilter.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from agentmem.arms import ARMS
from agentmem.arms.base import Arm, Query
from agentmem.metrics import fill_rate, recall_at_k, searchable_counts

#: The default overfetch factors: powers of two, ×1 … ×128 (docs/STUDY.md §4).
DEFAULT_OVERFETCH: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
#: Column order of the sweep table (``results/sweeps/postfilter.csv``).
POSTFILTER_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String,
    "overfetch": pl.Int64,
    "fetched": pl.Int64,
    "mean_slots_filled": pl.Float64,
    "fill_rate": pl.Float64,
    "recall_at_10": pl.Float64,
    "scan_fraction": pl.Float64,
}


def is_swept(arm_cls: type) -> bool:
    """True for an arm the sweep varies: it filters and declares its candidate parameter.

    A post-filtering arm's parameter sets the list it filters (``overfetch``); an
    in-search ANN arm's sets its search breadth (an HNSW ``ef``), which can leave slots
    empty too (:attr:`~agentmem.arms.base.ArmBase.candidate_param`).
    """
    return arm_cls.capabilities.filter_stage != "none" and bool(
        getattr(arm_cls, "candidate_param", None)
    )


def candidate_value(arm_cls: type, x: int, k: int) -> int:
    """The value the sweep gives ``arm_cls.candidate_param`` at factor ``x``, cut-off ``k``.

    ``x`` for a ``"per-result"`` parameter (``overfetch``), ``k * x`` for a ``"list"`` one
    (``ef``) (:attr:`~agentmem.arms.base.ArmBase.candidate_unit`).
    """
    return k * x if getattr(arm_cls, "candidate_unit", "per-result") == "list" else x


def is_reference(arm_cls: type) -> bool:
    """True for a reference line: dense HNSW search, no text access, predicate inside it."""
    cap = arm_cls.capabilities
    return (
        cap.vector_access.startswith("hnsw")
        and cap.text_access == "none"
        and cap.filter_stage == "in-search"
    )


def postfilter_roles(arm_names: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split configured arms into the swept ones and the reference lines, by declaration.

    Args:
        arm_names: configured arm names (``agentmem.arms.ARMS`` keys).

    Returns:
        ``(swept, references)`` in ``arm_names`` order (:func:`is_swept`,
        :func:`is_reference`); arms playing neither role are left out.

    Raises:
        KeyError: on a name that is not registered.
    """
    names = list(arm_names)
    unknown = [a for a in names if a not in ARMS]
    if unknown:
        raise KeyError(f"unknown arms {unknown}; known arms: {sorted(ARMS)}")
    swept = [a for a in names if is_swept(ARMS[a])]
    refs = [a for a in names if a not in swept and is_reference(ARMS[a])]
    return swept, refs


def filtered_queries(queries: Iterable[Query]) -> list[Query]:
    """Return the queries that carry a structured predicate, in their original order."""
    return [q for q in queries if q.predicate is not None]


def predicate_slots(memories: pl.DataFrame, queries: Iterable[Query], k: int) -> dict[str, int]:
    """Result slots an exact filtered search would fill, per query.

    Args:
        memories: the corpus memories (must hold the predicate columns created_day,
            session_id, fact_id, superseded_by; ``scope_id`` when a query has a scope).
        queries: queries with a predicate (queries without one are skipped).
        k: cut-off.

    Returns:
        ``{query_id: min(k, number of memories in the query's scope satisfying the
        predicate)}`` (every arm applies the scope, so a slot outside it cannot be filled).
    """
    filtered = {q.query_id: q.filters for q in queries if q.predicate is not None}
    return {qid: min(k, n) for qid, n in searchable_counts(memories, filtered).items()}


def relevant_sets(qrels: pl.DataFrame) -> dict[str, set[str]]:
    """Group ``qrels`` (query_id, memory_id, ...) into ``{query_id: {memory_id, ...}}``."""
    rel: dict[str, set[str]] = {}
    for qid, mid in zip(qrels["query_id"], qrels["memory_id"], strict=True):
        rel.setdefault(qid, set()).add(mid)
    return rel


def measure_filtered(
    arm: Arm,
    queries: list[Query],
    slots: Mapping[str, int],
    relevant: Mapping[str, set[str]],
    k: int = 10,
) -> dict[str, float | None]:
    """Run every query once on an open arm and average fill and recall.

    Args:
        arm: an open arm.
        queries: the filtered queries.
        slots: ``{query_id: slots}`` from :func:`predicate_slots`.
        relevant: ``{query_id: relevant memory ids}``.
        k: cut-off.

    Returns:
        ``mean_slots_filled``, ``fill_rate`` (mean :func:`agentmem.metrics.fill_rate`)
        and ``recall_at_10`` (all ``None`` when ``queries`` is empty).

    Raises:
        ValueError: when a query has no qrels (recall is undefined).
    """
    returned, fills, recalls = [], [], []
    for q in queries:
        if not relevant.get(q.query_id):
            raise ValueError(f"query {q.query_id} has no qrels")
        ids = arm.query(q, k).memory_ids[:k]
        s = slots[q.query_id]
        returned.append(len(ids))
        fills.append(fill_rate(len(ids), k, s))
        recalls.append(recall_at_k(ids, relevant[q.query_id], k))
    if not queries:
        return {"mean_slots_filled": None, "fill_rate": None, "recall_at_10": None}
    return {
        "mean_slots_filled": float(np.mean(returned)),
        "fill_rate": float(np.mean(fills)),
        "recall_at_10": float(np.mean(recalls)),
    }


def postfilter_sweep(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    stores: Mapping[str, str | Path],
    overfetch: Iterable[int] = DEFAULT_OVERFETCH,
    k: int = 10,
    arm_params: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> pl.DataFrame:
    """Sweep each post-filtering arm's candidate factor over the filtered queries; add references.

    Each swept arm in ``stores`` (:func:`is_swept`) is reopened once per factor ``x``
    with its configured parameters and its ``candidate_param`` set for ``x``
    (:func:`candidate_value`: ``overfetch=x`` for ``file-vec-meta``, ``ef=k*x`` for an
    HNSW ``ef``); every other arm in ``stores`` (normally the
    references of :func:`postfilter_roles`) is reopened once with its parameters and
    gives one reference row (``overfetch`` null, ``fetched = k``, ``scan_fraction``
    null). Every arm opened is closed (embedded PostgreSQL servers stopped), also on
    errors.

    Args:
        corpus_dir: corpus directory (memories, queries, qrels Parquet files).
        embeddings_path: the size's embeddings Parquet (query vectors).
        stores: ``{arm name: store directory built by the pipeline}``.
        overfetch: factors to sweep (deduplicated, ascending; each >= 1).
        k: result slots per query.
        arm_params: ``{arm name: constructor parameters}`` as in the config's
            ``arm_params`` (the swept factor overrides the configured one).

    Returns:
        One row per (arm, overfetch) with the columns of :data:`POSTFILTER_SCHEMA`:
        the swept arms first (each in ascending overfetch), then the reference arms, in
        ``stores`` order.

    Raises:
        ValueError: on a factor < 1 or ``k < 1``, or a filtered query without qrels.
        KeyError: on an unknown arm name.
        agentmem.arms.base.ArmError: when a store cannot be opened or queried.
        agentmem.corpus.io.CorpusError: when the corpus directory is incomplete.
    """
    # here, not at the top: the workflow's DAG imports this module for postfilter_roles only
    from agentmem.corpus.io import load_corpus, load_qrels, load_queries
    from agentmem.embeddings import load_embeddings
    from agentmem.runner import opened

    factors = sorted({int(x) for x in overfetch})
    if k < 1 or any(x < 1 for x in factors):
        raise ValueError(f"need k >= 1 and overfetch factors >= 1, got k={k}, {factors}")
    params = {name: dict(p or {}) for name, p in (arm_params or {}).items()}
    corpus = load_corpus(corpus_dir)
    n = corpus.memories.height
    queries = filtered_queries(load_queries(corpus_dir, load_embeddings(embeddings_path)))
    slots = predicate_slots(corpus.memories, queries, k)
    relevant = relevant_sets(load_qrels(corpus_dir))

    def run(name: str, store: str | Path, p: dict[str, Any]) -> dict[str, float | None]:
        with opened(name, p, store) as arm:
            return measure_filtered(arm, queries, slots, relevant, k)

    unknown = [a for a in stores if a not in ARMS]
    if unknown:
        raise KeyError(f"unknown arms {unknown}; known arms: {sorted(ARMS)}")
    swept = [a for a in stores if is_swept(ARMS[a])]
    rows: list[dict[str, Any]] = []
    for name in swept:
        candidate = str(ARMS[name].candidate_param)  # type: ignore[attr-defined]
        for x in factors:
            fetched = min(k * x, n)
            value = candidate_value(ARMS[name], x, k)
            m = run(name, stores[name], {**params.get(name, {}), candidate: value})
            rows.append(
                {
                    "arm": name,
                    "overfetch": x,
                    "fetched": fetched,
                    **m,
                    "scan_fraction": fetched / n if n else None,
                }
            )
    for name, store in stores.items():
        if name in swept:
            continue
        m = run(name, store, params.get(name, {}))
        rows.append({"arm": name, "overfetch": None, "fetched": k, **m, "scan_fraction": None})
    return pl.DataFrame(rows, schema=POSTFILTER_SCHEMA)
