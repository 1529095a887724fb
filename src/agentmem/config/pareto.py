"""Section ``pareto``: the operating-points sweep (docs/OPERATING_POINTS.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agentmem.config.base import SIZE_NAMES, StrictModel


class ParetoConfig(StrictModel):
    """Which arms run at which operating points, at which size, against which budgets."""

    size: Literal[SIZE_NAMES] | None = Field(  # type: ignore[valid-type]
        None, description="corpus size of the points (null: main_size)"
    )
    arms: list[str] | None = Field(
        None,
        description="arms run at their operating points (null: every configured arm that "
        "declares knobs; [] for none)",
    )
    grids: dict[str, dict[str, list[Any]]] = Field(
        default_factory=dict,
        description="arm -> knob -> values, replacing that knob's declared grid (see "
        "`agentmem arms --knobs`); the arm's default point always runs",
    )
    budgets_ms: list[float] = Field(
        default_factory=lambda: [1.0, 5.0, 20.0],
        min_length=1,
        description="p50 latency budgets (ms) the report names the best arm under",
    )
