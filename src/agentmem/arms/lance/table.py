"""The ``lancedb`` arms' table: its pyarrow schema, the rows written to it, and the import.

:func:`arrow_rows` turns memories and their vectors into the table's pyarrow rows
(schema :func:`_schema`); :func:`import_lancedb` imports ``lancedb`` with its logger set.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import polars as pl

from agentmem.arms.product import metadata_rows
from agentmem.types import VECTOR_DIM

__all__ = ["arrow_rows", "import_lancedb"]


def import_lancedb() -> Any:
    """Import lancedb with the scanner's column-projection notice silenced (before the import).

    LanceDB's Rust logger reads ``LANCEDB_LOG`` (``env_logger`` syntax) once, at import.
    A search that selects columns without ``_distance`` / ``_score`` (the hybrid search's
    ``select(["memory_id"])``) logs a deprecation warning per call saying those columns
    are still added; ``lance::dataset::scanner=error`` drops that module's warnings and
    keeps every other at ``warn``. A ``LANCEDB_LOG`` already set is left as it is.
    """
    os.environ.setdefault("LANCEDB_LOG", "warn,lance::dataset::scanner=error")
    import lancedb

    return lancedb


def _schema() -> Any:
    """The table's pyarrow schema: metadata, body and the 384-d float32 vector."""
    import pyarrow as pa

    return pa.schema(
        [
            ("memory_id", pa.string()),
            ("created_day", pa.int32()),
            ("session_id", pa.string()),
            ("fact_id", pa.string()),
            ("superseded_by", pa.string()),
            ("seq", pa.int64()),
            ("kind", pa.string()),
            ("source", pa.string()),
            ("confidence", pa.float64()),
            ("tokens", pa.int32()),
            ("turn_no", pa.int32()),
            ("form", pa.string()),
            ("scope_id", pa.string()),
            ("body", pa.string()),
            ("vector", pa.list_(pa.float32(), VECTOR_DIM)),
        ]
    )


def arrow_rows(memories: pl.DataFrame, matrix: np.ndarray) -> Any:
    """The pyarrow table of ``memories`` (metadata rows + body) and their ``(n, 384)`` vectors."""
    import pyarrow as pa

    schema = _schema()
    meta = metadata_rows(memories)
    bodies = memories.get_column("body").to_list()
    for row, body in zip(meta, bodies, strict=True):
        row["body"] = body
    flat = pa.array(np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1), pa.float32())
    vectors = pa.FixedSizeListArray.from_arrays(flat, VECTOR_DIM)
    table = pa.Table.from_pylist(meta, schema=pa.schema(list(schema)[:-1]))
    return table.append_column(schema.field("vector"), vectors)
