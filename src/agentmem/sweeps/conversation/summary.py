"""Per-strategy and per-tier summaries of a conversation run, beside the seed's claims."""

from __future__ import annotations

from typing import Any

import polars as pl

from agentmem.arms.context import TIERS
from agentmem.sweeps.conversation.schemas import SUMMARY_SCHEMA, TIER_SUMMARY_SCHEMA
from agentmem.sweeps.conversation.strategies import APPEND

#: The seed's claims (docs/STUDY.md §5): cumulative tokens vs append (%), per-turn cap
#: (tokens), long-range recall of three-tier and of vector-only memory, and latency
#: budgets per tier (ms; L2 and L3 as ranges).
SEED_CLAIMS: dict[str, Any] = {
    "tokens_vs_append_pct": -89.9,
    "context_cap_tokens": 3250,
    "long_range_recall": 0.968,
    "vector_only_recall": 0.684,
    "l1_ms": (0.0, 2.0),
    "l2_ms": (5.0, 15.0),
    "l3_ms": (15.0, 40.0),
}


def summarise_conversation(
    df: pl.DataFrame,
    tiers: pl.DataFrame | None = None,
    probes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Reduce the per-turn table to one row per strategy (:data:`SUMMARY_SCHEMA`).

    Definitions (per strategy, over all its conversations):

    - ``cumulative_tokens``: sum over conversations of the last turn's cumulative tokens;
    - ``tokens_vs_append_pct = 100 * (cumulative_tokens / cumulative_tokens(append) - 1)``
      (negative = fewer tokens; the seed claims -89.9 for three-tier memory; null without
      an ``append`` row);
    - ``max_context_tokens`` / ``p95_context_tokens`` / ``mean_context_tokens``: of the
      per-turn context (the cap actually reached; the seed claims ~3,250);
    - ``long_range_recall``: share of probes with ``probe_hit`` (seed: 0.968 three-tier
      memory, 0.684 vector only);
    - ``beyond_l1_probes`` / ``beyond_l1_recall``: probes whose gold had left any L1 of
      ``l1_max_tokens`` (``beyond_l1`` in ``probes``) and their hit share — for an
      assembling arm these must come from L2 or L3 (null without ``probes``);
    - ``corrected_probes`` / ``corrected_recall``: probes whose fact's correction had been
      seen (gold = the correction), and their hit share (null without ``probes``, or no
      such probe);
    - ``p50_latency_ms`` / ``p95_latency_ms``: context assembly time per turn;
    - ``p50_remember_ms`` / ``p95_remember_ms``: the turn's ``remember`` call (null for
      ``append``);
    - ``p50_l1_ms`` / ``p50_l2_ms`` / ``p50_l3_ms``: for strategies with rows in ``tiers``
      (the assembling arms), the median assembly time of each tier (seed budgets: L1 < 2,
      L2 5-15, L3 15-40 ms); null otherwise.

    Args:
        df: the per-turn table (:data:`CONVERSATION_SCHEMA`).
        tiers: optional :attr:`ConversationRun.tiers`.
        probes: optional :attr:`ConversationRun.probes`.

    Returns:
        One row per strategy, in the order they first appear in ``df``.
    """
    order = list(dict.fromkeys(df["strategy"].to_list()))
    last = df.group_by("strategy", "conversation").agg(pl.col("cumulative_tokens").max())
    cum = dict(last.group_by("strategy").agg(pl.col("cumulative_tokens").sum()).iter_rows())
    seen = beyond = None
    if probes is not None:
        seen = probes.filter(pl.col("correction_seen")).select("conversation", "turn")
        beyond = probes.filter(pl.col("beyond_l1")).select("conversation", "turn")
    tier_p50: dict[str, dict[str, float]] = {}
    if tiers is not None and tiers.height:
        for (name,), g in tiers.group_by("strategy", maintain_order=True):
            tier_p50[str(name)] = {
                tier: float(g[f"{tier.lower()}_ms"].quantile(0.5, "linear")) for tier in TIERS
            }
    out = []
    for s in order:
        d = df.filter(pl.col("strategy") == s)
        pr = d.filter(pl.col("probe").is_not_null())
        corr = pr.join(seen, on=["conversation", "turn"]) if seen is not None else pr.clear()
        far = pr.join(beyond, on=["conversation", "turn"]) if beyond is not None else pr.clear()
        base = cum.get(APPEND)
        rem = d["remember_ms"].drop_nulls() if "remember_ms" in d.columns else pl.Series([])
        tp = tier_p50.get(s, {})
        out.append(
            {
                "strategy": s,
                "conversations": d["conversation"].n_unique(),
                "turns": d.height // max(d["conversation"].n_unique(), 1),
                "cumulative_tokens": int(cum[s]),
                "tokens_vs_append_pct": (100.0 * (cum[s] / base - 1.0)) if base else None,
                "max_context_tokens": int(d["context_tokens"].max()),
                "p95_context_tokens": float(d["context_tokens"].quantile(0.95, "linear")),
                "mean_context_tokens": float(d["context_tokens"].mean()),
                "probes": pr.height,
                "long_range_recall": float(pr["probe_hit"].mean()) if pr.height else None,
                "beyond_l1_probes": far.height if probes is not None else None,
                "beyond_l1_recall": float(far["probe_hit"].mean()) if far.height else None,
                "corrected_probes": corr.height if probes is not None else None,
                "corrected_recall": float(corr["probe_hit"].mean()) if corr.height else None,
                "p50_latency_ms": float(d["latency_ms"].quantile(0.5, "linear")),
                "p95_latency_ms": float(d["latency_ms"].quantile(0.95, "linear")),
                "p50_remember_ms": float(rem.quantile(0.5, "linear")) if rem.len() else None,
                "p95_remember_ms": float(rem.quantile(0.95, "linear")) if rem.len() else None,
                "p50_l1_ms": tp.get("L1"),
                "p50_l2_ms": tp.get("L2"),
                "p50_l3_ms": tp.get("L3"),
            }
        )
    return pl.DataFrame(out, schema=SUMMARY_SCHEMA, orient="row")


def summarise_tiers(tiers: pl.DataFrame) -> pl.DataFrame:
    """Per-tier latency and context share of each assembling arm (:data:`TIER_SUMMARY_SCHEMA`).

    ``*_assemble_ms``: time of the tier's part of ``assemble_context`` per turn;
    ``mean_tokens``/``max_tokens``: the tier's tokens in the context; ``claimed_ms``: the
    seed's budget (docs/STUDY.md §5). The write side is the ``remember_ms`` column of the
    per-turn table (one ``remember`` call per turn, every tier included).

    Args:
        tiers: :attr:`ConversationRun.tiers`.

    Returns:
        Rows ``L1``, ``L2``, ``L3`` per strategy, strategies in first-seen order (empty
        when ``tiers`` is empty).
    """
    out = []
    for (name,), g in tiers.group_by("strategy", maintain_order=True):
        for tier in TIERS:
            lo, hi = SEED_CLAIMS[f"{tier.lower()}_ms"]
            a = g[f"{tier.lower()}_ms"]
            tok = g[f"{tier.lower()}_tokens"]
            out.append(
                {
                    "strategy": name,
                    "tier": tier,
                    "p50_assemble_ms": float(a.quantile(0.5, "linear")),
                    "p95_assemble_ms": float(a.quantile(0.95, "linear")),
                    "mean_tokens": float(tok.mean()),
                    "max_tokens": int(tok.max()),
                    "claimed_ms": f"< {hi:g}" if lo == 0 else f"{lo:g}-{hi:g}",
                }
            )
    return pl.DataFrame(out, schema=TIER_SUMMARY_SCHEMA, orient="row")
