"""LanceDB SQL filters of a query: its scope and predicate, every string value quoted."""

from __future__ import annotations

from agentmem.arms import base
from agentmem.arms.product import NO_ID, matchless_id

#: the range of the ``created_day`` column (``int32``)
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def lance_filter(pred: base.Predicate | None) -> str | None:
    """The LanceDB SQL filter for ``pred``, or ``None`` for "no predicate".

    String values are written by :func:`sql_string` (single-quoted, every ``'``
    doubled), so an untrusted id never changes the expression's structure.

    Args:
        pred: the predicate. ``is_null`` on an id field is ``= ''`` (ids are stored with
            :data:`~agentmem.arms.product.NO_ID` for null); ``created_day`` is never null,
            so ``is_null`` on it, like ``= ''`` on an id field, matches nothing
            (``false``).

        A day outside the ``int32`` range of the ``created_day`` column (LanceDB refuses
        such a literal) is answered as the comparison would be: ``<=`` a day above the
        range is ``true``, below it ``false``; ``=`` such a day is ``false``. A string
        that is not valid UTF-8 (a lone surrogate) equals no stored value: ``false``.

    Returns:
        e.g. ``"(created_day <= 11)"``, ``"(session_id = 'S''1')"``,
        ``"(superseded_by = '')"``, ``"true"`` or ``"false"``.
    """
    return None if pred is None else _condition(pred)


def query_filter(q: base.Query) -> str | None:
    """The LanceDB SQL filter for every filter of ``q`` (scope, then predicate), AND-ed.

    The scope is ``scope_id = '<scope>'`` (memories without a scope store ``''``, which
    no scope equals), quoted by :func:`sql_string` as :func:`lance_filter` quotes ids; a
    scope and a predicate are joined with ``AND``. A filter that matches nothing
    (``false``) makes the whole filter ``"false"``.

    Returns:
        ``None`` for an unscoped query without a predicate; else e.g.
        ``"((scope_id = 'u''1') AND (superseded_by = ''))"``.
    """
    conds = [_condition(p) for p in q.filters]
    if not conds:
        return None
    if "false" in conds:
        return "false"
    return conds[0] if len(conds) == 1 else "(" + " AND ".join(conds) + ")"


def sql_string(value: str) -> str:
    r"""``value`` as a LanceDB SQL string literal: single-quoted, every ``'`` doubled.

    LanceDB's SQL parser reads a backslash inside a literal as itself and ``''`` as one
    quote, so this is the whole escape. ``lancedb.expr.lit(value).to_sql()`` is not
    used: it leaves a quote that follows a backslash (or another quote) undoubled, so
    ``' OR true) --`` would end the literal and widen the filter to every row.
    """
    return "'" + value.replace("'", "''") + "'"


def _condition(pred: base.Predicate) -> str:
    """``pred`` as one LanceDB SQL condition (rules in :func:`lance_filter`)."""
    if pred.op == "is_null":
        if pred.field == "created_day":
            return "false"
        return f"({pred.field} = {sql_string(NO_ID)})"
    if pred.field == "created_day":
        day = int(pred.value)  # type: ignore[arg-type]
        if pred.op == "<=" and day > _INT32_MAX:
            return "true"
        if day < _INT32_MIN or day > _INT32_MAX:
            return "false"
        return f"(created_day {'<=' if pred.op == '<=' else '='} {day})"
    value = str(pred.value)
    if matchless_id(value):
        return "false"
    return f"({pred.field} = {sql_string(value)})"
