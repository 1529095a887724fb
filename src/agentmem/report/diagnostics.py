"""Fill rates, a diagnostic of the headline table read from the run files.

For queries with a structured predicate, the share of result slots an arm filled out of
``min(k, memories satisfying the predicate)`` — the filtered-ANN underfill that
post-filtering (file-vec-meta) and pgvector's HNSW without iterative scan suffer. The
HNSW recall measurement, which builds an index, is :mod:`agentmem.sweeps.hnsw_recall`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.io import write_csv
from agentmem.metrics import fill_rate, query_filters, searchable_counts


def fill_rates(
    runs: dict[str, str | Path],
    memories: str | Path,
    queries: str | Path,
    out: str | Path,
    k: int = 10,
) -> pl.DataFrame:
    """Per arm: how many result slots filtered queries filled.

    For each query with a predicate, ``slots = min(k, |memories satisfying it|)`` and
    ``fill = min(returned, slots) / slots`` (:func:`agentmem.metrics.fill_rate`).

    Writes ``out`` (CSV): arm, filtered_queries, mean_fill_rate, full_share (share of
    filtered queries with every slot filled), mean_returned, mean_slots.
    """
    mem = pl.read_parquet(memories)
    qs = pl.read_parquet(queries).filter(pl.col("predicate_field").is_not_null())
    searchable = searchable_counts(mem, query_filters(qs, scoped=False))
    slots = {q: min(k, n) for q, n in searchable.items()}
    out_rows = []
    for arm, path in runs.items():
        r = pl.read_parquet(path).filter(pl.col("query_id").is_in(list(slots)))
        returned = dict(
            r.group_by("query_id").agg(pl.col("memory_id").is_not_null().sum()).iter_rows()
        )
        fills = [fill_rate(returned.get(q, 0), k, n) for q, n in searchable.items()]
        out_rows.append(
            {
                "arm": arm,
                "filtered_queries": len(slots),
                "mean_fill_rate": float(np.mean(fills)) if fills else None,
                "full_share": float(np.mean([f >= 1.0 for f in fills])) if fills else None,
                "mean_returned": float(np.mean([returned.get(q, 0) for q in slots]))
                if slots
                else None,
                "mean_slots": float(np.mean(list(slots.values()))) if slots else None,
            }
        )
    df = pl.DataFrame(out_rows)
    write_csv(out, df)
    return df
