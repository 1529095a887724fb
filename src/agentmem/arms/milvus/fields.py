"""The ``milvus-lite`` collection's fields and the rows written to it.

:func:`schema_fields` lists the collection's fields (primary key, vector, body, then the
metadata columns of :data:`agentmem.arms.product.METADATA_FIELDS`); :func:`milvus_rows`
turns a batch of memories and their vectors into the rows ``insert`` takes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from agentmem.arms import base
from agentmem.arms.product import METADATA_FIELDS, metadata_rows

__all__ = ["PK", "ROW_FIELDS", "VECTOR", "milvus_rows", "schema_fields"]

PK = "memory_id"
VECTOR = "vector"
#: Longest id / label the VARCHAR columns take, and the body's (Milvus's maximum).
ID_LEN = 1024
BODY_LEN = 65535
#: Scalar columns kept beside the vector and the body (``memory_id`` is the primary key).
SCALARS = [c for c in METADATA_FIELDS if c != PK]
#: Columns read back by :meth:`agentmem.arms.milvus.MilvusLiteArm.fetch`.
ROW_FIELDS = [PK, "body", *SCALARS]


def schema_fields() -> list[tuple[str, str, dict[str, Any]]]:
    """``(name, DataType member name, add_field kwargs)`` of the collection, in order."""
    kinds = {str: "VARCHAR", int: "INT64", float: "DOUBLE"}
    out: list[tuple[str, str, dict[str, Any]]] = [
        (PK, "VARCHAR", {"is_primary": True, "max_length": ID_LEN}),
        (VECTOR, "FLOAT_VECTOR", {"dim": base.VECTOR_DIM}),
        ("body", "VARCHAR", {"max_length": BODY_LEN}),
    ]
    for name in SCALARS:
        kind = kinds[METADATA_FIELDS[name]]
        extra: dict[str, Any] = {"max_length": ID_LEN} if kind == "VARCHAR" else {}
        if name in ("kind", "source", "confidence", "seq", "tokens"):
            extra["nullable"] = True  # a corpus may leave them null; metadata_rows keeps None
        out.append((name, kind, extra))
    return out


def milvus_rows(memories: pl.DataFrame, matrix: np.ndarray) -> list[dict[str, Any]]:
    """Milvus rows: metadata (nulls made storable), body and vector, in row order.

    A column ``memories`` lacks is null in every row (``""`` / ``-1`` / null).
    """
    missing = [c for c in METADATA_FIELDS if c not in memories.columns]
    memories = memories.with_columns(
        pl.lit(None, dtype=base.MEMORY_SCHEMA[c]).alias(c) for c in missing
    )
    rows = metadata_rows(memories)
    bodies = memories.get_column("body").to_list()
    for row, body, vec in zip(rows, bodies, matrix, strict=True):
        row["body"] = body
        row[VECTOR] = vec
    return rows
