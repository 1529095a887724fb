"""Figure: bytes on disk per memory for each arm (the engine's own accounting).

Bytes come from each build's ``storage_bytes`` / ``memories`` (``results/builds/{size}/
{arm}.json``: SQLite ``dbstat``, PostgreSQL ``pg_total_relation_size``, file sizes), or
from ``results/sweeps/scaling.csv`` at one size. Published bytes per memory (docs/STUDY.md §3)
are red markers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from agentmem.report.figures._common import save, subplots
from agentmem.report.reference import overall_published

#: Bar colour per arm family (unknown families grey).
FAMILY_COLORS: dict[str, str] = {
    "file": "#8e8e8e",
    "vector": "#e67e22",
    "sqlite": "#2e86c1",
    "postgres": "#1e8449",
    "graph": "#8e44ad",
    "tiered": "#b7950b",
}


def read_bytes_per_memory(
    sources: Sequence[str | Path] | str | Path, size: str | None = None
) -> pl.DataFrame:
    """Bytes per memory per arm from build JSONs or a scaling table.

    Args:
        sources: build JSON files (``results/builds/{size}/{arm}.json``), or one
            ``results/sweeps/scaling.csv``.
        size: with a scaling table, the size whose rows are used (required then).

    Returns:
        Columns ``arm, family, bytes_per_memory`` in the order given (families are null
        from a scaling table, which does not record them).

    Raises:
        ValueError: for a scaling table without ``size``, or with no row at ``size``.
    """
    paths = [Path(sources)] if isinstance(sources, (str, Path)) else [Path(p) for p in sources]
    if len(paths) == 1 and paths[0].suffix == ".csv":
        if size is None:
            raise ValueError("a scaling table needs size=")
        t = pl.read_csv(paths[0]).filter(pl.col("size") == size)
        if t.height == 0:
            raise ValueError(f"{paths[0]} has no rows at size {size!r}")
        return t.select("arm", pl.lit(None, pl.String).alias("family"), "bytes_per_memory")
    rows = []
    for p in paths:
        b = json.loads(p.read_text())
        rows.append(
            {
                "arm": b.get("arm", p.stem),
                "family": b.get("family"),
                "bytes_per_memory": float(b["bytes_per_memory"]),
            }
        )
    return pl.DataFrame(
        rows, schema={"arm": pl.String, "family": pl.String, "bytes_per_memory": pl.Float64}
    )


def plot(
    sources: Sequence[str | Path] | str | Path,
    out_svg: str | Path,
    arms: Sequence[str] | None = None,
    size: str | None = None,
) -> None:
    """Horizontal bars of bytes per memory per arm, coloured by family, published markers.

    Args:
        sources: build JSONs or a scaling CSV (see :func:`read_bytes_per_memory`).
        out_svg: SVG path; a PNG is written beside it.
        arms: arms to show, in this order (None: all, in the order read).
        size: size to read from a scaling CSV.
    """
    t = read_bytes_per_memory(sources, size)
    if arms is not None:
        order = {a: i for i, a in enumerate(arms)}
        t = t.filter(pl.col("arm").is_in(list(arms))).sort(
            pl.col("arm").replace_strict(order, default=len(order))
        )
    names = t["arm"].to_list()
    vals = t["bytes_per_memory"].to_numpy()
    colors = [FAMILY_COLORS.get(f or "", "#5d6d7e") for f in t["family"].to_list()]
    y = np.arange(len(names))[::-1]
    fig, ax = subplots(figsize=(6.8, 0.9 + 0.3 * len(names)))
    ax.barh(y, vals, color=colors, height=0.65)
    pub = overall_published("bytes_per_memory")
    have = [(pub[a], yy) for a, yy in zip(names, y, strict=True) if a in pub]
    if have:
        ax.scatter(
            [h[0] for h in have],
            [h[1] for h in have],
            marker="|",
            s=160,
            linewidths=2,
            color="#c0392b",
            zorder=3,
            label="published (docs/STUDY.md §3)",
        )
    xmax = max([*vals.tolist(), *pub.values(), 1.0])
    for a, v, yy in zip(names, vals, y, strict=True):
        right = max(v, pub.get(a, 0.0))
        ax.text(right + xmax * 0.015, yy, f"{v:,.0f}", va="center", fontsize=7)
    fams = list(dict.fromkeys(f for f in t["family"].to_list() if f))
    for f in fams:
        ax.barh([np.nan], [np.nan], color=FAMILY_COLORS.get(f, "#5d6d7e"), label=f)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_yticks(y, names)
    ax.set_xlim(0, xmax * 1.15)
    ax.set_xlabel("bytes on disk per memory (engine's own accounting)")
    ax.grid(axis="x", alpha=0.3, linewidth=0.5)
    ax.set_title("Storage cost per memory")
    save(fig, out_svg)
