"""Figure: a fleet of N agent processes on one store: throughput and recall p99 against N."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import polars as pl

from agentmem.report.figures._common import save, subplots


def plot(fleet_csv: str | Path, out_svg: str | Path) -> None:
    """Operations/s (left) and recall p99 in ms (right) against N, one line per arm.

    Reads ``results/trials/fleet.csv`` (the ``run`` rows of supported arms). A hollow
    marker is a run that lost or duplicated an acknowledged write (its own or an earlier
    run's), or left the store corrupt; the shaded band is N above the machine's cores,
    where the runs measure
    contention for CPU as much as for the store. Both axes are logarithmic.
    """
    t = pl.read_csv(fleet_csv, infer_schema_length=None)
    if t.height:
        t = t.filter(
            (pl.col("variant") == "run") & pl.col("supported") & pl.col("ops_per_s").is_not_null()
        )
    fig, axes = subplots(1, 2, figsize=(10, 4.2), sharex=True)
    if t.height == 0:
        for ax in axes:
            ax.text(0.5, 0.5, "no arm took part", ha="center", va="center")
        save(fig, out_svg)
        return
    cores = int(t["cores"].max())  # type: ignore[arg-type]
    ns = sorted(set(t["processes"].to_list()))
    arms = list(dict.fromkeys(t["arm"].to_list()))
    cmap = matplotlib.colormaps["tab10"]
    for i, arm in enumerate(arms):
        color, dash = cmap(i % 10), ("-", "--", ":")[(i // 10) % 3]
        sub = t.filter(pl.col("arm") == arm).sort("processes")
        bad = (
            (pl.col("lost").fill_null(0) > 0)
            | (pl.col("lost_earlier").fill_null(0) > 0)
            | (pl.col("duplicated").fill_null(0) > 0)
            | pl.col("corrupt").fill_null(False)
        )
        marks = sub.with_columns(bad=bad)
        for ax, col in zip(axes, ("ops_per_s", "recall_p99_ms"), strict=True):
            ax.plot(sub["processes"], sub[col], color=color, ls=dash, lw=1.2, label=arm)
            for n, v, b in marks.select("processes", col, "bad").iter_rows():
                ax.plot(
                    n,
                    v,
                    "o",
                    ms=4.5,
                    color=color,
                    markerfacecolor="white" if b else color,
                )
    for ax, label in zip(axes, ("operations / s (all agents)", "recall p99 (ms)"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.set_xlabel("agent processes N")
        ax.set_ylabel(label)
        if max(ns) > cores:
            ax.axvspan(cores + 0.5, max(ns) * 1.3, color="0.92", zorder=0)
            ax.text(
                max(ns) * 1.25,
                ax.get_ylim()[0],
                f"N > {cores} cores:\ncontention",
                ha="right",
                va="bottom",
                fontsize=7,
                color="0.35",
            )
    axes[0].set_title("Throughput of the recall/remember/correction mix")
    axes[1].set_title("Recall tail latency")
    axes[1].legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.text(
        0.01,
        -0.02,
        "hollow marker: the run lost or duplicated an acknowledged write or left the store corrupt",
        fontsize=7,
        color="0.35",
    )
    save(fig, out_svg)
