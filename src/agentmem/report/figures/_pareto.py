"""Shared drawing of the operating-points figures: each arm's points and its frontier."""

from __future__ import annotations

from typing import Any

import polars as pl
from matplotlib.ticker import FuncFormatter

from agentmem.report.colors import arm_color
from agentmem.report.figures._common import save, subplots
from agentmem.sweeps.pareto import DEFAULT_POINT, pareto_mask


def draw_points(ax: Any, points: pl.DataFrame, quality: str, cost: str, labels: bool) -> None:
    """Every arm's points on ``ax`` (``cost`` across, ``quality`` up) and its own frontier.

    The frontier is the line through the arm's Pareto-optimal points (higher quality at
    lower cost, :func:`~agentmem.sweeps.pareto.pareto_mask`); the default point is a star.
    ``labels``: give each arm a legend entry.
    """
    for arm in points["arm"].unique(maintain_order=True).to_list():
        g = points.filter((pl.col("arm") == arm) & pl.col(quality).is_not_null())
        g = g.filter(pl.col(cost).is_not_null())
        if g.height == 0:
            continue
        color = arm_color(arm)
        ax.scatter(g[cost], g[quality], s=14, color=color, alpha=0.7, linewidths=0)
        front = g.filter(pl.Series(pareto_mask(g[quality].to_list(), g[cost].to_list())))
        front = front.sort(cost)
        ax.plot(
            front[cost],
            front[quality],
            color=color,
            linewidth=1.2,
            label=arm if labels else None,
        )
        d = g.filter(pl.col("point") == DEFAULT_POINT)
        ax.scatter(
            d[cost],
            d[quality],
            s=60,
            marker="*",
            color=color,
            edgecolors="black",
            linewidths=0.4,
            zorder=3,
        )


def log_axis(ax: Any, which: str = "x") -> None:
    """A log scale on ``ax``'s ``which`` axis with ticks written as plain numbers (0.3, 2)."""
    fmt = FuncFormatter(lambda v, _pos: f"{v:g}")
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(fmt)


def plot_overall(points_csv: Any, out_svg: Any, cost: str, xlabel: str, title: str) -> None:
    """nDCG@10 over every query against ``cost`` (log axis), each arm's frontier, one panel.

    Args:
        points_csv: ``results/pareto/points.csv``.
        out_svg: SVG path; a PNG is written beside it.
        cost: the cost column (``p50_ms``, ``bytes_per_memory``).
        xlabel: the cost axis's label.
        title: the figure's title.
    """
    t = pl.read_csv(points_csv)
    fig, ax = subplots(figsize=(7.5, 4.6))
    draw_points(ax, t, "ndcg_at_10", cost, labels=True)
    log_axis(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("nDCG@10, all queries")
    ax.grid(alpha=0.3, linewidth=0.5)
    ax.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    save(fig, out_svg)
