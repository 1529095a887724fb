"""The one way to instantiate an arm: by its registered name and constructor parameters.

The runner, the sweeps, the fleet and the CLI all call :func:`make_arm`, so an arm is
built the same way wherever it runs.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from agentmem.arms import base


def make_arm(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    optional: Mapping[str, Any] | None = None,
) -> base.Arm:
    """Instantiate registered arm ``name``.

    Args:
        name: a name of :data:`agentmem.arms.ARMS` (built-in or plug-in).
        params: its constructor parameters (config ``arm_params``).
        optional: values passed only when the constructor takes a parameter of that name,
            overriding ``params`` (an experiment's settings some arms take).

    Raises:
        KeyError: naming the unknown arm and the known ones.
        TypeError, ValueError: the constructor's, for parameters it refuses.
    """
    from agentmem.arms import ARMS

    if name not in ARMS:
        raise KeyError(f"unknown arm {name!r}; known arms: {sorted(ARMS)}")
    cls = ARMS[name]
    kwargs = dict(params or {})
    if optional:
        takes = inspect.signature(cls).parameters
        kwargs.update({k: v for k, v in optional.items() if k in takes})
    return cls(**kwargs)
