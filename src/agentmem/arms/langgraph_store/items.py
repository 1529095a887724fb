"""How memories become LangGraph store items, scopes namespaces, predicates store filters.

An item lives in namespace ``("agent", "scope", <scope_id>, <session label>)`` when the
memory has a scope and ``("agent", "unscoped", <session label>)`` when it has none, under
key ``memory_id``: LangGraph's namespace is its tenancy (one user's memories under one
namespace, searched by prefix), so a scoped query searches the prefix
``("agent", "scope", <scope>)`` and an unscoped one ``("agent",)``. Its value is the
memory's metadata (:func:`agentmem.arms.product.metadata_rows`: the
predicate fields, ``seq``, ``kind``, ... with ``""`` for a null id), its ``body`` and its
``entity_ids``. The store embeds the ``body`` field only (``index["fields"]``).

A predicate becomes the ``filter`` argument of ``store.search``, in the store's own
syntax: ``{"field": value}`` (JSON equality, ``value->'field' = '<json>'::jsonb``) or
``{"field": {"$lte": value}}`` (``value->>'field' <= '<text>'``: a text comparison,
see docs/arms/langgraph-store.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from agentmem.arms import base
from agentmem.arms.langgraph_store.plans import langgraph_api
from agentmem.arms.product import NO_ID, matchless_id, metadata_rows

#: First label of every namespace: all memories belong to one agent's store.
NAMESPACE_ROOT = "agent"
#: The search prefix covering every memory.
SEARCH_PREFIX: tuple[str, ...] = (NAMESPACE_ROOT,)
#: Session label of a memory without a session (LangGraph refuses empty labels).
NO_SESSION_LABEL = "-"
#: Second label of a scoped memory's namespace; the scope itself is the third.
SCOPED_LABEL = "scope"
#: Second label of the namespace of a memory without a scope: no scope prefix
#: (``("agent", "scope", s)``) covers it, whatever ``s`` is.
UNSCOPED_LABEL = "unscoped"
#: The value field the store embeds.
EMBED_FIELD = "body"


def namespace_of(session_id: str, scope_id: str = NO_ID) -> tuple[str, ...]:
    """The namespace of a memory of ``session_id`` in ``scope_id`` (``""`` for none).

    Args:
        session_id: the stored session id (:data:`NO_ID` when the memory has none).
        scope_id: the stored scope id (:data:`NO_ID` when the memory has none).

    Returns:
        ``("agent", "scope", scope_id, session)``, or ``("agent", "unscoped", session)``
        for a memory without a scope; ``session`` is ``"-"`` for :data:`NO_ID`.

    Raises:
        ValueError: when ``session_id`` or ``scope_id`` holds a ``.`` (LangGraph joins
            namespace labels with ``.`` and refuses a label holding one).
    """
    for what, label in (("session", session_id), ("scope", scope_id)):
        if "." in label:
            raise ValueError(
                f"{what} id {label!r} holds '.', which a LangGraph namespace label cannot"
            )
    session = session_id if session_id != NO_ID else NO_SESSION_LABEL
    if scope_id == NO_ID:
        return (NAMESPACE_ROOT, UNSCOPED_LABEL, session)
    return (NAMESPACE_ROOT, SCOPED_LABEL, scope_id, session)


def search_prefix(scope: str | None) -> tuple[str, ...]:
    """The ``namespace_prefix`` a search of ``scope`` covers (``None``: every memory).

    ``("agent", "scope", scope)``: LangGraph matches a prefix on whole labels (the
    namespace itself, or it followed by ``.``; ``LIKE`` wildcards in the label escaped),
    so ``"al"`` does not cover ``"alpha"`` and a ``%`` or ``_`` in a scope is literal.
    """
    if scope is None:
        return SEARCH_PREFIX
    return (NAMESPACE_ROOT, SCOPED_LABEL, scope)


def scope_can_match(scope: str | None) -> bool:
    """Whether a stored memory can be in ``scope`` (``None``: no scope, always True).

    False for a scope no namespace label can hold (``.``, NUL: :func:`namespace_of`
    refuses such a memory) or that is not UTF-8 (a lone surrogate: psycopg cannot send
    it); a search of such a scope is empty without a call.
    """
    if scope is None:
        return True
    return "." not in scope and not has_nul(scope) and not matchless_id(scope)


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


def can_match(pred: base.Predicate | None) -> bool:
    """Whether any stored memory can match ``pred``.

    False for an id value that is ``""`` (the stored null marker, no memory's id: the
    store's ``{field: ""}`` would return the memories *without* that id), holds NUL
    (PostgreSQL jsonb cannot store it) or is not UTF-8 (a lone surrogate: psycopg cannot
    send it, and no stored string equals it).
    """
    if pred is None or pred.op != "=" or not isinstance(pred.value, str):
        return True
    return not (matchless_id(pred.value) or has_nul(pred.value))


def search_filter(pred: base.Predicate | None) -> dict[str, Any] | None:
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
        "dims": base.VECTOR_DIM,
        "embed": embed,
        "fields": [EMBED_FIELD],
        "ann_index_config": ann,
        "distance_type": "cosine",
    }


def search_args(
    q: base.Query, owner: str
) -> tuple[np.ndarray, tuple[str, ...], dict[str, Any] | None, bool]:
    """Return ``(query vector, namespace prefix, filter, can_match)`` for ``q``.

    The prefix is the scope's namespace (``("agent",)`` unscoped, :func:`search_prefix`).
    ``can_match`` is False when no stored memory can match the predicate value
    (:func:`can_match`: ``""``, NUL, not UTF-8) or be in the scope
    (:func:`scope_can_match`: ``.``, NUL, not UTF-8).

    Raises:
        ArmError: naming ``owner`` when the embedding is missing, not 384 values or not
            finite.
    """
    vec = base.checked_vector(q.embedding, owner, f"query {q.query_id!r}", base.VECTOR_DIM)
    if not np.all(np.isfinite(vec)):
        raise base.ArmError(f"{owner}: query {q.query_id!r} embedding has non-finite values")
    possible = can_match(q.predicate) and scope_can_match(q.scope)
    return vec, search_prefix(q.scope), search_filter(q.predicate), possible


def find_items(store: Any, ids: Sequence[str]) -> dict[str, Any]:
    """Return ``{memory_id: SearchItem}`` of the stored ids among ``ids``.

    One ``SearchOp(("agent",), filter={"memory_id": id}, limit=1)`` per distinct id, all
    in one ``store.batch`` of the ``PostgresStore`` ``store`` (ids holding NUL cannot be
    stored and are skipped).
    """
    p = langgraph_api()
    want = [i for i in dict.fromkeys(ids) if not has_nul(i)]
    if not want:
        return {}
    ops = [p.SearchOp(SEARCH_PREFIX, filter={"memory_id": i}, limit=1) for i in want]
    results = store.batch(ops)
    return {i: r[0] for i, r in zip(want, results, strict=True) if r}
