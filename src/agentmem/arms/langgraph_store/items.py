"""How memories become LangGraph store items, and predicates become store filters.

An item lives in namespace ``("agent", <session label>)`` under key ``memory_id``; its
value is the memory's metadata (:func:`agentmem.arms.product.metadata_rows`: the
predicate fields, ``seq``, ``kind``, ... with ``""`` for a null id), its ``body`` and its
``entity_ids``. The store embeds the ``body`` field only (``index["fields"]``).

A predicate becomes the ``filter`` argument of ``store.search``, in the store's own
syntax: ``{"field": value}`` (JSON equality, ``value->'field' = '<json>'::jsonb``) or
``{"field": {"$lte": value}}`` (``value->>'field' <= '<text>'``: a text comparison,
see docs/arms/langgraph-store.md).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from agentmem.arms.base import VECTOR_DIM, Predicate
from agentmem.arms.product import NO_ID, matchless_id, metadata_rows

#: First label of every namespace: all memories belong to one agent's store.
NAMESPACE_ROOT = "agent"
#: The search prefix covering every memory.
SEARCH_PREFIX: tuple[str, ...] = (NAMESPACE_ROOT,)
#: Session label of a memory without a session (LangGraph refuses empty labels).
NO_SESSION_LABEL = "-"
#: The value field the store embeds.
EMBED_FIELD = "body"


def namespace_of(session_id: str) -> tuple[str, str]:
    """The namespace of a memory of ``session_id`` (``""`` for none).

    Args:
        session_id: the stored session id (:data:`NO_ID` when the memory has none).

    Returns:
        ``("agent", session_id)``, or ``("agent", "-")`` for :data:`NO_ID`.

    Raises:
        ValueError: when ``session_id`` holds a ``.`` (LangGraph joins namespace labels
            with ``.`` and refuses a label holding one).
    """
    if "." in session_id:
        raise ValueError(
            f"session id {session_id!r} holds '.', which a LangGraph namespace label cannot"
        )
    return (NAMESPACE_ROOT, session_id if session_id != NO_ID else NO_SESSION_LABEL)


def item_values(memories: pl.DataFrame) -> list[dict[str, Any]]:
    """The store value of each memory row, in row order.

    Args:
        memories: rows with the ``MEMORY_SCHEMA`` columns.

    Returns:
        One dict per row: :func:`metadata_rows` plus ``body`` and ``entity_ids`` (a list
        of strings; empty when null).
    """
    rows = metadata_rows(memories)
    bodies = memories.get_column("body").to_list()
    if "entity_ids" in memories.columns:
        entities = [list(e or []) for e in memories.get_column("entity_ids").to_list()]
    else:
        entities = [[] for _ in bodies]
    for row, body, ents in zip(rows, bodies, entities, strict=True):
        row["body"] = body
        row["entity_ids"] = ents
    return rows


def has_nul(value: Any) -> bool:
    """Whether a string (or a list of strings) holds NUL, which PostgreSQL jsonb cannot."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(isinstance(v, str) and "\x00" in v for v in value)
    return False


def can_match(pred: Predicate | None) -> bool:
    """Whether any stored memory can match ``pred``.

    False for an id value that is ``""`` (the stored null marker, no memory's id: the
    store's ``{field: ""}`` would return the memories *without* that id), holds NUL
    (PostgreSQL jsonb cannot store it) or is not UTF-8 (a lone surrogate: psycopg cannot
    send it, and no stored string equals it).
    """
    if pred is None or pred.op != "=" or not isinstance(pred.value, str):
        return True
    return not (matchless_id(pred.value) or has_nul(pred.value))


def search_filter(pred: Predicate | None) -> dict[str, Any] | None:
    """The ``filter`` argument of ``store.search`` for ``pred`` (``None``: no filter).

    ``created_day <= d`` is ``{"created_day": {"$lte": d}}``; ``field = v`` is
    ``{field: v}``; ``is_null`` is ``{field: ""}`` for the id fields (stored as
    :data:`NO_ID`) and ``{"created_day": None}`` for the day (JSON ``null``: no memory
    has a null day, so nothing matches).
    """
    if pred is None:
        return None
    if pred.op == "<=":
        return {pred.field: {"$lte": pred.value}}
    if pred.op == "is_null":
        return {pred.field: None if pred.field == "created_day" else NO_ID}
    return {pred.field: pred.value}


def index_config(embed: Any, kind: str, *, m: int, ef_construction: int) -> dict[str, Any]:
    """The ``index`` configuration of ``PostgresStore``: 384-d cosine, ANN index ``kind``.

    Args:
        embed: the embed function (the arm's cached vectors).
        kind: ``"flat"`` (no ANN index, while loading) or ``"hnsw"``.
        m: HNSW neighbours per node (``kind == "hnsw"`` only).
        ef_construction: HNSW build breadth (``kind == "hnsw"`` only).
    """
    ann: dict[str, Any] = {"kind": kind}
    if kind == "hnsw":
        ann.update(m=m, ef_construction=ef_construction)
    return {
        "dims": VECTOR_DIM,
        "embed": embed,
        "fields": [EMBED_FIELD],
        "ann_index_config": ann,
        "distance_type": "cosine",
    }
