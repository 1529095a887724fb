"""Figure: Update anomaly: restatements a top-k repair reaches vs all restatements, per arm."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.report.figures._common import save, subplots


def plot(anomaly_csv: str | Path, out_svg: str | Path) -> None:
    """Update anomaly: restatements a top-k repair reaches vs all restatements, per arm."""
    t = pl.read_csv(anomaly_csv).sort("stale_fraction")
    y = np.arange(t.height)
    fig, ax = subplots(figsize=(7, 0.8 + 0.32 * t.height))
    ax.barh(y, t["mean_total"], color="#ddd", label="restatements per fact")
    ax.barh(y, t["mean_reached"], color="#2e86c1", label="reached by a top-k repair")
    for i, r in enumerate(t.iter_rows(named=True)):
        ax.text(
            r["mean_total"] + 0.05, i, f"{r['stale_fraction']:.0%} stale", va="center", fontsize=7
        )
    ax.set_yticks(y, t["arm"])
    ax.invert_yaxis()
    ax.set_xlabel("restatements (mean over probed facts)")
    ax.set_title("Update anomaly: what a top-k repair leaves stale")
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    save(fig, out_svg)
