"""An arm's knobs: the constructor parameters the operating-points sweep varies.

An arm declares each knob once, in its class (:attr:`~agentmem.arms.base.ArmBase.knobs`):
the parameter, whether it acts at query time (the sweep reopens the built store with it)
or at build time (the sweep builds a store of its own), and the values of its default grid.
The default value is the constructor's (or the configured one); nothing else names it.
The sweep, its configuration and its figures read these declarations
(:mod:`agentmem.sweeps.pareto`, docs/OPERATING_POINTS.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Knob"]


@dataclass(frozen=True)
class Knob:
    """One parameter an arm can be run at, with the values its default grid tries.

    Attributes:
        param: the constructor parameter (a keyword of the arm's ``__init__``).
        stage: ``"query"`` (read when a query runs: points reuse one build of the store)
            or ``"build"`` (fixed when the store is built: each point builds its own).
        grid: the values of the default grid, smallest first; the arm's default value is
            run too whether or not it is listed. Empty: the knob is run only at the values
            a configuration gives it (``pareto.grids``; config/pareto-full.yaml).
        what: what the parameter does, in a few words (legends, tables).
    """

    param: str
    stage: Literal["query", "build"]
    grid: tuple[Any, ...]
    what: str

    def __post_init__(self) -> None:
        if self.stage not in ("query", "build"):
            raise ValueError(f"knob {self.param}: stage must be 'query' or 'build'")
        if not isinstance(self.grid, tuple):
            raise ValueError(f"knob {self.param}: the grid must be a tuple")
