"""Figure: the capability grid (the study's Table 2) as a ✓/✗ chart.

One row per arm, one column per capability declared on the arm class
(:class:`agentmem.arms.base.Capabilities`): predicate, join, aggregate and transactions
as ✓ (green) / ✗ (red), vector and text access as the access path's name (grey when
``none``). Generated from the registry :data:`agentmem.arms.ARMS`, so the figure cannot
drift from the code.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.patches import Rectangle

from agentmem.report.figures._common import save, subplots

#: Boolean capability columns, then the two access-path columns.
BOOL_COLUMNS: tuple[str, ...] = ("predicate", "join", "aggregate", "transactions")
ACCESS_COLUMNS: tuple[str, ...] = ("vector_access", "text_access")


def grid(arms: Sequence[str]) -> list[dict[str, object]]:
    """Capability rows for ``arms`` from the registry.

    Returns:
        One dict per arm: ``arm``, ``family`` and every column of :data:`BOOL_COLUMNS` and
        :data:`ACCESS_COLUMNS`.

    Raises:
        KeyError: for an arm not in :data:`agentmem.arms.ARMS`.
    """
    from agentmem.arms import ARMS

    rows = []
    for name in arms:
        if name not in ARMS:
            raise KeyError(f"unknown arm {name!r} (known: {sorted(ARMS)})")
        cls = ARMS[name]
        c = cls.capabilities
        row: dict[str, object] = {"arm": name, "family": cls.family}
        for col in (*BOOL_COLUMNS, *ACCESS_COLUMNS):
            row[col] = getattr(c, col)
        rows.append(row)
    return rows


def plot(arms: Sequence[str], out_svg: str | Path) -> None:
    """Draw the ✓/✗ capability grid for ``arms`` (registry order as given).

    Args:
        arms: arm names (keys of :data:`agentmem.arms.ARMS`).
        out_svg: SVG path; a PNG is written beside it.
    """
    rows = grid(arms)
    cols = [*BOOL_COLUMNS, *ACCESS_COLUMNS]
    widths = [1.35] * len(BOOL_COLUMNS) + [2.0] * len(ACCESS_COLUMNS)
    x0 = [sum(widths[:i]) for i in range(len(cols))]
    n = len(rows)
    fig, ax = subplots(figsize=(1.6 + 0.75 * sum(widths), 0.7 + 0.32 * n))
    for i, r in enumerate(rows):
        yy = n - 1 - i
        for j, col in enumerate(cols):
            v = r[col]
            if isinstance(v, bool):
                face, text, color = (
                    ("#d5f5e3", "✓", "#1e8449") if v else ("#fadbd8", "✗", "#c0392b")
                )
                size = 11
            else:
                face = "#f2f3f4" if v == "none" else "#ebf5fb"
                text, color, size = str(v), "#566573" if v == "none" else "#1b4f72", 7
            ax.add_patch(Rectangle((x0[j], yy), widths[j], 1, facecolor=face, edgecolor="white"))
            ax.text(
                x0[j] + widths[j] / 2,
                yy + 0.5,
                text,
                ha="center",
                va="center",
                fontsize=size,
                color=color,
            )
    ax.set_xlim(0, sum(widths))
    ax.set_ylim(0, n)
    ax.set_xticks(
        [x + w / 2 for x, w in zip(x0, widths, strict=True)], [c.replace("_", " ") for c in cols]
    )
    ax.xaxis.tick_top()
    ax.tick_params(axis="x", labelsize=8)
    ax.set_yticks(
        [n - 1 - i + 0.5 for i in range(n)], [f"{r['arm']}  ({r['family']})" for r in rows]
    )
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    ax.set_title("What each architecture can express (declared capabilities)", pad=22)
    save(fig, out_svg)
