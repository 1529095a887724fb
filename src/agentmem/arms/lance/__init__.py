"""The LanceDB product arms: one embedded LanceDB table of memories, vectors and metadata.

``lancedb`` ranks by exact (flat) cosine search with the predicate as a LanceDB pre-filter
and counts with ``count_rows``; ``lancedb-hybrid`` adds LanceDB's native full-text index on
the body and its hybrid query (vector and BM25 lists fused by its default ``RRFReranker``).
Exact calls, capabilities and product findings: docs/arms/lancedb.md and
docs/arms/lancedb-hybrid.md.

Modules: :mod:`~agentmem.arms.lance.arm` (the table, ``lancedb``) and
:mod:`~agentmem.arms.lance.hybrid` (``lancedb-hybrid``). Neither imports ``lancedb`` or
``pyarrow`` at import time.
"""

from agentmem.arms.lance.arm import (
    DB_DIR,
    TABLE,
    LanceDbArm,
    lance_filter,
    query_filter,
    sql_string,
)
from agentmem.arms.lance.hybrid import FTS_COLUMN, LanceDbHybridArm

__all__ = [
    "DB_DIR",
    "FTS_COLUMN",
    "TABLE",
    "LanceDbArm",
    "LanceDbHybridArm",
    "lance_filter",
    "query_filter",
    "sql_string",
]
