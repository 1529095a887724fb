"""Operating points: every arm over its declared knobs, quality against latency and storage.

Each arm declares its knobs (:attr:`~agentmem.arms.base.ArmBase.knobs`). The grid of an
arm is its configured parameters (the ``default`` point) and, one knob at a time, every
other value of that knob's grid (``ef_search=80``), the others at their configured values.
A point is one job: a query-time point reopens the store the headline run built, a
build-time point builds its own (in a scratch directory it removes); either times every
query as the headline runs do (``run.warmup`` untimed calls, the median of
``run.repeats``) and scores it with the headline's metrics. :func:`points_table` gathers
the points, :func:`frontier_table` marks the Pareto-optimal ones (higher nDCG@10 at lower
p50 latency or fewer bytes per memory), :func:`budget_table` names the best arm under each
latency budget. Method and reading: docs/OPERATING_POINTS.md.
"""

from __future__ import annotations

from agentmem.sweeps.pareto.grid import (
    DEFAULT_POINT,
    Point,
    grid_points,
    knob_defaults,
    knobbed_arms,
    point_name,
)
from agentmem.sweeps.pareto.tables import (
    COST_AXES,
    POINT_COLUMNS,
    QUALITY,
    SCOPES,
    best_by_class,
    best_points,
    budget_table,
    findings_at_best,
    frontier_table,
    pareto_mask,
    points_table,
    quality_column,
)

__all__ = [
    "COST_AXES",
    "DEFAULT_POINT",
    "POINT_COLUMNS",
    "QUALITY",
    "SCOPES",
    "Point",
    "best_by_class",
    "best_points",
    "budget_table",
    "findings_at_best",
    "frontier_table",
    "grid_points",
    "knob_defaults",
    "knobbed_arms",
    "pareto_mask",
    "point_name",
    "points_table",
    "quality_column",
]
