"""Figure: nDCG@10 against p50 latency at every operating point, each arm's frontier."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.report.figures._common import save, subplots
from agentmem.report.figures._pareto import draw_points, log_axis


def plot(points_csv: str | Path, out_svg: str | Path) -> None:
    """nDCG@10 (all queries) against p50 ms (log axis), one colour and frontier per arm.

    Args:
        points_csv: ``results/pareto/points.csv``.
        out_svg: SVG path; a PNG is written beside it.
    """
    t = pl.read_csv(points_csv)
    fig, ax = subplots(figsize=(7.5, 4.6))
    draw_points(ax, t, "ndcg_at_10", "p50_ms", labels=True)
    log_axis(ax)
    ax.set_xlabel("p50 latency per query (ms, log scale)")
    ax.set_ylabel("nDCG@10, all queries")
    ax.grid(alpha=0.3, linewidth=0.5)
    ax.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(
        "Operating points: quality against latency (★ the configured point; "
        "lines: each arm's frontier)",
        fontsize=9,
    )
    fig.tight_layout()
    save(fig, out_svg)
