"""Figure: query latency per arm, p50 and p95 over all queries, log scale.

Latency per query is the median of the timed runs after a warm-up (docs/MEASUREMENT.md §1); p50 and
p95 are taken over queries (``by_class.csv``, ``query_class == "all"``). Published p50
and p95 (docs/STUDY.md §3) are drawn as red markers for the study's ten arms; they come from
another machine and engine build (PGlite/WebAssembly), so compare orderings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.report.figures._common import save, subplots
from agentmem.report.reference import overall_published


def plot(by_class_csv: str | Path, out_svg: str | Path) -> None:
    """Horizontal p50–p95 range per arm on a log axis, with published markers.

    Args:
        by_class_csv: ``results/tables/by_class.csv`` (arm, query_class, p50_ms, p95_ms, ...).
        out_svg: SVG path; a PNG is written beside it.

    Raises:
        ValueError: when the table has no ``all`` rows.
    """
    t = pl.read_csv(by_class_csv).filter(pl.col("query_class") == "all")
    if t.height == 0:
        raise ValueError(f"{by_class_csv} has no query_class == 'all' rows")
    arms = t["arm"].to_list()
    p50 = t["p50_ms"].to_numpy().astype(float)
    p95 = t["p95_ms"].to_numpy().astype(float)
    y = np.arange(len(arms))[::-1]
    fig, ax = subplots(figsize=(6.8, 0.9 + 0.3 * len(arms)))
    ax.hlines(y, p50, p95, color="#7fa7d1", linewidth=3, label="ours p50 → p95")
    ax.scatter(p50, y, color="#1f4e79", s=22, zorder=3, label="ours p50")
    ax.scatter(p95, y, color="#1f4e79", s=22, marker="|", zorder=3, label="ours p95")
    pub50, pub95 = overall_published("p50_ms"), overall_published("p95_ms")
    ys = {a: yy for a, yy in zip(arms, y, strict=True)}
    have = [a for a in arms if a in pub50]
    if have:
        ax.scatter(
            [pub50[a] for a in have],
            [ys[a] for a in have],
            marker="D",
            s=16,
            color="#c0392b",
            zorder=4,
            label="published p50",
        )
        ax.scatter(
            [pub95[a] for a in have],
            [ys[a] for a in have],
            marker="D",
            s=16,
            facecolors="none",
            edgecolors="#c0392b",
            zorder=4,
            label="published p95",
        )
    ax.set_xscale("log")
    ax.set_yticks(y, arms)
    ax.set_xlabel("latency per query (ms, log scale)")
    ax.grid(axis="x", which="both", alpha=0.3, linewidth=0.5)
    ax.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title("Query latency per arm (p50 and p95 over all queries)")
    save(fig, out_svg)
