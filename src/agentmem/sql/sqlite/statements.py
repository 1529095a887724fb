"""SQL shared by the SQLite-backed arms: predicate conditions and query plans.

The graph and three-tier arms use these too. :func:`predicate_sql` turns a query's filters
(its scope and its predicate, :attr:`~agentmem.arms.base.Query.filters`) into one condition;
every value is a bound parameter, column names come from a fixed table.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import apsw

from agentmem.arms.base import ArmError, Predicate
from agentmem.text import is_utf8

#: Predicate (field, op) -> SQL on alias ``m``; ``{v}`` is the bound value's parameter name.
_PREDICATE_SQL: dict[tuple[str, str], str] = {
    ("created_day", "<="): "m.created_day <= :{v}",
    ("created_day", "="): "m.created_day = :{v}",
    ("session_id", "="): "m.session_id = :{v}",
    ("fact_id", "="): "m.fact_id = :{v}",
    ("superseded_by", "="): "m.superseded_by = :{v}",
    ("scope_id", "="): "m.scope_id = :{v}",
    ("created_day", "is_null"): "m.created_day IS NULL",
    ("session_id", "is_null"): "m.session_id IS NULL",
    ("fact_id", "is_null"): "m.fact_id IS NULL",
    ("superseded_by", "is_null"): "m.superseded_by IS NULL",
    ("scope_id", "is_null"): "m.scope_id IS NULL",
}


@functools.lru_cache(maxsize=256)
def _condition(shape: tuple[tuple[str, str], ...]) -> tuple[str, tuple[str | None, ...]]:
    """The condition for filters of ``shape`` (their ``(field, op)`` pairs), composed once.

    Returns:
        ``(condition, names)``: ``names[i]`` is the ``i``-th filter's parameter name, or
        ``None`` for ``is_null`` (no value).

    Raises:
        ArmError: for a (field, op) pair outside :data:`_PREDICATE_SQL`.
    """
    conds: list[str] = []
    names: list[str | None] = []
    for i, pair in enumerate(shape):
        try:
            template = _PREDICATE_SQL[pair]
        except KeyError:
            raise ArmError(f"unsupported predicate {pair[0]} {pair[1]}") from None
        conds.append(template.format(v=f"pv{i}"))
        names.append(None if pair[1] == "is_null" else f"pv{i}")
    if not conds:
        return "1", ()
    return (conds[0] if len(conds) == 1 else "(" + " AND ".join(conds) + ")"), tuple(names)


def predicate_sql(
    preds: Predicate | Sequence[Predicate] | None,
) -> tuple[str, dict[str, Any]]:
    """Translate a conjunction of predicates into one SQL condition on alias ``m``.

    Args:
        preds: the filters to AND — usually :attr:`Query.filters` (the scope first,
            then the predicate); a single :class:`Predicate`, or ``None`` / ``()`` for
            no filter.

    Returns:
        ``(condition, params)``; ``("1", {})`` without filters. The ``i``-th filter's
        value is bound as ``:pv<i>``, never spliced (a hostile scope or id is only ever
        a value); a string that is not UTF-8 (:func:`~agentmem.text.is_utf8`), which no
        stored value equals and apsw cannot bind, is bound as NULL (``= NULL`` is never
        true). Column names come from a fixed table; the condition of each shape of
        filters (their fields and ops) is composed once and reused.

    Raises:
        ArmError: for a (field, op) pair outside :data:`_PREDICATE_SQL`.
    """
    if preds is None:
        preds = ()
    elif isinstance(preds, Predicate):
        preds = (preds,)
    cond, names = _condition(tuple((p.field, p.op) for p in preds))
    params: dict[str, Any] = {}
    for name, pred in zip(names, preds, strict=True):
        if name is not None:
            value = pred.value
            params[name] = None if isinstance(value, str) and not is_utf8(value) else value
    return cond, params


def format_plan(rows: list[tuple[Any, ...]]) -> str:
    """Render EXPLAIN QUERY PLAN rows ``(id, parent, notused, detail)`` as an indented tree."""
    depth: dict[int, int] = {0: -1}
    lines = ["QUERY PLAN"]
    for node_id, parent, _notused, detail in rows:
        d = depth.get(parent, -1) + 1
        depth[node_id] = d
        lines.append("   " * d + "|--" + str(detail))
    return "\n".join(lines)


def explain_statement(conn: apsw.Connection, label: str, sql: str, params: Any) -> str:
    """Return ``-- label: <sql on one line>`` and the statement's indented query plan.

    Runs ``EXPLAIN QUERY PLAN`` of ``sql`` with ``params`` on ``conn`` (:func:`format_plan`).

    Raises:
        apsw.Error: when SQLite cannot plan the statement.
    """
    rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return f"-- {label}: {' '.join(sql.split())}\n{format_plan(rows)}"
