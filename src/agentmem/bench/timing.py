"""Timing primitives and statistics: interleaved timers, medians, ratios, throughput.

All timings use :func:`time.perf_counter_ns`; :func:`gc_paused` keeps the cyclic garbage
collector off while they run.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any


def median(values: Sequence[float]) -> float:
    """Median of ``values``; ``nan`` when empty."""
    return float(statistics.median(values)) if len(values) else math.nan


def safe_ratio(num: float, den: float) -> float:
    """``num / den``, or ``nan`` when either is not finite or ``den <= 0``."""
    if not (math.isfinite(num) and math.isfinite(den)) or den <= 0:
        return math.nan
    return num / den


def ratio_of_medians(num: Sequence[float], den: Sequence[float]) -> float:
    """``median(num) / median(den)`` (``nan`` when undefined), e.g. arm vs bare latency."""
    return safe_ratio(median(num), median(den))


def harness_stats(arm_ns: Sequence[Sequence[int]], bare_ns: Sequence[Sequence[int]]) -> dict:
    """Summarise interleaved timings of ``Arm.query`` and the bare driver call.

    Args:
        arm_ns: per query, the ``Arm.query`` times in nanoseconds (one per round).
        bare_ns: per query, the bare-call times in nanoseconds, same shape.

    Returns:
        ``arm_median_ms`` / ``bare_median_ms`` (median over queries of each query's
        median), ``ratio`` (their ratio: the figure held against the target),
        ``ratio_total`` (sum of per-query medians, arm over bare: the time-weighted
        view), ``per_query_ratio_median`` and ``overhead_median_us`` (median over queries
        of arm minus bare, microseconds).

    Raises:
        ValueError: when the two sides have different numbers of queries.
    """
    if len(arm_ns) != len(bare_ns):
        raise ValueError(f"{len(arm_ns)} arm timings but {len(bare_ns)} bare timings")
    arm_q = [median(t) / 1e6 for t in arm_ns]
    bare_q = [median(t) / 1e6 for t in bare_ns]
    return {
        "arm_median_ms": round(median(arm_q), 6),
        "bare_median_ms": round(median(bare_q), 6),
        "ratio": round_json(ratio_of_medians(arm_q, bare_q)),
        "ratio_total": round_json(safe_ratio(sum(arm_q), sum(bare_q))),
        "per_query_ratio_median": round_json(
            median([safe_ratio(a, b) for a, b in zip(arm_q, bare_q, strict=True)])
        ),
        "overhead_median_us": round(
            median([(a - b) * 1e3 for a, b in zip(arm_q, bare_q, strict=True)]), 3
        ),
    }


def throughput_stats(n: int, arm_ms: Sequence[float], raw_ms: Sequence[float]) -> dict:
    """Throughput of ``n`` items written by the arm and by the raw path (medians of runs).

    Returns:
        ``arm_per_s`` and ``raw_per_s`` (``n`` / median seconds) and ``ratio`` =
        arm / raw throughput = median raw time / median arm time.
    """
    arm_s, raw_s = median(arm_ms) / 1e3, median(raw_ms) / 1e3
    return {
        "arm_median_ms": round(median(arm_ms), 3),
        "raw_median_ms": round(median(raw_ms), 3),
        "arm_per_s": round_json(safe_ratio(n, arm_s), 1),
        "raw_per_s": round_json(safe_ratio(n, raw_s), 1),
        "ratio": round_json(safe_ratio(raw_s, arm_s)),
    }


def round_json(x: float, nd: int = 4) -> float | None:
    """Round for JSON; ``None`` for nan/inf (JSON has no nan)."""
    return round(x, nd) if x is not None and math.isfinite(x) else None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Collect once, then keep the cyclic garbage collector off inside the block."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def interleaved_times(
    fa: Callable[[], Any],
    fb: Callable[[], Any],
    rounds: int,
    warmup: int = 1,
    b_first: bool = False,
) -> tuple[list[int], list[int]]:
    """Time ``fa`` and ``fb`` alternately: ``warmup`` untimed calls each, then ``rounds`` pairs.

    The pair order alternates every round (``ab, ba, ab, ...``, or starting with ``ba``
    when ``b_first``), so a drift in machine speed hits both sides alike.

    Returns:
        ``(times of fa, times of fb)`` in nanoseconds (:func:`time.perf_counter_ns`).
    """
    for _ in range(warmup):
        fa()
        fb()
    ta: list[int] = []
    tb: list[int] = []
    clock = time.perf_counter_ns
    for r in range(rounds):
        a_first = (r % 2 == 0) != b_first
        for f, sink in ((fa, ta), (fb, tb)) if a_first else ((fb, tb), (fa, ta)):
            t0 = clock()
            f()
            sink.append(clock() - t0)
    return ta, tb
