"""SQL shared by the SQLite-backed arms: predicate conditions and query plans.

The graph and three-tier arms use these too. Every predicate value is a bound parameter;
column names come from a fixed table.
"""

from __future__ import annotations

from typing import Any

import apsw

from agentmem.arms.base import ArmError, Predicate

#: Predicate (field, op) -> SQL on alias ``m``; the value, if any, is bound as ``:pv``.
_PREDICATE_SQL: dict[tuple[str, str], str] = {
    ("created_day", "<="): "m.created_day <= :pv",
    ("created_day", "="): "m.created_day = :pv",
    ("session_id", "="): "m.session_id = :pv",
    ("fact_id", "="): "m.fact_id = :pv",
    ("superseded_by", "="): "m.superseded_by = :pv",
    ("created_day", "is_null"): "m.created_day IS NULL",
    ("session_id", "is_null"): "m.session_id IS NULL",
    ("fact_id", "is_null"): "m.fact_id IS NULL",
    ("superseded_by", "is_null"): "m.superseded_by IS NULL",
}


def predicate_sql(pred: Predicate | None) -> tuple[str, dict[str, Any]]:
    """Translate a predicate into a SQL condition on alias ``m`` plus its bindings.

    Args:
        pred: the structured filter, or ``None``.

    Returns:
        ``(condition, params)``; ``("1", {})`` when ``pred`` is ``None``. The value is
        bound as ``:pv``, never spliced; column names come from a fixed table.

    Raises:
        ArmError: for a (field, op) pair outside :data:`_PREDICATE_SQL`.
    """
    if pred is None:
        return "1", {}
    try:
        cond = _PREDICATE_SQL[(pred.field, pred.op)]
    except KeyError:
        raise ArmError(f"unsupported predicate {pred.field} {pred.op}") from None
    return cond, ({} if pred.op == "is_null" else {"pv": pred.value})


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
