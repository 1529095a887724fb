"""Figure: nDCG@10 against bytes per memory at every operating point."""

from __future__ import annotations

from pathlib import Path

from agentmem.report.figures._pareto import plot_overall


def plot(points_csv: str | Path, out_svg: str | Path) -> None:
    """nDCG@10 (all queries) against the store's bytes per memory (log axis).

    Query-time points share their arm's store, so they stack at one x; a build-time
    point (HNSW ``m``) moves along it.

    Args:
        points_csv: ``results/pareto/points.csv``.
        out_svg: SVG path; a PNG is written beside it.
    """
    plot_overall(
        points_csv,
        out_svg,
        "bytes_per_memory",
        "bytes per memory (log scale)",
        "Operating points: quality against storage (★ the configured point)",
    )
