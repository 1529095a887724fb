"""Figure: nDCG@10 against p50 latency at every operating point, each arm's frontier."""

from __future__ import annotations

from pathlib import Path

from agentmem.report.figures._pareto import plot_overall


def plot(points_csv: str | Path, out_svg: str | Path) -> None:
    """nDCG@10 (all queries) against p50 ms (log axis), one colour and frontier per arm.

    Args:
        points_csv: ``results/pareto/points.csv``.
        out_svg: SVG path; a PNG is written beside it.
    """
    plot_overall(
        points_csv,
        out_svg,
        "p50_ms",
        "p50 latency per query (ms, log scale)",
        "Operating points: quality against latency (★ the configured point; "
        "lines: each arm's frontier)",
    )
