"""Figure: the ER diagram, drawn from :data:`agentmem.schema.SCHEMA`.

The same declaration renders the SQLite and PostgreSQL DDL the arms execute, so the
picture cannot drift from the tables. Boxes list attributes (PK/FK marked); arrows are
foreign keys, labelled with the referencing column.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.patches import Rectangle

from agentmem.report.figures._common import save, subplots
from agentmem.schema import SCHEMA

#: (x, y) of each table's box, top-left corner, in axis units.
LAYOUT = {
    "agents": (0.0, 9.0),
    "sessions": (0.0, 5.5),
    "memories": (4.2, 9.0),
    "memory_entities": (8.4, 9.0),
    "entities": (8.4, 7.3),
    "facts": (8.4, 4.75),
}
ROW = 0.42
WIDTH = 3.4


def _box(ax, name: str) -> dict[str, tuple[float, float]]:  # noqa: ANN001
    t = SCHEMA.table(name)
    x, y = LAYOUT[name]
    h = ROW * (len(t.columns) + 1)
    ax.add_patch(Rectangle((x, y - h), WIDTH, h, fill=False, lw=1.2))
    ax.add_patch(Rectangle((x, y - ROW), WIDTH, ROW, color="#2e4057"))
    ax.text(x + 0.1, y - ROW / 2, name, color="white", va="center", weight="bold", fontsize=9)
    anchors = {}
    for i, c in enumerate(t.columns, start=1):
        tags = ("PK " if c.name in t.key else "") + ("FK" if c.references else "")
        cy = y - ROW * (i + 0.5)
        ax.text(x + 0.1, cy, c.name, va="center", fontsize=7.5)
        ax.text(
            x + WIDTH - 0.1,
            cy,
            f"{c.kind} {tags}".strip(),
            va="center",
            ha="right",
            fontsize=6.5,
            color="#555",
        )
        anchors[c.name] = (x, cy)
    if t.specialization:
        col, subtypes = t.specialization
        ax.text(
            x,
            y - h - 0.3,
            f"specialization by {col}: {' | '.join(subtypes)}",
            fontsize=6.5,
            style="italic",
            color="#555",
        )
    return anchors


def plot(out_svg: str | Path) -> None:
    """Draw the ER diagram of :data:`agentmem.schema.SCHEMA` to ``out_svg`` (+ ``.png``)."""
    fig, ax = subplots(figsize=(11, 6.2))
    anchors = {t.name: _box(ax, t.name) for t in SCHEMA.tables}
    for table, col, rt, rc in SCHEMA.relationships():
        x0, y0 = anchors[table][col]
        x1, y1 = anchors[rt][rc]
        if table == rt:  # self reference (supersession): loop on the right side
            x0 += WIDTH
            ax.annotate(
                "",
                xy=(x0, y1),
                xytext=(x0, y0),
                arrowprops={
                    "arrowstyle": "->",
                    "color": "#c0392b",
                    "connectionstyle": "arc3,rad=-0.6",
                },
            )
            continue
        if x1 > x0:
            x0 += WIDTH
        elif x1 < x0:
            x1 += WIDTH
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={
                "arrowstyle": "->",
                "color": "#2e86c1",
                "lw": 0.9,
                "connectionstyle": "arc3,rad=0.08",
            },
        )
    ax.set_xlim(-0.3, 12.2)
    ax.set_ylim(0.3, 9.3)
    ax.axis("off")
    ax.set_title("Relational schema (agentmem.schema): entities, keys, relationships")
    save(fig, out_svg)
