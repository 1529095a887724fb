"""Chroma ``where`` filters of a query: its scope and predicate as Chroma's operators."""

from __future__ import annotations

from typing import Any

from agentmem.arms import base
from agentmem.arms.product import NO_ID, matchless_id


def where_filter(pred: base.Predicate | None) -> dict[str, Any] | None:
    """Chroma's ``where`` document for a predicate (``None``: no filter).

    ``created_day <= d`` is ``{"created_day": {"$lte": d}}``, ``field = v`` is
    ``{field: {"$eq": v}}`` and ``field is_null`` is ``{field: {"$eq": ""}}`` (nulls are
    stored as :data:`~agentmem.arms.product.NO_ID`). ``field = ""`` asks for an id no
    memory has; it is sent as is and matches the memories *without* that id, so
    :meth:`~agentmem.arms.chroma.arm.ChromaArm.query` answers it without calling Chroma.
    """
    if pred is None:
        return None
    if pred.op == "is_null":
        return {pred.field: {"$eq": NO_ID}}
    if pred.op == "<=":
        return {pred.field: {"$lte": int(pred.value)}}  # type: ignore[arg-type]
    return {pred.field: {"$eq": pred.value}}


def query_where(q: base.Query) -> dict[str, Any] | None:
    """Chroma's ``where`` document for every filter of ``q`` (``None``: no filter).

    The scope is ``{"scope_id": {"$eq": scope}}`` (memories without a scope store ``""``,
    which no scope equals); with a predicate too, the two are ``{"$and": [scope,
    predicate]}``. Values travel as JSON values inside the document, never as filter
    syntax, so a scope holding quotes or operators is compared verbatim.
    """
    docs = [where_filter(p) for p in q.filters]
    if not docs:
        return None
    return docs[0] if len(docs) == 1 else {"$and": docs}


def matches_nothing(q: base.Query) -> bool:
    """True when no memory can match ``q``'s filters: an ``=`` on a :func:`matchless_id`.

    Chroma refuses a non-UTF-8 value in a ``where`` ("Invalid where clause").
    """
    return any(p.op == "=" and matchless_id(p.value) for p in q.filters)
