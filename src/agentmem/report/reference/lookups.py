"""Building blocks of the findings' statistics: differences, ratios, extremes of lookups.

Each builder takes lookup keys and returns a statistic, a function of a
:data:`~agentmem.report.reference.records.Lookup` that gives None when a value it needs is
unknown, so that one statistic runs on the published numbers and on ours alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from agentmem.report.reference.records import Lookup, Ref


def need(*vals: float | None) -> bool:
    """True when no value is None."""
    return all(v is not None for v in vals)


def minus(f: Callable[[Lookup], Any], g: Callable[[Lookup], Any]) -> Callable[[Lookup], Any]:
    """Statistic ``f − g`` of two statistics (None when either is unknown)."""

    def h(v: Lookup) -> float | None:
        x, y = f(v), g(v)
        return x - y if need(x, y) else None

    return h


def diff(a: Ref, b: Ref) -> Callable[[Lookup], float | None]:
    """Statistic ``v(a) − v(b)`` (None when either is unknown)."""
    return minus(lambda v: v(a), lambda v: v(b))


def agg(fn: Callable[[list[float]], float], refs: Iterable[Ref]) -> Callable[[Lookup], Any]:
    """Statistic ``fn`` over the known values of ``refs`` (None when none is known)."""
    refs = list(refs)

    def f(v: Lookup) -> float | None:
        vals = [v(r) for r in refs]
        vals = [x for x in vals if x is not None]
        return fn(vals) if vals else None

    return f


def ndcg(arm: str, cls: str = "all") -> Ref:
    """Lookup key of an arm's nDCG@10 in ``tables/by_class.csv`` (``cls = "all"``: overall)."""
    return ("by_class", arm, cls, "ndcg_at_10")


def ratio_of(a: Ref, b: Ref) -> Callable[[Lookup], float | None]:
    """Statistic ``v(a) / v(b)`` (None when either is unknown or ``v(b)`` is 0)."""

    def f(v: Lookup) -> float | None:
        x, y = v(a), v(b)
        return x / y if need(x, y) and y else None

    return f


def min_minus_max(lows: Iterable[Ref], highs: Iterable[Ref]) -> Callable[[Lookup], Any]:
    """Statistic: the least of ``lows`` minus the greatest of ``highs`` (known values only)."""
    return minus(agg(min, lows), agg(max, highs))


def best_minus_best(a: Iterable[Ref], b: Iterable[Ref]) -> Callable[[Lookup], Any]:
    """Statistic: the greatest of ``a`` minus the greatest of ``b`` (known values only)."""
    return minus(agg(max, a), agg(max, b))


# --- statistics both the study's findings (reference.findings) and the headline findings
# --- (report.claims) read


def hybrid_currency_drop(v: Lookup) -> float | None:
    """Currency nDCG@10 of a hybrid arm minus its B-tree sibling's: the larger gap.

    Over the SQLite and PostgreSQL pairs with both values known; None when neither is.
    """
    gaps = []
    for hybrid, btree in (("sqlite-hybrid", "sqlite-btree"), ("pg-hybrid", "pg-btree")):
        a, b = v(ndcg(hybrid, "currency")), v(ndcg(btree, "currency"))
        if need(a, b):
            gaps.append(a - b)
    return max(gaps) if gaps else None


def durable_crash_unreadable(v: Lookup) -> float | None:
    """Unreadable stores after a crash: append-only file, SQLite and PostgreSQL writer.

    Their sum; None unless all three are known.
    """
    vals = [v(("crash", f, "unreadable")) for f in ("file-append", "sqlite", "postgres-writer")]
    return sum(vals) if need(*vals) else None


def sql_lost_increments(v: Lookup) -> float | None:
    """Increments lost by the single-statement SQL stores (SQLite and PostgreSQL).

    Their thread runs, plus their process runs when run; None unless both thread runs
    are known.
    """
    stores = ("sqlite-update", "postgres-update")
    threads = [v(("lost", s, "threads", "lost")) for s in stores]
    if not need(*threads):
        return None
    procs = [x for x in (v(("lost", s, "processes", "lost")) for s in stores) if x is not None]
    return sum(threads) + sum(procs)
