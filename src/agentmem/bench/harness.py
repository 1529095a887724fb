"""Harness overhead: ``Arm.query`` against the arm's bare driver call, interleaved."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from tqdm import tqdm

from agentmem.arms.base import Arm, BareCall, Query
from agentmem.bench.errors import BenchError
from agentmem.bench.targets import HARNESS_MAX_RATIO, target_met
from agentmem.bench.timing import gc_paused, harness_stats, interleaved_times

#: the hooks each measure needs (:mod:`agentmem.arms.hooks`)
QUERY_HOOKS = ("bare_call", "raw_query_call", "raw_ids")
INGEST_HOOKS = ("raw_ingest",)


def no_hooks_reason(arm: Arm, hooks: Sequence[str] = QUERY_HOOKS) -> str | None:
    """Why ``arm`` cannot take part in a measure that needs ``hooks``, or ``None``.

    The harness-overhead measure needs :data:`QUERY_HOOKS`
    (:class:`~agentmem.arms.base.QueryHooks`, which every built-in and product arm
    declares), the ingest measure :data:`INGEST_HOOKS`
    (:class:`~agentmem.arms.base.IngestHooks`: the arms on files, hnswlib, SQLite and
    PostgreSQL tables). An arm from another package may leave them out.

    Returns:
        ``None`` when the arm has every hook, else one line naming the missing ones.
    """
    missing = [h for h in hooks if not hasattr(arm, h)]
    if not missing:
        return None
    return (
        f"{arm.name}: skipped, declares no bench hooks (missing {', '.join(missing)}; "
        "see agentmem.arms.hooks)"
    )


def harness_overhead(
    arm: Arm,
    queries: Sequence[Query],
    k: int = 10,
    rounds: int = 5,
    warmup: int = 1,
    progress: bool = True,
) -> dict:
    """Time ``arm.query(q, k)`` against its bare driver call for every query, interleaved.

    The bare call is ``arm.raw_query_call(q, k)`` (built once per query, outside the
    timing). Queries alternate which side goes first.

    Args:
        arm: a built (open) arm.
        queries: the queries.
        k: result size.
        rounds: timed calls per side and query.
        warmup: untimed calls per side and query first.
        progress: show a tqdm bar.

    Returns:
        :func:`~agentmem.bench.timing.harness_stats` plus ``queries`` (timed), ``rounds``,
        ``skipped`` (queries whose call raised, with the error) and the target.

    Raises:
        BenchError: when the arm declares no bench hooks (:func:`no_hooks_reason`) or no
            query could be timed.
    """
    reason = no_hooks_reason(arm)
    if reason is not None:
        raise BenchError(reason)
    raw = arm.raw_query_call  # type: ignore[attr-defined]
    arm_ns: list[list[int]] = []
    bare_ns: list[list[int]] = []
    skipped: list[dict[str, str]] = []
    bar = tqdm(queries, desc=f"{arm.name}: harness", unit="q", disable=not progress, leave=False)
    with gc_paused():
        for i, q in enumerate(bar):
            try:
                bare = raw(q, k)
                ta, tb = interleaved_times(
                    functools.partial(arm.query, q, k), bare, rounds, warmup, b_first=bool(i % 2)
                )
            except Exception as exc:  # report, never crash the run
                skipped.append({"query_id": q.query_id, "error": f"{type(exc).__name__}: {exc}"})
                continue
            arm_ns.append(ta)
            bare_ns.append(tb)
    if not arm_ns:
        first = skipped[0]["error"] if skipped else "no queries"
        raise BenchError(f"{arm.name}: no query could be timed ({first})")
    out = {"queries": len(arm_ns), "rounds": rounds, "k": k, **harness_stats(arm_ns, bare_ns)}
    bare: BareCall = type(arm).bare_call  # type: ignore[attr-defined]
    out["bare_call"] = bare.does
    out["beyond_bare"] = bare.beyond
    out["target"] = f"<= {HARNESS_MAX_RATIO}"
    out["met"] = target_met(out["ratio"], "<=", HARNESS_MAX_RATIO)
    out["skipped"] = skipped
    return out
