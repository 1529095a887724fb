"""Scaling table: every arm at every corpus size, and fitted power-law exponents.

The pipeline already writes, per (size, arm), ``results/builds/{size}/{arm}.json``
(memories, queries, ingest_ms, index_ms, storage_bytes, bytes_per_memory) and
``results/metrics/{size}/{arm}.parquet`` (per-query ndcg_at_10, recall_at_10,
latency_ms). :func:`scaling_table` joins them into one long-form row per (arm, size);
adding a size therefore reuses every job already run.

:func:`fit_exponents` summarises growth with size as the exponent ``b`` of a power law
``y = a * memories**b``, fitted by ordinary least squares on ``log y = log a + b log
memories`` over the sizes present (``b ≈ 1``: linear, e.g. a full scan; ``b ≈ 0``: flat,
e.g. an index lookup).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

#: Canonical size order (config ``sizes``); unknown sizes sort after, by memories.
SIZE_ORDER: tuple[str, ...] = ("xs", "s", "m", "l")
#: Column order of ``results/sweeps/scaling.csv``.
SCALING_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String,
    "size": pl.String,
    "memories": pl.Int64,
    "queries": pl.Int64,
    "ingest_ms": pl.Float64,
    "index_ms": pl.Float64,
    "p50_ms": pl.Float64,
    "p95_ms": pl.Float64,
    "ndcg_at_10": pl.Float64,
    "recall_at_10": pl.Float64,
    "storage_bytes": pl.Int64,
    "bytes_per_memory": pl.Float64,
}
#: Fitted quantity -> column of the scaling table it is fitted to.
EXPONENT_OF: dict[str, str] = {
    "latency_exponent": "p50_ms",
    "p95_exponent": "p95_ms",
    "ingest_exponent": "ingest_ms",
    "index_exponent": "index_ms",
    "storage_exponent": "storage_bytes",
}
#: Column order of the exponents table.
EXPONENT_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String,
    "sizes": pl.Int64,
    "min_memories": pl.Int64,
    "max_memories": pl.Int64,
    "latency_exponent": pl.Float64,
    "latency_r2": pl.Float64,
    "p95_exponent": pl.Float64,
    "ingest_exponent": pl.Float64,
    "index_exponent": pl.Float64,
    "storage_exponent": pl.Float64,
}


def scaling_row(arm: str, size: str, build_json: str | Path, metrics_parquet: str | Path) -> dict:
    """One row of the scaling table from a build record and a per-query metrics file.

    ``p50_ms`` / ``p95_ms`` are linear-interpolated quantiles of ``latency_ms`` (as
    :func:`agentmem.metrics.summarize`); ``ndcg_at_10`` / ``recall_at_10`` are means
    over the queries.

    Raises:
        FileNotFoundError: when a file is missing; KeyError: when the build JSON lacks a
        field.
    """
    build = json.loads(Path(build_json).read_text(encoding="utf-8"))
    m = pl.read_parquet(metrics_parquet, columns=["ndcg_at_10", "recall_at_10", "latency_ms"])
    lat = m["latency_ms"]
    return {
        "arm": arm,
        "size": size,
        "memories": int(build["memories"]),
        "queries": int(build.get("queries", m.height)),
        "ingest_ms": float(build["ingest_ms"]),
        "index_ms": float(build["index_ms"]),
        "p50_ms": lat.quantile(0.5, "linear") if m.height else None,
        "p95_ms": lat.quantile(0.95, "linear") if m.height else None,
        "ndcg_at_10": m["ndcg_at_10"].mean() if m.height else None,
        "recall_at_10": m["recall_at_10"].mean() if m.height else None,
        "storage_bytes": int(build["storage_bytes"]),
        "bytes_per_memory": None
        if build.get("bytes_per_memory") is None
        else float(build["bytes_per_memory"]),
    }


def scaling_table(
    entries: Iterable[tuple[str, str, str | Path, str | Path]],
) -> pl.DataFrame:
    """Join build records and per-query metrics into the scaling table.

    Args:
        entries: ``(arm, size, build JSON path, metrics Parquet path)`` per job.

    Returns:
        Columns of :data:`SCALING_SCHEMA`; arms in order of first appearance, sizes in
        :data:`SIZE_ORDER` (unknown sizes after, by memories).

    Raises:
        ValueError: when an (arm, size) pair repeats.
    """
    rows = [scaling_row(a, s, b, m) for a, s, b, m in entries]
    seen: set[tuple[str, str]] = set()
    arm_rank: dict[str, int] = {}
    for r in rows:
        key = (r["arm"], r["size"])
        if key in seen:
            raise ValueError(f"scaling entry {key} appears twice")
        seen.add(key)
        arm_rank.setdefault(r["arm"], len(arm_rank))

    def order(r: dict[str, Any]) -> tuple:
        s = r["size"]
        pos = SIZE_ORDER.index(s) if s in SIZE_ORDER else len(SIZE_ORDER)
        return (arm_rank[r["arm"]], pos, r["memories"], s)

    return pl.DataFrame(sorted(rows, key=order), schema=SCALING_SCHEMA)


def power_law_exponent(x: Sequence[float], y: Sequence[float | None]) -> tuple[float, float]:
    """Least-squares slope (and R²) of ``log y`` on ``log x``.

    Points with a missing or non-positive ``x`` or ``y`` are dropped (log undefined).

    Returns:
        ``(slope, r2)``; ``(nan, nan)`` with fewer than two distinct ``x`` left. ``r2`` is
        1.0 when ``log y`` is constant (a flat line fits exactly).
    """
    pts = [
        (float(a), float(b))
        for a, b in zip(x, y, strict=True)
        if a is not None and b is not None and a > 0 and b > 0
    ]
    if len({a for a, _ in pts}) < 2:
        return (float("nan"), float("nan"))
    lx = np.log([a for a, _ in pts])
    ly = np.log([b for _, b in pts])
    slope, intercept = np.polyfit(lx, ly, 1)
    resid = ly - (slope * lx + intercept)
    ss_tot = float(np.sum((ly - ly.mean()) ** 2))
    r2 = 1.0 if ss_tot == 0 else 1.0 - float(np.sum(resid**2)) / ss_tot
    return float(slope), r2


def fit_exponents(df: pl.DataFrame) -> pl.DataFrame:
    """Fit ``y ∝ memories**b`` per arm for latency, ingest, index time and storage.

    Args:
        df: the scaling table (:func:`scaling_table`).

    Returns:
        Columns of :data:`EXPONENT_SCHEMA`, one row per arm (first-appearance order):
        ``sizes`` (rows of that arm), ``min_memories`` / ``max_memories``,
        ``latency_exponent`` (slope of log p50_ms on log memories) with its ``latency_r2``,
        ``p95_exponent``, ``ingest_exponent``, ``index_exponent``, ``storage_exponent``.
        An exponent is null when fewer than two sizes have a positive value.
    """
    out = []
    for arm in df["arm"].unique(maintain_order=True).to_list():
        g = df.filter(pl.col("arm") == arm)
        mem = g["memories"].to_list()
        row: dict[str, Any] = {
            "arm": arm,
            "sizes": g.height,
            "min_memories": min(mem),
            "max_memories": max(mem),
        }
        for name, col in EXPONENT_OF.items():
            slope, r2 = power_law_exponent(mem, g[col].to_list())
            row[name] = None if np.isnan(slope) else slope
            if name == "latency_exponent":
                row["latency_r2"] = None if np.isnan(r2) else r2
        out.append(row)
    return pl.DataFrame(out, schema=EXPONENT_SCHEMA)
