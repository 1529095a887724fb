"""The ``langgraph-store`` product arm: LangGraph's ``PostgresStore`` on embedded PostgreSQL.

Modules: :mod:`~agentmem.arms.langgraph_store.arm` (the arm),
:mod:`~agentmem.arms.langgraph_store.items` (items, namespaces and filters) and
:mod:`~agentmem.arms.langgraph_store.vectors` (the embed function returning cached
vectors). Calls and findings: docs/arms/langgraph-store.md.
"""

from agentmem.arms.langgraph_store.arm import PUT_CHUNK, LangGraphStoreArm
from agentmem.arms.langgraph_store.items import (
    NAMESPACE_ROOT,
    NO_SESSION_LABEL,
    SCOPED_LABEL,
    SEARCH_PREFIX,
    UNSCOPED_LABEL,
    item_values,
    namespace_of,
    scope_can_match,
    search_filter,
    search_prefix,
)
from agentmem.arms.langgraph_store.vectors import CachedVectors

__all__ = [
    "NAMESPACE_ROOT",
    "NO_SESSION_LABEL",
    "PUT_CHUNK",
    "SCOPED_LABEL",
    "SEARCH_PREFIX",
    "UNSCOPED_LABEL",
    "CachedVectors",
    "LangGraphStoreArm",
    "item_values",
    "namespace_of",
    "scope_can_match",
    "search_filter",
    "search_prefix",
]
