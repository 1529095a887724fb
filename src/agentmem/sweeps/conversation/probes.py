"""Probe questions: which corpus queries can probe a fact, and when each conversation asks them.

The scheduling rules (gap draw, corrected facts, gold): docs/experiments/conversation.md.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from agentmem.sweeps.conversation.records import Conversation, Probe, ProbeQuestion

#: Query classes whose questions are about one fact and can serve as probes.
PROBE_CLASSES: tuple[str, ...] = (
    "lexical",
    "semantic",
    "hybrid",
    "currency",
    "negation",
    "aggregate",
)


def probe_questions(
    memories: pl.DataFrame, queries: pl.DataFrame, qrels: pl.DataFrame, vectors: Any
) -> dict[str, ProbeQuestion]:
    """Map each fact that has a single-fact corpus query to that query.

    A query qualifies when its class is in :data:`PROBE_CLASSES` and all its relevant
    memories belong to one fact (the corpus draws each fact for at most one query; should
    two qualify, the smaller query id wins).

    Args:
        memories: corpus memories (memory_id, fact_id).
        queries: ``queries.parquet`` rows (query_id, class, text).
        qrels: ``qrels.parquet`` rows (query_id, memory_id).
        vectors: :class:`~agentmem.arms.base.Embeddings` holding the query ids.

    Returns:
        ``{fact_id: ProbeQuestion}``.

    Raises:
        KeyError: when a qualifying query has no embedding.
    """
    facts = (
        qrels.join(memories.select("memory_id", "fact_id"), on="memory_id", how="left")
        .group_by("query_id")
        .agg(n=pl.col("fact_id").n_unique(), fact_id=pl.col("fact_id").first())
        .filter((pl.col("n") == 1) & pl.col("fact_id").is_not_null())
    )
    q = (
        queries.filter(pl.col("class").is_in(PROBE_CLASSES))
        .join(facts.select("query_id", "fact_id"), on="query_id", how="inner")
        .sort("query_id")
    )
    out: dict[str, ProbeQuestion] = {}
    for row in q.iter_rows(named=True):
        if row["fact_id"] in out:
            continue
        vec = np.asarray(vectors.get([row["query_id"]])[0], dtype=np.float32)
        out[row["fact_id"]] = ProbeQuestion(
            row["query_id"], row["class"], row["text"], vec, row["fact_id"]
        )
    return out


def schedule_probes(
    conv: Conversation,
    questions: Mapping[str, ProbeQuestion],
    correction_of: Mapping[str, str],
    probes_every: int,
    min_gap: int,
    l1_max_tokens: int,
    rng: random.Random,
) -> None:
    """Fill ``conv.probes`` (rules in docs/experiments/conversation.md)."""
    first: dict[str, int] = {}
    seen_at: dict[str, int] = {}
    fact_mems: dict[str, list[tuple[int, str, int]]] = {}
    for pos, row in enumerate(conv.rows):
        f = row["fact_id"]
        t = conv.turn_of[pos]
        seen_at.setdefault(row["memory_id"], t)
        if f is not None:
            first.setdefault(f, t)
            fact_mems.setdefault(f, []).append((t, row["memory_id"], pos))
    cum = np.concatenate([[0], np.cumsum(conv.tokens)])
    n_probes = 0
    for t in range(1, len(conv.turns) + 1):
        if t % probes_every:
            continue
        eligible = sorted(f for f in questions if f in first and first[f] <= t - min_gap)
        if not eligible:
            continue

        def corr_seen(f: str, t: int = t) -> bool:
            c = correction_of.get(f)
            return c is not None and seen_at.get(c, t + 1) <= t

        pool = eligible
        if n_probes % 3 == 2:
            pool = (
                [f for f in pool if corr_seen(f)] or [f for f in pool if f in correction_of] or pool
            )
        # gap drawn uniformly; the pool fact first stated nearest that many turns ago
        target = t - rng.randint(min_gap, t - 1) if t - 1 >= min_gap else 1
        best = min(abs(first[f] - target) for f in pool)
        f = rng.choice([f for f in pool if abs(first[f] - target) == best])
        n_probes += 1
        q = questions[f]
        seen = corr_seen(f)
        gold_pos = (
            [p for _, m, p in fact_mems[f] if m == correction_of[f] and seen_at[m] <= t]
            if seen
            else [p for tt, m, p in fact_mems[f] if tt <= t and m != correction_of.get(f)]
        )
        gold = frozenset(conv.ids[p] for p in gold_pos)
        since = int(cum[conv.turns[t - 1].stop] - cum[max(gold_pos)])
        conv.probes[t] = Probe(
            question=q,
            gold=gold,
            row={
                "conversation": conv.index,
                "turn": t,
                "probe": q.query_id,
                "query_class": q.query_class,
                "fact_id": f,
                "first_turn": first[f],
                "gap": t - first[f],
                "gold_tokens_since": since,
                "beyond_l1": since > l1_max_tokens,
                "corrected": f in correction_of,
                "correction_seen": seen,
                "gold": " ".join(sorted(gold)),
            },
        )
