"""Figure: crash trials per family (unreadable, integrity failures, committed rows lost)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.report.figures._common import save, subplots


def plot(crash_csv: str | Path, out_svg: str | Path) -> None:
    """Crash trials per family: trials unreadable, failing integrity, or losing committed rows."""
    t = pl.read_csv(crash_csv)
    fam = t.group_by("family", maintain_order=True).agg(
        trials=pl.len(),
        unreadable=(~pl.col("readable").cast(pl.Boolean)).sum(),
        integrity=(~pl.col("integrity_ok").cast(pl.Boolean)).sum(),
        lost=(pl.col("missing_committed") > 0).sum(),
    )
    x = np.arange(fam.height)
    w = 0.27
    fig, ax = subplots(figsize=(7, 3.2))
    for off, col, label, color in [
        (-w, "unreadable", "store unreadable", "#c0392b"),
        (0, "integrity", "integrity check failed", "#e67e22"),
        (w, "lost", "committed records missing", "#8e44ad"),
    ]:
        bars = ax.bar(x + off, fam[col], w, label=label, color=color)
        ax.bar_label(bars, fontsize=7)
    ax.set_xticks(x, fam["family"])
    ax.set_ylim(0, max(1, int(fam["trials"].max())) * 1.15)
    ax.set_ylabel(f"trials (of {int(fam['trials'].max())})")
    ax.set_title("SIGKILL during sustained writes: what survives")
    ax.legend(frameon=False, fontsize=8)
    save(fig, out_svg)
