"""Figure: Lost updates per store and mode (share of the expected increments that vanished)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.report.figures._common import save, subplots


def plot(lost_csv: str | Path, out_svg: str | Path) -> None:
    """Lost updates per store and mode (share of the expected increments that vanished)."""
    t = pl.read_csv(lost_csv).with_columns(share=pl.col("lost") / pl.col("expected"))
    stores = list(dict.fromkeys(t["store"].to_list()))
    modes = list(dict.fromkeys(t["mode"].to_list()))
    x = np.arange(len(stores))
    w = 0.8 / max(1, len(modes))
    fig, ax = subplots(figsize=(7, 3.2))
    for i, mode in enumerate(modes):
        sub = {
            r["store"]: r["share"] for r in t.filter(pl.col("mode") == mode).iter_rows(named=True)
        }
        bars = ax.bar(
            x + (i - (len(modes) - 1) / 2) * w, [sub.get(s, 0) for s in stores], w, label=mode
        )
        ax.bar_label(bars, labels=[f"{sub.get(s, 0):.0%}" for s in stores], fontsize=7)
    ax.set_xticks(x, stores, rotation=15)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("share of increments lost")
    w_, n_ = int(t["writers"][0]), int(t["increments"][0])
    ax.set_title(f"Lost updates: {w_} writers x {n_} increments on one record")
    ax.legend(frameon=False, title="writers are")
    save(fig, out_svg)
