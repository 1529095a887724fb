"""Figure: Arm × query-class nDCG@10 heatmap (the study's by-class table as a picture)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.report.figures._common import save, subplots


def plot(by_class_csv: str | Path, out_svg: str | Path) -> None:
    """Arm × query-class nDCG@10 heatmap (the study's by-class table as a picture)."""
    t = pl.read_csv(by_class_csv)
    arms = list(dict.fromkeys(t["arm"].to_list()))
    classes = [*QUERY_CLASSES, "all"]
    grid = np.full((len(arms), len(classes)), np.nan)
    for r in t.iter_rows(named=True):
        grid[arms.index(r["arm"]), classes.index(r["query_class"])] = r["ndcg_at_10"]
    fig, ax = subplots(figsize=(1.0 + 0.75 * len(classes), 0.8 + 0.38 * len(arms)))
    im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(classes)), classes, rotation=35, ha="right")
    ax.set_yticks(range(len(arms)), arms)
    for i in range(len(arms)):
        for j in range(len(classes)):
            v = grid[i, j]
            if not np.isnan(v):
                ax.text(
                    j,
                    i,
                    f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if v < 0.55 else "black",
                )
    ax.axvline(len(QUERY_CLASSES) - 0.5, color="white", lw=2)
    fig.colorbar(im, ax=ax, label="nDCG@10", shrink=0.8)
    ax.set_title("Retrieval quality by arm and query class (nDCG@10, k = 10)")
    save(fig, out_svg)
