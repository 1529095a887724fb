"""Figure: one external dataset's retrieval per arm, beside the published DRAGON figures.

Reads the scores table of :func:`agentmem.external.score.score_dataset` (evidence level:
LoCoMo's proportional evidence recall). Left: evidence recall@10 per arm (rows) and
question category (columns, ``all`` last) in the first configured setting. Middle:
evidence recall@k over all categories against k (5, 10, 25, 50), one line per arm, in
that setting. Right: evidence recall@10 over all categories per arm, one bar per setting.
Where the dataset has published rows (a LoCoMo unit, :func:`agentmem.external.published.
published`), the DRAGON retriever's values (LoCoMo paper, as quoted by secondary
sources; retrieval within one conversation) are drawn in black: points on the middle
panel, a line at its R@10 on the right one.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import polars as pl

from agentmem.external.published import published
from agentmem.report.figures._common import save, subplots

#: the recall cut-offs of the scores table
_KS = (5, 10, 25, 50)
_SETTING_COLORS = ("#2c7fb8", "#f03b20", "#31a354", "#756bb1")
_DRAGON = "DRAGON (LoCoMo paper, as quoted by secondary sources)"


def _dragon(unit: str | None) -> dict[tuple[str, int], float]:
    """Published evidence recall@k of ``unit`` by (category, k); empty without one."""
    if unit is None:
        return {}
    pub = published(unit).filter(pl.col("level") == "evidence")
    return {
        (r["category"], int(r["metric"].removeprefix("recall_at_"))): r["value"]
        for r in pub.iter_rows(named=True)
    }


def plot(
    scores_csv: str | Path,
    out_svg: str | Path,
    *,
    dataset: str = "external dataset",
    unit: str | None = None,
) -> None:
    """Evidence recall per arm and category, recall@k curves, recall@10 per setting.

    Args:
        scores_csv: ``results/external/<dataset>/scores.csv`` (setting, arm, level,
            category, n_queries and the metric columns of ``score_dataset``).
        out_svg: SVG to write; a PNG is written beside it.
        dataset: the dataset id, for the title.
        unit: the LoCoMo unit whose published DRAGON figures to draw; None for none.

    Raises:
        ValueError: the table has no evidence-level rows.
    """
    t = pl.read_csv(scores_csv, infer_schema_length=None).filter(pl.col("level") == "evidence")
    if t.is_empty():
        raise ValueError(f"{scores_csv}: no evidence-level rows to draw")
    settings = list(dict.fromkeys(t["setting"].to_list()))
    arms = list(dict.fromkeys(t["arm"].to_list()))
    cats = [c for c in dict.fromkeys(t["category"].to_list()) if c != "all"] + ["all"]
    first = t.filter(pl.col("setting") == settings[0])
    val = {(r["arm"], r["category"]): r for r in first.iter_rows(named=True)}
    dragon = _dragon(unit)

    fig, (ax1, ax2, ax3) = subplots(
        1,
        3,
        figsize=(15.0, max(4.8, 1.9 + 0.3 * len(arms))),
        gridspec_kw={"width_ratios": [1.1, 1.0, 1.0]},
        layout="constrained",
    )

    grid = np.array(
        [[val[(a, c)]["recall_at_10"] if (a, c) in val else np.nan for c in cats] for a in arms],
        dtype=float,
    )
    im = ax1.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax1.set_xticks(range(len(cats)), cats, rotation=35, ha="right")
    ax1.set_yticks(range(len(arms)), arms)
    for i in range(len(arms)):
        for j in range(len(cats)):
            v = grid[i, j]
            if not np.isnan(v):
                color = "white" if v < 0.55 else "black"
                ax1.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5, color=color)
    ax1.axvline(len(cats) - 1.5, color="white", lw=2)
    fig.colorbar(im, ax=ax1, shrink=0.8, label="evidence recall@10", pad=0.01)
    n = {c: val[(arms[0], c)]["n_queries"] for c in cats if (arms[0], c) in val}
    ax1.set_title(
        f"Evidence recall@10 by category ({settings[0]}; {n.get('all', 0):,} questions)",
        fontsize=9,
    )

    cmap = matplotlib.colormaps["tab20"]
    for i, a in enumerate(arms):
        r = val.get((a, "all"))
        if r is None:
            continue
        ax2.plot(
            _KS,
            [r[f"recall_at_{k}"] for k in _KS],
            marker="o",
            ms=3,
            lw=1,
            color=cmap(i % 20),
            label=a,
        )
    pub_ks = [k for k in _KS if ("all", k) in dragon]
    if pub_ks:
        ax2.plot(
            pub_ks,
            [dragon[("all", k)] for k in pub_ks],
            "k--",
            marker="s",
            ms=5,
            lw=1.5,
            label=_DRAGON,
        )
    ax2.set_xscale("log")
    ax2.set_xticks(_KS, [str(k) for k in _KS])
    ax2.minorticks_off()
    ax2.set_ylim(0, 1.05)
    ax2.set_xlabel("k (memories retrieved)")
    ax2.set_ylabel("evidence recall@k, all categories")
    ax2.set_title(f"Recall against k ({settings[0]})", fontsize=9)
    ax2.legend(frameon=False, fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)

    x = np.arange(len(arms))
    w = 0.8 / len(settings)
    for j, s in enumerate(settings):
        rows = {
            r["arm"]: r["recall_at_10"]
            for r in t.filter((pl.col("setting") == s) & (pl.col("category") == "all")).iter_rows(
                named=True
            )
        }
        ax3.bar(
            x + (j - (len(settings) - 1) / 2) * w,
            [rows.get(a, np.nan) for a in arms],
            w,
            label=s,
            color=_SETTING_COLORS[j % len(_SETTING_COLORS)],
        )
    if ("all", 10) in dragon:
        ax3.axhline(dragon[("all", 10)], color="black", ls="--", lw=1.2)
        ax3.annotate(
            f"DRAGON R@10 {dragon[('all', 10)]:.3f}\n(as quoted by secondary sources)",
            (len(arms) - 0.5, dragon[("all", 10)]),
            xytext=(0, 3),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=6.5,
        )
    ax3.set_xticks(x, arms, rotation=60, ha="right", fontsize=7)
    ax3.set_ylim(0, 1.15)
    ax3.set_ylabel("evidence recall@10, all categories")
    ax3.set_title("Recall@10 per setting", fontsize=9)
    ax3.legend(frameon=False, fontsize=7, loc="upper left", ncol=len(settings))

    fig.suptitle(f"{dataset}: retrieval with evidence units as ground truth")
    save(fig, out_svg)
