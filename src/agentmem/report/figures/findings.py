"""Figure: the headline findings (the study's twelve and our 13th) × corpora, by verdict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from agentmem.report.figures._common import save, subplots
from agentmem.report.headline import as_shipped

#: verdict -> colour (holds green, weakens amber, flips red, n/a grey)
COLOURS = {"holds": "#58a55c", "weakens": "#f0ad4e", "flips": "#d9534f", "n/a": "#d5d5d5"}


def _label(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3g}" if abs(v) >= 10 else f"{v:.2f}"


def plot(findings_csv: str | Path, out_svg: str | Path) -> None:
    """Findings (rows) × corpora (columns), coloured by verdict, labelled with the statistic.

    Columns: the study, the headline corpus, the seeds, the variants. A carried value (the
    finding reads no corpus) is in italics.
    """
    t = as_shipped(pl.read_csv(findings_csv))
    corpora = list(dict.fromkeys(t["corpus"].to_list()))
    numbers = sorted(set(t["finding"].to_list()))
    verdicts = list(COLOURS)
    grid = np.zeros((len(numbers), len(corpora)))
    fig, ax = subplots(figsize=(2.6 + 0.85 * len(corpora), 1.0 + 0.42 * len(numbers)))
    for r in t.iter_rows(named=True):
        i, j = numbers.index(r["finding"]), corpora.index(r["corpus"])
        grid[i, j] = verdicts.index(r["verdict"])
        ax.text(
            j,
            i,
            _label(r["value"]),
            ha="center",
            va="center",
            fontsize=7,
            style="italic" if r["carried"] else "normal",
        )
    ax.imshow(grid, cmap=ListedColormap(list(COLOURS.values())), vmin=-0.5, vmax=3.5, aspect="auto")
    claims = dict(zip(t["finding"], t["claim"], strict=False))
    ylabels = [f"{n}. {claims[n][:46]}{'…' if len(claims[n]) > 46 else ''}" for n in numbers]
    ax.set_yticks(range(len(numbers)), ylabels, fontsize=7)
    sizes = dict(zip(t["corpus"], t["size"], strict=False))
    xlabels = [f"{c} ({sizes[c]})" if sizes.get(c) else c for c in corpora]
    ax.set_xticks(range(len(corpora)), xlabels, rotation=35, ha="right")
    ax.set_xticks(np.arange(-0.5, len(corpora)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(numbers)), minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    ax.tick_params(which="minor", length=0)
    ax.legend(
        handles=[Patch(color=c, label=v) for v, c in COLOURS.items()],
        frameon=False,
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )
    ax.set_title("Do the study's findings survive other seeds and corpus designs?")
    save(fig, out_svg)
