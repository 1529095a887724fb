"""Column schemas of the conversation sweep's tables (per turn, per tier, per probe, summaries)."""

from __future__ import annotations

import polars as pl

#: Columns of the per-turn table (``results/sweeps/conversation.csv``).
CONVERSATION_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "conversation": pl.Int64,
    "turn": pl.Int64,
    "context_tokens": pl.Int64,
    "cumulative_tokens": pl.Int64,
    "probe": pl.String,
    "probe_hit": pl.Boolean,
    "latency_ms": pl.Float64,
    "remember_ms": pl.Float64,
}
#: Per-turn tier data of an assembling arm (``strategy``): tokens per tier in the context,
#: assemble time per tier, and at probe turns the tiers holding a gold memory
#: (space-separated, ``""`` for a miss; null at other turns).
TIER_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "conversation": pl.Int64,
    "turn": pl.Int64,
    "l1_tokens": pl.Int64,
    "l2_tokens": pl.Int64,
    "l3_tokens": pl.Int64,
    "l1_ms": pl.Float64,
    "l2_ms": pl.Float64,
    "l3_ms": pl.Float64,
    "hit_tiers": pl.String,
}
#: One row per probe: the question, its fact, the turn the fact was first stated and the
#: gap in turns, ``gold_tokens_since`` (o200k tokens from the newest gold memory through
#: the end of the probe turn: when it exceeds ``l1_max_tokens``, ``beyond_l1``, no gold
#: memory can still be in three-tier's L1), whether the fact is corrected in the corpus and
#: whether that correction was seen by the probe turn, the gold ids (space-separated).
PROBE_SCHEMA: dict[str, pl.DataType] = {
    "conversation": pl.Int64,
    "turn": pl.Int64,
    "probe": pl.String,
    "query_class": pl.String,
    "fact_id": pl.String,
    "first_turn": pl.Int64,
    "gap": pl.Int64,
    "gold_tokens_since": pl.Int64,
    "beyond_l1": pl.Boolean,
    "corrected": pl.Boolean,
    "correction_seen": pl.Boolean,
    "gold": pl.String,
}


#: Columns of :func:`summarise_conversation`.
SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "conversations": pl.Int64,
    "turns": pl.Int64,
    "cumulative_tokens": pl.Int64,
    "tokens_vs_append_pct": pl.Float64,
    "max_context_tokens": pl.Int64,
    "p95_context_tokens": pl.Float64,
    "mean_context_tokens": pl.Float64,
    "probes": pl.Int64,
    "long_range_recall": pl.Float64,
    "beyond_l1_probes": pl.Int64,
    "beyond_l1_recall": pl.Float64,
    "corrected_probes": pl.Int64,
    "corrected_recall": pl.Float64,
    "p50_latency_ms": pl.Float64,
    "p95_latency_ms": pl.Float64,
    "p50_remember_ms": pl.Float64,
    "p95_remember_ms": pl.Float64,
    "p50_l1_ms": pl.Float64,
    "p50_l2_ms": pl.Float64,
    "p50_l3_ms": pl.Float64,
}


#: Columns of :func:`summarise_tiers`.
TIER_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "tier": pl.String,
    "p50_assemble_ms": pl.Float64,
    "p95_assemble_ms": pl.Float64,
    "mean_tokens": pl.Float64,
    "max_tokens": pl.Int64,
    "claimed_ms": pl.String,
}
