"""Figure: post-filter sweep — fill rate and recall@10 against the candidate factor."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.report.colors import arm_color
from agentmem.report.figures._common import save, subplots

#: Line styles of the reference arms (horizontal lines), in table order.
REFERENCE_LINESTYLES = ("--", ":", "-.", (0, (5, 1, 1, 1)))


def swept_label(arm: str) -> str:
    """Legend text of a swept arm, from its declarations: stage and what the factor sets.

    ``"file-vec-meta (post-filter, overfetch = x)"``, ``"milvus-lite (in-search, ef = k·x)"``;
    the bare name for an arm that is not registered here.
    """
    from agentmem.arms import ARMS

    cls = ARMS.get(arm)
    param = getattr(cls, "candidate_param", None)
    if cls is None or not param:
        return arm
    value = "k·x" if getattr(cls, "candidate_unit", "per-result") == "list" else "x"
    return f"{arm} ({cls.capabilities.filter_stage}, {param} = {value})"


def plot(postfilter_csv: str | Path, out_svg: str | Path) -> None:
    """Fill rate and recall@10 vs candidate factor (log2 x) per swept arm; references as lines.

    Every arm is drawn in its :func:`~agentmem.report.colors.arm_color`.

    Args:
        postfilter_csv: ``results/sweeps/postfilter.csv`` (rows with a null ``overfetch``
            are reference arms, drawn as horizontal lines).
        out_svg: SVG path; a PNG is written beside it.
    """
    t = pl.read_csv(postfilter_csv)
    swept = t.filter(pl.col("overfetch").is_not_null()).sort("overfetch")
    refs = t.filter(pl.col("overfetch").is_null())
    fig, axes = subplots(1, 2, figsize=(8, 3.3), sharex=True)
    panels = [("fill_rate", "fill rate (slots filled / slots)"), ("recall_at_10", "recall@10")]
    for ax, (col, label) in zip(axes, panels, strict=True):
        for arm in swept["arm"].unique(maintain_order=True).to_list():
            s = swept.filter(pl.col("arm") == arm)
            ax.plot(
                s["overfetch"],
                s[col],
                marker="o",
                color=arm_color(arm),
                label=swept_label(arm),
            )
        for i, r in enumerate(refs.iter_rows(named=True)):
            if r[col] is not None:
                ax.axhline(
                    r[col],
                    label=r["arm"],
                    linewidth=1.2,
                    color=arm_color(r["arm"]),
                    linestyle=REFERENCE_LINESTYLES[i % len(REFERENCE_LINESTYLES)],
                )
        ax.set_xscale("log", base=2)
        if swept.height:
            xs = swept["overfetch"].unique().sort().to_list()
            ax.set_xticks(xs, [f"×{x}" for x in xs])
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("candidate factor x (candidates fetched per result slot)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, linewidth=0.5)
    if swept.height:
        first = swept.filter(pl.col("arm") == swept["arm"][0])
        top = axes[0].secondary_xaxis("top")
        top.set_xticks(
            first["overfetch"].to_list(),
            [f"{f:.0%}" if f is not None else "" for f in first["scan_fraction"].to_list()],
            fontsize=6,
        )
        top.set_xlabel("share of corpus fetched", fontsize=7)
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, fontsize=7, loc="lower center", ncol=3)
    fig.suptitle("Filtered queries: how many candidates must a filtered vector search draw?")
    fig.tight_layout(rect=(0, 0.08 + 0.045 * ((len(labels) - 1) // 3), 1, 1))
    save(fig, out_svg)
