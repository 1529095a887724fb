"""Figure: nDCG@10 against bytes per memory at every operating point."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.report.figures._common import save, subplots
from agentmem.report.figures._pareto import draw_points, log_axis


def plot(points_csv: str | Path, out_svg: str | Path) -> None:
    """nDCG@10 (all queries) against the store's bytes per memory (log axis).

    Query-time points share their arm's store, so they stack at one x; a build-time
    point (HNSW ``m``) moves along it.

    Args:
        points_csv: ``results/pareto/points.csv``.
        out_svg: SVG path; a PNG is written beside it.
    """
    t = pl.read_csv(points_csv)
    fig, ax = subplots(figsize=(7.5, 4.6))
    draw_points(ax, t, "ndcg_at_10", "bytes_per_memory", labels=True)
    log_axis(ax)
    ax.set_xlabel("bytes per memory (log scale)")
    ax.set_ylabel("nDCG@10, all queries")
    ax.grid(alpha=0.3, linewidth=0.5)
    ax.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Operating points: quality against storage (★ the configured point)", fontsize=9)
    fig.tight_layout()
    save(fig, out_svg)
