"""Shared figure style, the figure factory and the atomic SVG + PNG writer.

Each figure lives in its own module of this package (``agentmem.report.figures.<name>``)
so that editing one figure's code reruns that figure's job alone: each plotting rule lists
its module as an input. Figures are :class:`matplotlib.figure.Figure` objects on the Agg
canvas, made by :func:`subplots`: no pyplot, whose figure manager and backend set-up a
one-figure job does not need.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from agentmem.io import atomic_path  # noqa: E402

matplotlib.rcParams.update(
    {
        "figure.dpi": 110,
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.hashsalt": "agentmem",  # deterministic SVG ids
    }
)


def subplots(
    nrows: int = 1,
    ncols: int = 1,
    *,
    figsize: tuple[float, float] | None = None,
    layout: str | None = None,
    **kwargs: Any,
) -> tuple[Figure, Any]:
    """A new figure on the Agg canvas and its axes, as ``matplotlib.pyplot.subplots`` makes.

    ``figsize`` and ``layout`` (e.g. ``"constrained"``) go to the
    :class:`~matplotlib.figure.Figure`, ``kwargs`` to
    :meth:`matplotlib.figure.Figure.subplots` (``sharex``, ``sharey``, ``gridspec_kw``, ...).
    Returns ``(figure, axes)``: one Axes, or an array of them.
    """
    fig = Figure(figsize=figsize, layout=layout)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def save(fig: Figure, svg: str | Path) -> None:
    """Write ``fig`` to ``svg`` and to the ``.png`` beside it (atomically), then close it.

    Closing matters only to a figure that pyplot made (and keeps until closed).
    """
    svg = Path(svg)
    with atomic_path(svg) as tmp:
        fig.savefig(tmp, format="svg", bbox_inches="tight", metadata={"Date": None})
    with atomic_path(svg.with_suffix(".png")) as tmp:
        fig.savefig(tmp, format="png", bbox_inches="tight", dpi=150)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(fig)


def __getattr__(name: str) -> Any:
    """``plt``: :mod:`matplotlib.pyplot` with this style, for code that draws through it."""
    if name == "plt":
        import matplotlib.pyplot as plt

        return plt
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
