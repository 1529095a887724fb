"""What each bench measure is held against: the limits and :func:`target_met`."""

from __future__ import annotations

import math

#: ``Arm.query`` may cost at most this many times the bare driver call (ratio of medians).
HARNESS_MAX_RATIO = 1.2
#: An arm's ingest must reach at least this share of the raw bulk path's memories/s.
INGEST_MIN_RATIO = 0.8
#: The cached embedding path must reach at least this share of bare ``encode``'s texts/s.
EMBEDDING_MIN_RATIO = 0.9
#: Pipeline wall-time limits in seconds (on the 2-core machine).
PIPELINE_MAX_S = {"full": 600.0, "rerun": 5.0, "figure": 20.0}

#: ``remember`` of one memory: p50 limit in milliseconds per arm family (on this machine);
#: arms of other families are reported without a target.
REMEMBER_MAX_P50_MS: dict[str, float] = {"sqlite": 5.0, "postgres": 10.0}


def target_met(value: float | None, op: str, threshold: float) -> bool | None:
    """Whether ``value op threshold`` holds (``op`` is ``"<="`` or ``">="``).

    Returns:
        ``None`` when ``value`` is missing or not finite (nothing was measured).

    Raises:
        ValueError: on another ``op``.
    """
    if op not in ("<=", ">="):
        raise ValueError(f"target op must be '<=' or '>=', got {op!r}")
    if value is None or not math.isfinite(value):
        return None
    return value <= threshold if op == "<=" else value >= threshold
