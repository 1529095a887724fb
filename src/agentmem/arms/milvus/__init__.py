"""The Milvus Lite product arm (``milvus-lite``): pymilvus's MilvusClient on a local ``.db``.

:mod:`~agentmem.arms.milvus.arm` holds the class, :mod:`~agentmem.arms.milvus.fields` the
collection's fields and rows, :mod:`~agentmem.arms.milvus.expr` the filter expressions.
What it calls and what the product does: docs/arms/milvus-lite.md.
"""

from agentmem.arms.milvus.arm import COLLECTION, DB_NAME, MAX_TOPK, MilvusLiteArm
from agentmem.arms.milvus.expr import ids_expr, predicate_expr, query_expr, string_literal

__all__ = [
    "COLLECTION",
    "DB_NAME",
    "MAX_TOPK",
    "MilvusLiteArm",
    "ids_expr",
    "predicate_expr",
    "query_expr",
    "string_literal",
]
