"""Running the conversation sweep: build the conversations, drive every strategy, write CSVs."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from agentmem.arms.base import Embeddings, Query
from agentmem.config import ConversationConfig
from agentmem.corpus.io import load_corpus
from agentmem.embeddings import load_embeddings
from agentmem.sweeps.conversation.probes import probe_questions, schedule_probes
from agentmem.sweeps.conversation.records import Conversation
from agentmem.sweeps.conversation.schemas import CONVERSATION_SCHEMA, PROBE_SCHEMA, TIER_SCHEMA
from agentmem.sweeps.conversation.strategies import (
    AppendStrategy,
    ArmStrategy,
    Strategy,
    make_conversation_arm,
)
from agentmem.sweeps.conversation.stream import (
    remember_frame,
    topic_stream,
    window_stream,
)
from agentmem.sweeps.conversation.summary import summarise_conversation, summarise_tiers
from agentmem.tokens import count_tokens


@dataclass
class ConversationRun:
    """Everything one :func:`run_conversations` measured.

    Attributes:
        table: per strategy x conversation x turn (:data:`CONVERSATION_SCHEMA`).
        tiers: per assembling arm x conversation x turn (:data:`TIER_SCHEMA`; empty when
            no :class:`~agentmem.arms.context.ContextAssembler` arm ran).
        probes: one row per probe (:data:`PROBE_SCHEMA`).
    """

    table: pl.DataFrame
    tiers: pl.DataFrame
    probes: pl.DataFrame


def run_conversations(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    work_dir: str | Path,
    settings: ConversationConfig | Mapping[str, Any],
    arm_params: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> ConversationRun:
    """Simulate the conversations and measure every strategy.

    The sweep's settings are :class:`agentmem.config.ConversationConfig` (config
    ``seed_systems.conversation``): its fields, bounds and defaults are the only ones, and
    a mapping given instead is validated through it. Conversations, probes, strategies and
    measures: ``docs/experiments/conversation.md``.

    Args:
        corpus_dir: corpus directory (memories, facts, queries, qrels Parquet files).
        embeddings_path: embeddings Parquet holding every memory and query id.
        work_dir: scratch directory for the arms' stores (``work_dir/<arm>``; embedded
            PostgreSQL servers are stopped before returning).
        settings: the sweep's settings. Conversation ``c`` draws its stream and probes
            from ``random.Random(seed * 1000 + c)``; ``l1_max_tokens`` defines a probe's
            ``beyond_l1`` and, like ``summariser``, is passed to arms taking it; ``arms``
            are driven in this order after ``append``.
        arm_params: constructor parameters by arm name (config ``arm_params``; None: none).

    Returns:
        :class:`ConversationRun`.

    Raises:
        ValueError: on a setting out of its bounds (pydantic's ValidationError), a repeated
            or unknown arm, parameters an arm refuses, or a corpus too small for one
            conversation.
        agentmem.arms.base.ArmError: when an arm's store fails.
    """
    cfg = (
        settings
        if isinstance(settings, ConversationConfig)
        else ConversationConfig.model_validate(dict(settings))
    )
    conversations, turns, k, seed = cfg.conversations, cfg.turns, cfg.k, cfg.seed
    probes_every, min_gap, memories_per_turn = cfg.probes_every, cfg.min_gap, cfg.memories_per_turn
    l1_max_tokens, sampling = cfg.l1_max_tokens, cfg.sampling
    arms = list(cfg.arms)
    if len(set(arms)) != len(arms):
        raise ValueError(f"arms: duplicate names in {arms}")
    sweep_params = {"l1_max_tokens": l1_max_tokens, "summariser": cfg.summariser}
    params = dict(arm_params or {})
    for name in arms:  # fail on a bad name or parameter before any store is made
        make_conversation_arm(name, params.get(name), sweep_params).close()
    corpus_dir, work_dir = Path(corpus_dir), Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)

    corpus = load_corpus(corpus_dir)
    memories = corpus.memories
    if "tokens" not in memories.columns:
        memories = memories.with_columns(
            tokens=pl.Series(count_tokens(memories["body"].to_list()), dtype=pl.Int32)
        )
    vectors = load_embeddings(embeddings_path)
    questions = probe_questions(
        memories,
        pl.read_parquet(corpus_dir / "queries.parquet"),
        pl.read_parquet(corpus_dir / "qrels.parquet"),
        vectors,
    )
    sup = memories.filter(pl.col("superseded_by").is_not_null())
    correction_of = {
        f: c for f, c in zip(sup["fact_id"], sup["superseded_by"], strict=True) if f is not None
    }
    subject_of: dict[str, str] = {}
    if corpus.facts is not None and "subject_id" in corpus.facts.columns:
        subject_of = dict(zip(corpus.facts["fact_id"], corpus.facts["subject_id"], strict=True))

    n = turns * memories_per_turn
    convs: list[Conversation] = []
    for c in range(conversations):
        rng = random.Random(seed * 1000 + c)
        if sampling == "window":
            stream = window_stream(memories, n, rng)
        else:
            stream = topic_stream(memories, n, rng, set(questions), subject_of)
        ids = stream["memory_id"].to_list()
        turn_of = [i // memories_per_turn + 1 for i in range(n)]
        vecs = np.ascontiguousarray(vectors.get(ids), dtype=np.float32)
        conv = Conversation(
            index=c,
            rows=list(stream.iter_rows(named=True)),
            ids=ids,
            bodies=stream["body"].to_list(),
            tokens=stream["tokens"].cast(pl.Int64).to_numpy(),
            vectors=vecs,
            turn_of=turn_of,
            turns=[range(t * memories_per_turn, (t + 1) * memories_per_turn) for t in range(turns)],
            frame=remember_frame(stream, turn_of),
            embeddings=Embeddings(ids, vecs),
        )
        schedule_probes(conv, questions, correction_of, probes_every, min_gap, l1_max_tokens, rng)
        convs.append(conv)

    made: list[Strategy] = [AppendStrategy()]
    for name in arms:
        made.append(
            ArmStrategy(
                name,
                lambda name=name: make_conversation_arm(name, params.get(name), sweep_params),
                k,
                work_dir / name,
                corpus,
            )
        )
    rows: list[dict[str, Any]] = []
    tier_rows: list[dict[str, Any]] = []
    try:
        for strat in made:
            for conv in convs:
                strat.begin(conv)
                cum = 0
                for t in range(1, turns + 1):
                    probe = conv.probes.get(t)
                    if probe is not None:
                        q = probe.question
                        qid, text, vec = q.query_id, q.text, q.vector
                    else:
                        cur = conv.turns[t - 1]
                        qid, text = f"turn-{conv.index}-{t}", "\n".join(conv.bodies[i] for i in cur)
                        vec = conv.vectors[cur.start : cur.stop].mean(axis=0)
                        norm = float(np.linalg.norm(vec))
                        vec = (vec / norm if norm > 0 else vec).astype(np.float32)
                    ctx = strat.turn(t, Query(qid, text, vec))
                    cum += ctx.tokens
                    rows.append(
                        {
                            "strategy": strat.name,
                            "conversation": conv.index,
                            "turn": t,
                            "context_tokens": ctx.tokens,
                            "cumulative_tokens": cum,
                            "probe": probe.question.query_id if probe else None,
                            "probe_hit": bool(ctx.ids & probe.gold) if probe else None,
                            "latency_ms": ctx.latency_ms,
                            "remember_ms": ctx.remember_ms,
                        }
                    )
                    if ctx.tier is not None:
                        tier_rows.append(
                            {"strategy": strat.name, "conversation": conv.index, "turn": t}
                            | ctx.tier
                        )
    finally:
        for strat in made:
            strat.close()
    probe_rows = [p.row for conv in convs for _, p in sorted(conv.probes.items())]
    return ConversationRun(
        table=pl.DataFrame(rows, schema=CONVERSATION_SCHEMA, orient="row"),
        tiers=pl.DataFrame(tier_rows, schema=TIER_SCHEMA, orient="row"),
        probes=pl.DataFrame(probe_rows, schema=PROBE_SCHEMA, orient="row"),
    )


def conversation_sweep(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    work_dir: str | Path,
    settings: ConversationConfig | Mapping[str, Any],
    arm_params: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> pl.DataFrame:
    """Return the per-turn table of :func:`run_conversations` (:data:`CONVERSATION_SCHEMA`).

    Columns ``strategy, conversation, turn, context_tokens, cumulative_tokens, probe,
    probe_hit, latency_ms, remember_ms``; one row per strategy x conversation x turn
    (``append``, then ``arms`` in their order; conversations from 0, turns from 1).

    Args:
        corpus_dir: corpus directory.
        embeddings_path: embeddings Parquet.
        work_dir: scratch directory for the stores.
        settings: the sweep's settings (:func:`run_conversations`).
        arm_params: constructor parameters by arm name.

    Raises:
        ValueError: as :func:`run_conversations`.
    """
    return run_conversations(corpus_dir, embeddings_path, work_dir, settings, arm_params).table


def write_conversation_sweep(
    table_path: str | Path,
    summary_path: str | Path,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    work_dir: str | Path,
    *,
    settings: ConversationConfig | Mapping[str, Any],
    arm_params: Mapping[str, Mapping[str, Any] | None] | None = None,
    tiers_path: str | Path | None = None,
    probes_path: str | Path | None = None,
) -> ConversationRun:
    """Run :func:`run_conversations` and write its tables as CSV (atomically).

    Args:
        table_path: per-turn table (``results/sweeps/conversation.csv``).
        summary_path: :func:`summarise_conversation` of the run, with tiers and probes
            (``results/sweeps/conversation_summary.csv``).
        corpus_dir: corpus directory.
        embeddings_path: embeddings Parquet.
        work_dir: scratch directory for the stores.
        tiers_path: optional CSV for :func:`summarise_tiers`.
        probes_path: optional CSV for the probe rows (:data:`PROBE_SCHEMA`).
        settings: the sweep's settings (:func:`run_conversations`).
        arm_params: constructor parameters by arm name.

    Returns:
        The :class:`ConversationRun`.
    """
    from agentmem.io import write_csv

    run = run_conversations(corpus_dir, embeddings_path, work_dir, settings, arm_params)
    write_csv(table_path, run.table)
    write_csv(summary_path, summarise_conversation(run.table, run.tiers, run.probes))
    if tiers_path is not None:
        write_csv(tiers_path, summarise_tiers(run.tiers))
    if probes_path is not None:
        write_csv(probes_path, run.probes)
    return run
