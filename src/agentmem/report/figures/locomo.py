"""Figure: LoCoMo retrieval per arm, beside the published session-level anchors.

Left panel: session-level Hit@1 and R@5 over all categories, one pair of bars per arm,
with the published BM25 and BM25 + dense fusion values (REFERENCE §6) as horizontal
reference lines. Right panel: turn-level nDCG@10 per category per arm.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.external.locomo import ANCHORS
from agentmem.report.figures._common import plt, save

_METRICS = (("hit_at_1", "Hit@1", "#2c7fb8"), ("recall_at_5", "R@5", "#f03b20"))
_ANCHOR_STYLE = ("--", ":")
_CATEGORY_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#666666")


def plot(scores_csv: str | Path, out_svg: str | Path) -> None:
    """Session-level Hit@1/R@5 per arm with the published anchors; turn nDCG@10 by category.

    Args:
        scores_csv: ``results/external/locomo/scores.csv`` (arm, level, category,
            n_queries and the metric columns of :func:`agentmem.external.locomo.score_locomo`).
        out_svg: SVG to write; a PNG is written beside it.
    """
    t = pl.read_csv(scores_csv)
    arms = list(dict.fromkeys(t["arm"].to_list()))
    x = np.arange(len(arms))
    fig, (ax1, ax2) = plt.subplots(
        1, 2, figsize=(4.0 + 0.75 * len(arms), 4.6), gridspec_kw={"width_ratios": [1, 1.4]}
    )

    sess = t.filter((pl.col("level") == "session") & (pl.col("category") == "all"))
    val = {(r["arm"], m): r[m] for r in sess.iter_rows(named=True) for m, _, _ in _METRICS}
    w = 0.38
    for j, (m, label, color) in enumerate(_METRICS):
        ys = [val.get((a, m), np.nan) for a in arms]
        bars = ax1.bar(x + (j - 0.5) * w, ys, w, label=f"ours: {label}", color=color)
        ax1.bar_label(bars, fmt="%.2f", fontsize=6, padding=1, rotation=90)
        for anchor, ls in zip(ANCHORS, _ANCHOR_STYLE, strict=True):
            name = anchor["system"].replace(" (published)", "")
            ax1.axhline(
                anchor[m], color=color, ls=ls, lw=1, label=f"{name}: {label} {anchor[m]:.3f}"
            )
    n = int(sess["n_queries"].max()) if sess.height else 0
    ax1.set_xticks(x, arms, rotation=35, ha="right")
    ax1.set_ylim(0, 1.05)
    ax1.set_ylabel("session level, all categories")
    ax1.set_title(f"Session retrieval ({n:,} questions) vs published", fontsize=9)
    ax1.legend(frameon=False, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=2)

    turn = t.filter((pl.col("level") == "turn") & (pl.col("category") != "all"))
    cats = list(dict.fromkeys(turn["category"].to_list()))
    ndcg = {(r["arm"], r["category"]): r["ndcg_at_10"] for r in turn.iter_rows(named=True)}
    cw = 0.8 / max(1, len(cats))
    for j, cat in enumerate(cats):
        ys = [ndcg.get((a, cat), np.nan) for a in arms]
        ax2.bar(
            x + (j - (len(cats) - 1) / 2) * cw,
            ys,
            cw,
            label=cat,
            color=_CATEGORY_COLORS[j % len(_CATEGORY_COLORS)],
        )
    ax2.set_xticks(x, arms, rotation=35, ha="right")
    ax2.set_ylim(0, 1.0)
    ax2.set_ylabel("turn-level nDCG@10")
    ax2.set_title("Turn retrieval by question category", fontsize=9)
    ax2.legend(
        frameon=False, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=len(cats)
    )
    fig.suptitle("LoCoMo (real conversations): retrieval with evidence turns as ground truth")
    fig.tight_layout()
    save(fig, out_svg)
