"""Figure: long-conversation token economics and long-range recall per strategy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.report.colors import arm_color
from agentmem.report.figures._common import save, subplots

#: The seed's claims (docs/STUDY.md §5), drawn as reference marks.
CLAIM_REDUCTION_PCT = -89.9
CLAIM_CAP_TOKENS = 3250
CLAIM_RECALL = 0.968
CLAIM_VECTOR_RECALL = 0.684


def plot(table_csv: str | Path, out_svg: str | Path) -> None:
    """Draw cumulative tokens, per-turn context tokens and probe hit rate per strategy.

    Reads ``results/sweeps/conversation.csv`` (columns ``strategy, conversation, turn,
    context_tokens, cumulative_tokens, probe, probe_hit, latency_ms``). Left: cumulative
    tokens vs turn (mean over conversations, log y) with each strategy's end value vs
    ``append`` beside the seed's -89.9 %. Middle: per-turn context tokens (mean over
    conversations, log y) with the seed's ~3,250-token cap. Right: probe hit rate per
    strategy (share of probe turns whose context held the gold memory) with the seed's
    96.8 % (three-tier) and 68.4 % (vector only).
    """
    t = pl.read_csv(table_csv, schema_overrides={"probe": pl.String})
    strategies = list(dict.fromkeys(t["strategy"].to_list()))
    mean = (
        t.group_by("strategy", "turn")
        .agg(pl.col("cumulative_tokens").mean(), pl.col("context_tokens").mean())
        .sort("turn")
    )
    ends = (
        t.group_by("strategy", "conversation")
        .agg(pl.col("cumulative_tokens").max())
        .group_by("strategy")
        .agg(pl.col("cumulative_tokens").sum())
    )
    end = dict(ends.iter_rows())
    fig, axes = subplots(1, 3, figsize=(12, 3.6), gridspec_kw={"width_ratios": [1.2, 1.2, 1]})
    ax_cum, ax_ctx, ax_hit = axes
    for s in strategies:
        m = mean.filter(pl.col("strategy") == s)
        color = arm_color(s)
        ax_cum.plot(m["turn"], m["cumulative_tokens"], label=s, color=color, lw=1.4)
        ax_ctx.plot(m["turn"], m["context_tokens"], label=s, color=color, lw=1.0)
    ax_cum.set_yscale("log")
    ax_cum.set_xlabel("turn")
    ax_cum.set_ylabel("cumulative context tokens (o200k, mean)")
    ax_cum.set_title("Cumulative tokens")
    base = end.get("append")
    if base:
        lines = [f"{s}: {100.0 * (end[s] / base - 1.0):+.1f}%" for s in strategies if s != "append"]
        lines.append(f"seed claim (three-tier): {CLAIM_REDUCTION_PCT:+.1f}%")
        ax_cum.text(
            0.98,
            0.03,
            "vs append at the end\n" + "\n".join(lines),
            transform=ax_cum.transAxes,
            ha="right",
            va="bottom",
            fontsize=7,
        )
    ax_cum.legend(frameon=False, fontsize=7, loc="upper left")

    ax_ctx.axhline(CLAIM_CAP_TOKENS, color="black", ls="--", lw=0.8)
    ax_ctx.text(
        ax_ctx.get_xlim()[0],
        CLAIM_CAP_TOKENS * 1.08,
        " seed cap ~3,250",
        fontsize=7,
        va="bottom",
    )
    ax_ctx.set_yscale("log")
    ax_ctx.set_xlabel("turn")
    ax_ctx.set_ylabel("context tokens per turn (mean)")
    peak = dict(t.group_by("strategy").agg(pl.col("context_tokens").max()).iter_rows())
    ax_ctx.set_title(
        "Per-turn context; max: " + ", ".join(f"{s} {peak[s]:,}" for s in strategies),
        fontsize=7,
    )

    probes = t.filter(pl.col("probe").is_not_null())
    hit = dict(
        probes.group_by("strategy").agg(pl.col("probe_hit").cast(pl.Float64).mean()).iter_rows()
    )
    x = np.arange(len(strategies))
    vals = [hit.get(s, np.nan) for s in strategies]
    bars = ax_hit.bar(x, vals, color=[arm_color(s) for s in strategies])
    ax_hit.bar_label(bars, labels=[f"{v:.0%}" if v == v else "" for v in vals], fontsize=7)
    ax_hit.axhline(CLAIM_RECALL, color="black", ls="--", lw=0.8)
    ax_hit.axhline(CLAIM_VECTOR_RECALL, color="black", ls=":", lw=0.8)
    for y, label in ((CLAIM_RECALL, "seed:\nthree-tier\n96.8%"),
                     (CLAIM_VECTOR_RECALL, "seed:\nvector only\n68.4%")):  # fmt: skip
        ax_hit.text(len(strategies) - 0.4, y, label, fontsize=6, ha="left", va="center",
                    clip_on=False)  # fmt: skip
    ax_hit.set_xticks(x, strategies, rotation=20, fontsize=7)
    ax_hit.set_ylim(0, 1.1)
    ax_hit.set_ylabel(f"probe hit rate ({probes.height // max(len(strategies), 1)} probes)")
    ax_hit.set_title("Long-range recall")
    fig.tight_layout()
    save(fig, out_svg)
