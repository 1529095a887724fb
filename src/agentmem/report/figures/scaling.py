"""Figure: scaling with corpus size — p50 latency (log-log) and nDCG@10, one line per arm."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.report.colors import arm_style
from agentmem.report.figures._common import save, subplots


def plot(scaling_csv: str | Path, out_svg: str | Path) -> None:
    """Two panels over memories: p50 latency (log-log) and nDCG@10 (log x).

    Args:
        scaling_csv: ``results/sweeps/scaling.csv`` (arm, size, memories, ..., p50_ms,
            ndcg_at_10, ...).
        out_svg: SVG path; a PNG is written beside it.
    """
    t = pl.read_csv(scaling_csv)
    arms = t["arm"].unique(maintain_order=True).to_list()
    fig, (ax1, ax2) = subplots(1, 2, figsize=(9.5, 3.8))
    for arm in arms:
        s = t.filter(pl.col("arm") == arm).sort("memories")
        style = arm_style(arm)
        ax1.plot(s["memories"], s["p50_ms"], marker="o", markersize=3, label=arm, **style)
        ax2.plot(s["memories"], s["ndcg_at_10"], marker="o", markersize=3, label=arm, **style)
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_ylabel("p50 latency (ms)")
    ax2.set_xscale("log")
    ax2.set_ylim(0, 1.02)
    ax2.set_ylabel("nDCG@10")
    for ax in (ax1, ax2):
        ax.set_xlabel("memories in the store")
        ax.grid(alpha=0.3, linewidth=0.5, which="both")
    ax2.legend(frameon=False, fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle("Scaling with corpus size")
    fig.tight_layout()
    save(fig, out_svg)
