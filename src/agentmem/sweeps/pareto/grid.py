"""The operating points of an arm: its knobs' defaults and its grid, one knob at a time."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentmem.arms import ARMS
from agentmem.arms.knobs import Knob

#: The id of the point at the configured parameters.
DEFAULT_POINT = "default"


@dataclass(frozen=True)
class Point:
    """One operating point of one arm.

    Attributes:
        arm: the arm's name.
        point: ``"default"`` or ``"<param>=<value>"`` (path-safe: its file name).
        knob: the varied parameter (``""`` for the default).
        stage: ``"query"`` (reuses the headline store) or ``"build"`` (builds its own).
        params: the constructor parameters: the configured ones with the knob's value.
    """

    arm: str
    point: str
    knob: str
    stage: str
    params: dict[str, Any]


def knob_defaults(arm: str, configured: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Each knob's value at the default point: configured, else the constructor's default.

    Raises:
        KeyError: unknown arm.
    """
    cls = ARMS[arm]
    sig = inspect.signature(cls)
    conf = dict(configured or {})
    return {
        k.param: conf.get(k.param, sig.parameters[k.param].default)
        for k in getattr(cls, "knobs", ())
    }


def point_name(param: str, value: Any) -> str:
    """The id of the point that sets ``param`` to ``value``: ``"ef_search=80"``.

    Text is written as is (``"tie_break=engine"``), other values as JSON (``2.0``, ``true``).
    """
    return f"{param}={value if isinstance(value, str) else json.dumps(value)}"


def grid_points(
    arm: str,
    configured: Mapping[str, Any] | None = None,
    grids: Mapping[str, Sequence[Any]] | None = None,
) -> list[Point]:
    """The operating points of ``arm``: the default, then each knob's other grid values.

    Args:
        arm: a registered arm name.
        configured: the arm's configured constructor parameters (``arm_params``).
        grids: knob -> values replacing that knob's declared grid.

    Returns:
        ``[default, knob1=v1, knob1=v2, ..., knob2=v1, ...]``; an arm without knobs has
        only the default.

    Raises:
        KeyError: unknown arm; ValueError: a grid names a parameter that is not a knob
            of the arm.
    """
    cls = ARMS[arm]
    knobs: tuple[Knob, ...] = getattr(cls, "knobs", ())
    grids = dict(grids or {})
    unknown = sorted(set(grids) - {k.param for k in knobs})
    if unknown:
        raise ValueError(
            f"pareto.grids.{arm}: {unknown} are not knobs of {arm} "
            f"(its knobs: {[k.param for k in knobs]})"
        )
    base = dict(configured or {})
    defaults = knob_defaults(arm, base)
    points = [Point(arm, DEFAULT_POINT, "", "query", base)]
    for knob in knobs:
        for value in grids.get(knob.param, knob.grid):
            if value == defaults[knob.param]:
                continue
            points.append(
                Point(
                    arm,
                    point_name(knob.param, value),
                    knob.param,
                    knob.stage,
                    {**base, knob.param: value},
                )
            )
    return points


def knobbed_arms(arm_names: Iterable[str]) -> list[str]:
    """The arms of ``arm_names`` that declare knobs, in the order given."""
    return [a for a in arm_names if getattr(ARMS.get(a), "knobs", ())]
