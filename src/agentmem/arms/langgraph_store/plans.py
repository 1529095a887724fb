"""LangGraph's store API, imported with tracing off, and PostgreSQL's plans of its SQL."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

__all__ = ["explain_search", "langgraph_api"]


def explain_search(conn: Any, search: Callable[[], Any], call: str) -> list[dict[str, Any]]:
    """Run ``search`` recording the statements it executes on ``conn``, then EXPLAIN each.

    ``conn.cursor_factory`` is swapped for a cursor that notes every ``execute`` (and put
    back afterwards); each recorded statement is then explained with its parameters as
    ``EXPLAIN (FORMAT JSON, SETTINGS)``.

    Args:
        conn: the store's psycopg connection.
        search: the store call to record (e.g. ``store.search(...)``).
        call: a description of that call, repeated in every plan object.

    Returns:
        One object per plan: ``"Call"``, ``"Query Text"`` (the store's SQL) and
        PostgreSQL's own keys (``"Plan"``, ``"Settings"``).

    Raises:
        psycopg.Error: when the search or an EXPLAIN fails.
    """
    import psycopg

    log: list[tuple[str, Any]] = []

    class Recording(psycopg.Cursor):  # type: ignore[type-arg]
        """A cursor that notes each statement the store executes."""

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            log.append((query, params))
            return super().execute(query, params, **kwargs)

    saved = conn.cursor_factory
    conn.cursor_factory = Recording
    try:
        search()
    finally:
        conn.cursor_factory = saved
    plans: list[dict[str, Any]] = []
    for stmt, params in log:
        row = conn.execute("EXPLAIN (FORMAT JSON, SETTINGS) " + stmt, params).fetchone()
        doc = row[0] if row is not None else []
        if isinstance(doc, str):
            doc = json.loads(doc)
        plans.extend({"Call": call, "Query Text": stmt, **entry} for entry in doc)
    return plans


def langgraph_api() -> SimpleNamespace:
    """Import ``langgraph.store.postgres`` with LangSmith tracing off (no network).

    Returns:
        A namespace with ``PostgresStore``, ``PutOp`` and ``SearchOp``.
    """
    # LangGraph sends nothing by itself; LangSmith tracing (langchain-core) is enabled by
    # these documented variables only, so they are pinned off before the import.
    os.environ["LANGSMITH_TRACING"] = "false"
    os.environ["LANGCHAIN_TRACING_V2"] = "false"
    from langgraph.store.base import PutOp, SearchOp
    from langgraph.store.postgres import PostgresStore

    return SimpleNamespace(PostgresStore=PostgresStore, PutOp=PutOp, SearchOp=SearchOp)
