"""mem0 filters of a query: the fixed agent id, its scope (user id) and predicate.

mem0 keys a memory by user, agent and run id; a query's scope is its ``user_id`` and the
predicate's fields are metadata filters (docs/arms/mem0-qdrant.md).
"""

from __future__ import annotations

from typing import Any

from agentmem.arms import base
from agentmem.arms.product import NO_ID, matchless_id

#: mem0's ``agent_id`` for every memory (mem0 needs one of user/agent/run id per call):
#: the fixed entity id that a memory without a scope (no ``user_id``) still has, and the
#: one an unscoped query filters on.
AGENT_ID = "agent"


#: The filter value mem0 reads as "any value" (its qdrant store drops the condition).
WILDCARD = "*"


def valid_run_id(session_id: str) -> bool:
    """Whether mem0 accepts ``session_id`` as a ``run_id`` (non-empty, no whitespace)."""
    return bool(session_id) and not any(c.isspace() for c in session_id)


def valid_user_id(scope: str) -> bool:
    """Whether mem0 keeps ``scope`` as a ``user_id`` verbatim and compares it as a value.

    mem0 trims an entity id and refuses one that is empty or holds whitespace
    (:func:`valid_run_id`); ``"*"`` is its wildcard, matching every memory that has a
    ``user_id``; a string that is not UTF-8 (a lone surrogate) no store can hold. Such a
    scope is refused by ``remember`` and matches no memory in ``query``.
    """
    return valid_run_id(scope) and scope != WILDCARD and not matchless_id(scope)


def predicate_filters(pred: base.Predicate | None, eq_operator: bool = False) -> dict[str, Any]:
    """mem0 ``filters`` for a predicate: the agent id plus the predicate, if any.

    ``created_day <= d`` -> ``{"created_day": {"lte": d}}``; ``field = v`` ->
    ``{field: v}``, or ``{field: {"eq": v}}`` with ``eq_operator`` (mem0 reads a bare
    ``"*"`` as a wildcard matching every value; its ``eq`` operator compares, for the
    stores that implement it); ``field is_null`` -> ``{field: ""}`` (:data:`NO_ID`, what
    :func:`metadata_rows` stores for null). Session predicates use the ``session_id``
    metadata key (exactly the stored value; ``run_id`` holds it too when mem0 accepts it).
    """
    filters: dict[str, Any] = {"agent_id": AGENT_ID}
    if pred is None:
        return filters
    if pred.op == "<=":
        filters[pred.field] = {"lte": pred.value}
    elif pred.op == "=":
        filters[pred.field] = {"eq": pred.value} if eq_operator else pred.value
    else:
        filters[pred.field] = NO_ID
    return filters


def query_filters(q: base.Query, eq_operator: bool = False) -> dict[str, Any]:
    """mem0 ``filters`` for a query: the agent id, the scope as ``user_id``, the predicate.

    mem0's ``user_id`` is its tenancy key (whose memories), so ``q.scope`` is
    ``{"user_id": scope}``, a bare value (mem0 validates entity ids as strings; a scope
    it would not keep verbatim matches nothing: :func:`matches_nothing`). An unscoped
    query has no ``user_id``: it sees every memory of the agent, with or without one.
    """
    pred = predicate_filters(q.predicate, eq_operator)
    if q.scope is None:
        return pred
    return {"agent_id": pred.pop("agent_id"), "user_id": q.scope, **pred}


def matches_nothing(q: base.Query) -> bool:
    """True when no memory can match ``q``: a scope or an ``=`` value no memory holds.

    The scope is no valid ``user_id`` (:func:`valid_user_id`), or the predicate is an
    ``=`` on a :func:`~agentmem.arms.product.matchless_id` (``""``, non-UTF-8).
    """
    if q.scope is not None and not valid_user_id(q.scope):
        return True
    pred = q.predicate
    return pred is not None and pred.op == "=" and matchless_id(pred.value)
