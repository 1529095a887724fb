"""Shared figure style and the atomic SVG + PNG writer.

Each figure lives in its own module of this package (``agentmem.report.figures.<name>``)
so that editing one figure's code reruns that figure's job alone: each plotting rule lists
its module as an input.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agentmem.io import atomic_path  # noqa: E402

plt.rcParams.update(
    {
        "figure.dpi": 110,
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.hashsalt": "agentmem",  # deterministic SVG ids
    }
)


def save(fig: plt.Figure, svg: str | Path) -> None:
    """Write ``fig`` to ``svg`` and to the ``.png`` beside it (atomically), then close it."""
    svg = Path(svg)
    with atomic_path(svg) as tmp:
        fig.savefig(tmp, format="svg", bbox_inches="tight", metadata={"Date": None})
    with atomic_path(svg.with_suffix(".png")) as tmp:
        fig.savefig(tmp, format="png", bbox_inches="tight", dpi=150)
    plt.close(fig)
