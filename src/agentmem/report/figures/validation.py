"""Figure: corpus validation — query–relevant cosine per class against the random-pair cosine.

Left panel: mean cosine of each class's (query, relevant memory) pairs, bars coloured by
whether the class is answerable by similarity alone, with the random memory-pair cosine as
a dashed reference line. Right panel: identifier overlap and rare-term overlap per class
(share of pairs whose memory contains an identifier the query names). Together they show
that lexical queries share the identifier with their targets yet sit at the random
baseline, while semantic queries share no identifier yet sit far above it (docs/CORPUS.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.patches import Rectangle

from agentmem.report.figures._common import save, subplots

_EXPRESSIBLE = "#2e86c1"
_NOT_EXPRESSIBLE = "#a6acaf"


def _short(v: float) -> str:
    """Compact share label: ``.75``, ``0``, ``1``."""
    return "1" if v >= 0.995 else "0" if v < 0.005 else f"{v:.2f}".removeprefix("0")


def plot(table_csv: str | Path, out_svg: str | Path) -> None:
    """Plot ``validation.csv`` (see ``agentmem.corpus.validation.validation_table``).

    Args:
        table_csv: the validation table: one row per class plus ``query_class=random_pairs``.
        out_svg: SVG path; a PNG is written beside it.

    Raises:
        ValueError: when the table has no ``random_pairs`` row or no class rows.
    """
    t = pl.read_csv(table_csv)
    base = t.filter(pl.col("query_class") == "random_pairs")
    cls = t.filter(pl.col("query_class") != "random_pairs")
    if base.height != 1 or cls.height == 0:
        raise ValueError(f"{table_csv}: expected class rows and one random_pairs row")
    rnd = float(base["mean_cosine"][0])
    names = cls["query_class"].to_list()
    x = np.arange(len(names))
    cos = cls["mean_cosine"].fill_null(0.0).to_numpy()
    expressible = [str(v).lower() == "true" for v in cls["similarity_expressible"].to_list()]
    labels = [f"{c}\n(n={q})" for c, q in zip(names, cls["queries"].to_list(), strict=True)]

    fig, (ax, ax2) = subplots(
        1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [1.25, 1]}, sharex=False
    )
    bars = ax.bar(
        x,
        cos,
        0.7,
        color=[_EXPRESSIBLE if e else _NOT_EXPRESSIBLE for e in expressible],
    )
    ax.bar_label(bars, labels=[f"{v:.2f}" for v in cos], fontsize=7)
    rline = ax.axhline(rnd, color="#c0392b", linestyle="--", linewidth=1)
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("mean cosine, query vs relevant memory")
    ax.set_title("Query–target similarity per class")
    ax.legend(
        handles=[
            Rectangle((0, 0), 1, 1, color=_EXPRESSIBLE),
            Rectangle((0, 0), 1, 1, color=_NOT_EXPRESSIBLE),
            rline,
        ],
        labels=[
            "similarity-expressible",
            "needs predicate / count",
            f"random memory pairs {rnd:.2f} (n={int(base['pairs'][0])})",
        ],
        frameon=False,
        fontsize=7,
        loc="upper right",
    )

    w = 0.38
    ident = cls["identifier_overlap"].fill_null(0.0).to_numpy()
    rare = cls["rare_term_overlap"].fill_null(0.0).to_numpy()
    b1 = ax2.bar(x - w / 2, ident, w, label="identifier overlap", color="#8e44ad")
    b2 = ax2.bar(x + w / 2, rare, w, label="rare-term overlap", color="#e67e22")
    for b in (b1, b2):
        ax2.bar_label(b, labels=[_short(v) for v in b.datavalues], fontsize=6, padding=1)
    ax2.set_xticks(x, names, fontsize=7, rotation=30, ha="right")
    ax2.set_ylim(0, 1.3)
    ax2.set_ylabel("share of (query, relevant) pairs")
    ax2.set_title("Shared identifiers and rare terms")
    ax2.legend(frameon=False, fontsize=7, loc="upper center", ncols=2)
    fig.tight_layout()
    save(fig, out_svg)
