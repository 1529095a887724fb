"""Figure: per query class, nDCG@10 against p50 latency at every operating point."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.report.figures._common import save, subplots
from agentmem.report.figures._pareto import draw_points, log_axis


def plot(points_csv: str | Path, out_svg: str | Path) -> None:
    """Small multiples: one panel per query class, nDCG@10 against p50 ms (log axis).

    Args:
        points_csv: ``results/pareto/points.csv`` (``ndcg_at_10_<class>`` columns).
        out_svg: SVG path; a PNG is written beside it.
    """
    t = pl.read_csv(points_csv)
    classes = [c for c in QUERY_CLASSES if f"ndcg_at_10_{c}" in t.columns]
    cols = 4
    rows = max(1, math.ceil(len(classes) / cols))
    fig, axes = subplots(rows, cols, figsize=(11, 2.6 * rows + 0.8), sharex=True, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(classes):
            ax.set_visible(False)
            continue
        c = classes[i]
        draw_points(ax, t, f"ndcg_at_10_{c}", "p50_ms", labels=i == 0)
        log_axis(ax)
        ax.set_title(c, fontsize=9)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3, linewidth=0.5)
        if i % cols == 0:
            ax.set_ylabel("nDCG@10")
        if i >= len(classes) - cols:
            ax.set_xlabel("p50 ms (log)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, fontsize=7, loc="lower center", ncol=6)
    fig.suptitle("Operating points per query class (★ the configured point)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save(fig, out_svg)
