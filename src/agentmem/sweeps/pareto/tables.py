"""The points' table, their Pareto frontiers, the budgets and the findings at the best points."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.sweeps.pareto.grid import DEFAULT_POINT

#: The quality measure the frontiers and budgets rank by, and its per-class columns' stem.
QUALITY = "ndcg_at_10"
#: The cost axes of the frontiers.
COST_AXES = ("p50_ms", "bytes_per_memory")
#: The scopes of quality: every query, then each class.
SCOPES = ("all", *QUERY_CLASSES)
#: Per-point columns before the per-class ones.
POINT_COLUMNS = (
    "arm",
    "point",
    "knob",
    "stage",
    "params",
    "build_ms",
    "bytes_per_memory",
    "p50_ms",
    "p95_ms",
    "qps",
    "ndcg_at_10",
    "recall_at_10",
    "fill_at_10",
    "short_at_10",
)


def points_table(records: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """One row per arm and point from the points' records (:func:`run_point`).

    Returns:
        :data:`POINT_COLUMNS` (quality, latency and fill over every query; ``params`` as
        JSON; ``qps`` single-thread queries per second), then ``ndcg_at_10_<class>`` and
        ``recall_at_10_<class>`` for each query class; sorted by arm then point order.
    """
    rows = []
    for r in records:
        by = {c["query_class"]: c for c in r["by_class"]}
        every = by.get("all", {})
        row = {
            "arm": r["arm"],
            "point": r["point"],
            "knob": r["knob"],
            "stage": r["stage"],
            "params": json.dumps(r["params"], sort_keys=True),
            "build_ms": r["build_ms"],
            "bytes_per_memory": r["bytes_per_memory"],
            "p50_ms": every.get("p50_ms"),
            "p95_ms": every.get("p95_ms"),
            "qps": r["throughput_qps"],
            "ndcg_at_10": every.get("ndcg_at_10"),
            "recall_at_10": every.get("recall_at_10"),
            "fill_at_10": every.get("fill_at_10"),
            "short_at_10": every.get("short_at_10"),
        }
        for c in QUERY_CLASSES:
            row[f"ndcg_at_10_{c}"] = by.get(c, {}).get("ndcg_at_10")
        for c in QUERY_CLASSES:
            row[f"recall_at_10_{c}"] = by.get(c, {}).get("recall_at_10")
        rows.append(row)
    schema: dict[str, Any] = {
        c: (pl.String if c in ("arm", "point", "knob", "stage", "params") else pl.Float64)
        for c in POINT_COLUMNS
    }
    schema.update({f"ndcg_at_10_{c}": pl.Float64 for c in QUERY_CLASSES})
    schema.update({f"recall_at_10_{c}": pl.Float64 for c in QUERY_CLASSES})
    return pl.DataFrame(rows, schema=schema, orient="row")


def quality_column(scope: str) -> str:
    """The nDCG@10 column of ``scope`` (``"all"`` or a query class) in :func:`points_table`."""
    return QUALITY if scope == "all" else f"{QUALITY}_{scope}"


def pareto_mask(quality: Sequence[float | None], cost: Sequence[float | None]) -> list[bool]:
    """Which points no other point dominates (at least as good on both, better on one).

    Higher quality and lower cost are better; a point missing either value is never on
    the frontier. Of points equal on both, the first is kept.

    Returns:
        One bool per point, in the order given.
    """
    idx = [
        i
        for i in range(len(quality))
        if quality[i] is not None
        and cost[i] is not None
        and not math.isnan(quality[i])  # type: ignore[arg-type]
        and not math.isnan(cost[i])  # type: ignore[arg-type]
    ]
    # cheapest first; at equal cost the better first, then the earlier
    idx.sort(key=lambda i: (cost[i], -quality[i], i))  # type: ignore[operator]
    keep = [False] * len(quality)
    best = -math.inf
    for i in idx:
        if quality[i] > best:  # type: ignore[operator]
            keep[i] = True
            best = quality[i]  # type: ignore[assignment]
    return keep


def frontier_table(points: pl.DataFrame) -> pl.DataFrame:
    """The Pareto-optimal points, across every arm and within each arm.

    For each scope (``all``, then each class), each cost axis of :data:`COST_AXES` and
    each ``among`` (``"all arms"``, then each arm alone), the points no other point of
    that set dominates on (nDCG@10 of the scope, cost), cheapest first.

    Returns:
        Columns ``among``, ``scope``, ``cost``, ``arm``, ``point``, ``params``,
        ``cost_value``, ``ndcg_at_10``.
    """
    out = []
    groups = [("all arms", points)] + [
        (arm, points.filter(pl.col("arm") == arm))
        for arm in points["arm"].unique(maintain_order=True).to_list()
    ]
    for among, g in groups:
        for scope in SCOPES:
            qcol = quality_column(scope)
            for cost in COST_AXES:
                keep = pareto_mask(g[qcol].to_list(), g[cost].to_list())
                front = g.filter(pl.Series(keep)).sort(cost)
                out.extend(
                    {
                        "among": among,
                        "scope": scope,
                        "cost": cost,
                        "arm": r["arm"],
                        "point": r["point"],
                        "params": r["params"],
                        "cost_value": r[cost],
                        "ndcg_at_10": r[qcol],
                    }
                    for r in front.iter_rows(named=True)
                )
    schema = {
        "among": pl.String,
        "scope": pl.String,
        "cost": pl.String,
        "arm": pl.String,
        "point": pl.String,
        "params": pl.String,
        "cost_value": pl.Float64,
        "ndcg_at_10": pl.Float64,
    }
    return pl.DataFrame(out, schema=schema, orient="row")


def budget_table(points: pl.DataFrame, budgets_ms: Sequence[float]) -> pl.DataFrame:
    """The best arm and point under each p50 latency budget, overall and per class.

    Returns:
        Columns ``budget_ms``, ``scope``, ``arm``, ``point``, ``ndcg_at_10``, ``p50_ms``:
        the point with the highest nDCG@10 of the scope among those with ``p50_ms <=
        budget`` (ties: the faster); null arm when no point is that fast.
    """
    rows = []
    for budget in budgets_ms:
        fast = points.filter(pl.col("p50_ms") <= budget)
        for scope in SCOPES:
            qcol = quality_column(scope)
            best = fast.filter(pl.col(qcol).is_not_null()).sort(
                [qcol, "p50_ms"], descending=[True, False]
            )
            r = best.row(0, named=True) if best.height else None
            rows.append(
                {
                    "budget_ms": float(budget),
                    "scope": scope,
                    "arm": r["arm"] if r else None,
                    "point": r["point"] if r else None,
                    "ndcg_at_10": r[qcol] if r else None,
                    "p50_ms": r["p50_ms"] if r else None,
                }
            )
    schema = {
        "budget_ms": pl.Float64,
        "scope": pl.String,
        "arm": pl.String,
        "point": pl.String,
        "ndcg_at_10": pl.Float64,
        "p50_ms": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def best_points(points: pl.DataFrame) -> pl.DataFrame:
    """Each arm's default beside its best point (highest overall nDCG@10; ties: faster).

    Returns:
        Columns ``arm``, ``default_ndcg``, ``default_p50_ms``, ``best_point``,
        ``best_ndcg``, ``best_p50_ms``, ``gain`` (best minus default nDCG@10), one row per
        arm in table order.
    """
    rows = []
    for arm in points["arm"].unique(maintain_order=True).to_list():
        g = points.filter(pl.col("arm") == arm)
        d = g.filter(pl.col("point") == DEFAULT_POINT)
        b = g.filter(pl.col(QUALITY).is_not_null()).sort(
            [QUALITY, "p50_ms"], descending=[True, False]
        )
        if d.height == 0 or b.height == 0:
            continue
        d0, b0 = d.row(0, named=True), b.row(0, named=True)
        rows.append(
            {
                "arm": arm,
                "default_ndcg": d0[QUALITY],
                "default_p50_ms": d0["p50_ms"],
                "best_point": b0["point"],
                "best_ndcg": b0[QUALITY],
                "best_p50_ms": b0["p50_ms"],
                "gain": (b0[QUALITY] or 0.0) - (d0[QUALITY] or 0.0),
            }
        )
    schema = {
        "arm": pl.String,
        "default_ndcg": pl.Float64,
        "default_p50_ms": pl.Float64,
        "best_point": pl.String,
        "best_ndcg": pl.Float64,
        "best_p50_ms": pl.Float64,
        "gain": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def best_by_class(records: Iterable[Mapping[str, Any]], best: pl.DataFrame) -> pl.DataFrame:
    """The by-class rows of each arm's best point (:func:`best_points`), from the records."""
    want = dict(zip(best["arm"], best["best_point"], strict=True))
    rows = [row for r in records if want.get(r["arm"]) == r["point"] for row in r["by_class"]]
    from agentmem.report.tables import BY_CLASS_COLUMNS

    if not rows:
        return pl.DataFrame(schema={c: pl.Float64 for c in BY_CLASS_COLUMNS}).with_columns(
            pl.col("arm", "query_class").cast(pl.String)
        )
    return pl.DataFrame(rows, infer_schema_length=None).select(BY_CLASS_COLUMNS)


def findings_at_best(
    results_dir: str | Path, main_size: str, overlay: pl.DataFrame
) -> pl.DataFrame:
    """Every finding on the headline run, with each arm as configured and at its best point.

    Args:
        results_dir: the headline ``results`` directory.
        main_size: its main size.
        overlay: :func:`best_by_class`'s rows (quality laid over ``by_class.csv``).

    Returns:
        Columns ``finding``, ``claim``, ``default_value``, ``default_verdict``,
        ``best_value``, ``best_verdict``, ``changed`` (the verdicts differ).
    """
    from agentmem.report.headline import ALL_FINDINGS
    from agentmem.report.reference.ours import OurResults

    shipped = OurResults(results_dir, main_size)
    best = OurResults(results_dir, main_size, overlay=overlay)
    rows = []
    for f in ALL_FINDINGS:
        d_val, b_val = f.stat(shipped.get), f.stat(best.get)
        d_ver, b_ver = f.verdict(shipped.get), f.verdict(best.get)
        rows.append(
            {
                "finding": f.number,
                "claim": f.claim,
                "default_value": d_val,
                "default_verdict": d_ver,
                "best_value": b_val,
                "best_verdict": b_ver,
                "changed": d_ver != b_ver,
            }
        )
    schema = {
        "finding": pl.Int64,
        "claim": pl.String,
        "default_value": pl.Float64,
        "default_verdict": pl.String,
        "best_value": pl.Float64,
        "best_verdict": pl.String,
        "changed": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")
