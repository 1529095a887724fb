"""One stable colour per registered arm, shared by every figure.

An arm's colour is fixed by its position in the registry (:data:`agentmem.arms.ARMS`:
the built-in arms in their registry order, then arms from other packages), so
``file-vec`` has the same colour in the post-filter, budget, scaling and conversation
figures whichever arms a figure shows. Names that are not arms (the conversation
sweep's ``append`` baseline, say) get :data:`OTHER_COLOR`.
"""

from __future__ import annotations

from agentmem.arms import ARMS

#: Arm colours in registry order: matplotlib's ``tab20`` with its two greys left out
#: (grey is :data:`OTHER_COLOR`), the ten strong shades first, then the ten light ones,
#: then the dark shades of ``tab20b``.
PALETTE: tuple[str, ...] = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#dbdb8d",
    "#9edae5",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
)
#: Colour of a name that is not a registered arm (a baseline such as ``append``).
OTHER_COLOR = "#7f7f7f"
#: Line styles, changed once per pass through :data:`PALETTE` (more arms than colours).
LINESTYLES: tuple[str, ...] = ("-", "--", ":", "-.")


def arm_color(name: str) -> str:
    """Hex colour of arm ``name``: :data:`PALETTE` at its registry position (cycled).

    Returns:
        ``"#rrggbb"``; :data:`OTHER_COLOR` for a name not in the registry.
    """
    order = list(ARMS)
    if name not in order:
        return OTHER_COLOR
    return PALETTE[order.index(name) % len(PALETTE)]


def arm_style(name: str) -> dict[str, str]:
    """Matplotlib line keywords of arm ``name``: its :func:`arm_color` and a line style.

    The line style is ``"-"`` for the first ``len(PALETTE)`` registered arms and changes
    with each further pass, so two arms never share colour and style; a name not in the
    registry gets :data:`OTHER_COLOR` and ``"-"``.
    """
    order = list(ARMS)
    i = order.index(name) if name in order else 0
    return {
        "color": arm_color(name),
        "linestyle": LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)],
    }
