"""The study's cells on its own corpus: ours against published, one panel per configuration."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.report.figures._common import save, subplots
from agentmem.report.study_cells import TOLERANCES, VALUE_COLUMNS


def plot(study_cells_csv: str | Path, out_svg: str | Path) -> None:
    """Published nDCG@10 (x) against ours (y) for each of the study's cells, per configuration.

    One panel per configuration of ``study_cells.csv`` (as shipped, the study's choices,
    each choice alone); the diagonal with the ±0.03 and ±0.05 bands
    (:data:`agentmem.report.study_cells.TOLERANCES`); hollow markers for the arms ranking
    through HNSW (their cells move between builds); the count within ±0.03 in each title.
    """
    t = pl.read_csv(study_cells_csv, infer_schema_length=None)
    cols = [c for c in VALUE_COLUMNS if c in t.columns and t[c].drop_nulls().len()]
    fig, axes = subplots(
        1,
        len(cols),
        figsize=(2.6 * len(cols) + 0.4, 3.3),
        layout="constrained",
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    hnsw = t["hnsw"].cast(pl.Boolean).to_list() if "hnsw" in t.columns else [False] * t.height
    for ax, col in zip(axes[0], cols, strict=True):
        for tol, shade in zip(
            sorted(TOLERANCES, reverse=True), ("#eeeeee", "#d9d9d9"), strict=False
        ):
            ax.fill_between([0, 1], [-tol, 1 - tol], [tol, 1 + tol], color=shade, lw=0)
        ax.plot([0, 1], [0, 1], color="#888888", lw=0.8)
        pub, ours = t["published"].to_list(), t[col].to_list()
        for filled in (True, False):
            pts = [
                (p, o)
                for p, o, h in zip(pub, ours, hnsw, strict=True)
                if o is not None and (not h) == filled
            ]
            if pts:
                ax.scatter(
                    *zip(*pts, strict=True),
                    s=14,
                    facecolors="#1f77b4" if filled else "none",
                    edgecolors="#1f77b4",
                    linewidths=0.8,
                    label="arm" if filled else "HNSW arm (varies by build)",
                )
        near = sum(
            1 for p, o in zip(pub, ours, strict=True) if o is not None and abs(o - p) <= 0.03 + 1e-9
        )
        n = sum(1 for o in ours if o is not None)
        ax.set_title(f"{col.replace('_', ' ')}\n{near} of {n} within ±0.03", fontsize=8)
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("published nDCG@10")
    axes[0][0].set_ylabel("ours on the study's corpus")
    axes[0][0].legend(frameon=False, fontsize=7, loc="upper left")
    fig.suptitle("The study's §3 cells on its own corpus, by configuration of our arms")
    save(fig, out_svg)
