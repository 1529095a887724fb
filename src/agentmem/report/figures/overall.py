"""Figure: overall nDCG@10, recall@10 and MRR per arm with 95 % bootstrap intervals.

Each panel is one metric: a dot per arm at its mean over all queries, a bar for the 95 %
percentile-bootstrap interval over queries (:func:`agentmem.report.stats.bootstrap_table`),
and a red diamond at the published value where the arm is one of the study's ten
(docs/STUDY.md §3, :data:`agentmem.report.reference.OVERALL`). With the across-seed table
(``results/tables/by_class_seeds.csv``) the nDCG@10 panel also shows, just below each arm
run on every seed, the mean over corpus seeds and its 95 % Student-t interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from agentmem.report.figures._common import save, subplots
from agentmem.report.reference import overall_published

#: Metric column -> panel title.
PANELS: dict[str, str] = {"ndcg_at_10": "nDCG@10", "recall_at_10": "recall@10", "mrr": "MRR"}


def plot(
    ci_csv: str | Path,
    out_svg: str | Path,
    metrics: Sequence[str] = tuple(PANELS),
    query_class: str = "all",
    seeds: str | Path | None = None,
) -> None:
    """One panel per metric: arm means with 95 % bootstrap intervals and published markers.

    Args:
        ci_csv: ``results/tables/bootstrap_ci.csv`` (arm, query_class, metric, mean,
            ci_low, ci_high, n).
        out_svg: SVG path; a PNG is written beside it.
        metrics: metric columns to show, one panel each (keys of :data:`PANELS`).
        query_class: the class whose rows are shown (``"all"``: every query).
        seeds: ``results/tables/by_class_seeds.csv`` (optional; its rows with an interval
            are drawn in the nDCG@10 panel).

    Raises:
        ValueError: when the table has no row for ``query_class``.
    """
    t = pl.read_csv(ci_csv).filter(pl.col("query_class") == query_class)
    if t.height == 0:
        raise ValueError(f"{ci_csv} has no rows for query_class {query_class!r}")
    arms = t["arm"].unique(maintain_order=True).to_list()
    y = np.arange(len(arms))[::-1]
    fig, axes = subplots(
        1, len(metrics), figsize=(2.6 * len(metrics) + 1.4, 0.8 + 0.3 * len(arms)), sharey=True
    )
    axes = np.atleast_1d(axes)
    for ax, m in zip(axes, metrics, strict=True):
        s = t.filter(pl.col("metric") == m)
        row = {r["arm"]: r for r in s.iter_rows(named=True)}
        mean = np.array([row[a]["mean"] if a in row else np.nan for a in arms])
        lo = np.array([row[a]["ci_low"] if a in row else np.nan for a in arms])
        hi = np.array([row[a]["ci_high"] if a in row else np.nan for a in arms])
        ax.errorbar(
            mean,
            y,
            xerr=[mean - lo, hi - mean],
            fmt="o",
            color="#1f4e79",
            ecolor="#7fa7d1",
            elinewidth=2.2,
            markersize=4,
            capsize=0,
            label="ours (95 % bootstrap CI)",
        )
        if m == "ndcg_at_10" and seeds is not None:
            _seed_bars(ax, seeds, arms, y, query_class)
        pub = overall_published(m)
        py = [yy for a, yy in zip(arms, y, strict=True) if a in pub]
        px = [pub[a] for a in arms if a in pub]
        if px:
            ax.scatter(px, py, marker="D", s=18, color="#c0392b", zorder=3, label="published")
        ax.set_xlim(0, 1)
        ax.set_title(PANELS.get(m, m))
        ax.grid(axis="x", alpha=0.3, linewidth=0.5)
    axes[0].set_yticks(y, arms)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        frameon=False,
        fontsize=7,
        loc="lower center",
        ncol=2,
        bbox_to_anchor=(0.5, -0.02),
    )
    fig.subplots_adjust(bottom=0.12)
    what = "all queries" if query_class == "all" else f"{query_class} queries"
    fig.suptitle(f"Retrieval quality per arm, {what} (k = 10)", fontsize=10)
    save(fig, out_svg)


def _seed_bars(ax: Axes, seeds: str | Path, arms: list[str], y: np.ndarray, cls: str) -> None:
    """The across-seed mean and 95 % t-interval of each arm that has one, below its row."""
    t = pl.read_csv(seeds).filter(
        (pl.col("query_class") == cls) & pl.col("ndcg_ci_low").is_not_null()
    )
    row = {r["arm"]: r for r in t.iter_rows(named=True)}
    pts = [(yy - 0.28, row[a]) for a, yy in zip(arms, y, strict=True) if a in row]
    if not pts:
        return
    ys = np.array([p[0] for p in pts])
    mean = np.array([p[1]["ndcg_mean"] for p in pts])
    lo = np.array([p[1]["ndcg_ci_low"] for p in pts])
    hi = np.array([p[1]["ndcg_ci_high"] for p in pts])
    n = int(t["n_seeds"].max())
    ax.errorbar(
        mean,
        ys,
        xerr=[mean - np.clip(lo, 0, None), np.clip(hi, None, 1) - mean],
        fmt="s",
        color="#b9770e",
        ecolor="#f0b27a",
        elinewidth=1.6,
        markersize=3,
        capsize=0,
        label=f"mean over {n} corpus seeds (95 % t-interval)",
    )
