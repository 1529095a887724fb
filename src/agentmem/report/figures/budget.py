"""Figure: token budget — nDCG against tokens returned, and nDCG against k, one line per arm."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.report.colors import arm_style
from agentmem.report.figures._common import save, subplots


def plot(budget_csv: str | Path, out_svg: str | Path) -> None:
    """Two panels: nDCG vs mean tokens returned (points labelled by k) and nDCG vs k.

    Args:
        budget_csv: ``results/sweeps/budget.csv`` (arm, k, ndcg, recall, mean_tokens,
            ndcg_per_100_tokens).
        out_svg: SVG path; a PNG is written beside it.
    """
    t = pl.read_csv(budget_csv)
    arms = t["arm"].unique(maintain_order=True).to_list()
    fig, (ax1, ax2) = subplots(1, 2, figsize=(9.5, 3.8))
    for arm in arms:
        s = t.filter(pl.col("arm") == arm).sort("k")
        style = arm_style(arm)
        color = style["color"]
        ax1.plot(s["mean_tokens"], s["ndcg"], marker="o", markersize=3, label=arm, **style)
        for r in s.iter_rows(named=True):
            if r["mean_tokens"] is not None and r["mean_tokens"] > 0:
                ax1.annotate(
                    f"{r['k']}",
                    (r["mean_tokens"], r["ndcg"]),
                    fontsize=5,
                    color=color,
                    xytext=(2, 2),
                    textcoords="offset points",
                )
        ax2.plot(s["k"], s["ndcg"], marker="o", markersize=3, label=arm, **style)
    ax1.set_xscale("log")
    ax1.set_xlabel("mean tokens returned per query (o200k_base; labels: k)")
    ax1.set_ylabel("nDCG@k")
    ax2.set_xscale("log")
    ks = t["k"].unique().sort().to_list()
    ax2.set_xticks(ks, [str(k) for k in ks])
    ax2.set_xlabel("k (memories returned)")
    ax2.set_ylabel("nDCG@k")
    for ax in (ax1, ax2):
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3, linewidth=0.5)
    ax2.legend(frameon=False, fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle("Token budget: retrieval quality per context tokens spent")
    fig.tight_layout()
    save(fig, out_svg)
