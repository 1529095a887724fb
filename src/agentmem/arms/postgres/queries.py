"""SQL fragments of the Postgres arms' queries: predicates and OR-tsqueries, always bound.

Every value that comes from a query (free text, tsquery terms, predicate values) is a
bound parameter; SQL text is composed only from fixed fragments and
:class:`psycopg.sql.Identifier` column names from a fixed set. Free text becomes terms
via :mod:`agentmem.text`.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from agentmem.arms.base import PREDICATE_FIELDS, ArmError, Predicate
from agentmem.arms.postgres.schema import TS_CONFIG
from agentmem.text import query_terms

#: ``ts_rank_cd`` normalization flag: 1 divides the rank by 1 + log(document length)
#: (PostgreSQL manual, "Ranking Search Results"), the length normalisation BM25 also has.
#: Without it a short statement of a fact ties with long chatter that merely mentions the
#: identifier, and the newest-first tie-break hands the slot to the chatter.
TS_RANK_NORMALIZATION = 1


def predicate_sql(pred: Predicate | None) -> tuple[sql.Composable, dict[str, Any]]:
    """Translate a predicate into a SQL condition on ``memories`` plus its bound value.

    Args:
        pred: the structured filter, or ``None``.

    Returns:
        ``(condition, params)``: ``TRUE`` when ``pred`` is ``None``; otherwise
        ``<column> <= %(pv)s``, ``<column> = %(pv)s`` or ``<column> IS NULL``, the column
        an :class:`~psycopg.sql.Identifier` from :data:`~agentmem.arms.base.PREDICATE_FIELDS`
        and the value bound as ``pv``, never spliced.

    Raises:
        ArmError: for a field or op outside the supported set.
    """
    if pred is None:
        return sql.SQL("TRUE"), {}
    if pred.field not in PREDICATE_FIELDS:
        raise ArmError(f"unsupported predicate field {pred.field!r}")
    col = sql.Identifier(pred.field)
    if pred.op == "is_null":
        return sql.SQL("{} IS NULL").format(col), {}
    if pred.op == "<=":
        return sql.SQL("{} <= %(pv)s").format(col), {"pv": pred.value}
    if pred.op == "=":
        return sql.SQL("{} = %(pv)s").format(col), {"pv": pred.value}
    raise ArmError(f"unsupported predicate op {pred.op!r}")


def safe_terms(text: str) -> list[str]:
    """Return :func:`query_terms` of ``text`` without NUL characters (PostgreSQL rejects them)."""
    return [t for t in (x.replace("\x00", "") for x in query_terms(text or "")) if t]


def tsquery_sql(terms: list[str], prefix: str = "t") -> tuple[sql.Composable, dict[str, Any]]:
    """Build an OR-tsquery from ``terms``, server-side and injection-proof.

    Each term becomes ``plainto_tsquery('english', %(t<i>)s)`` and the pieces are joined
    with the tsquery OR operator ``||``. ``plainto_tsquery`` treats its argument as plain
    text (operators ``& | ! : * ( ) '`` are ignored), so no user text can produce a
    tsquery syntax error; ``ADR-297`` is parsed by the same parser as the stored
    ``tsvector`` (``'adr' & '-297'``: both parts must occur, as they do in a body that
    carries the identifier). A term that is only a stopword yields an empty tsquery,
    which ``||`` drops.

    Args:
        terms: non-empty list of search terms.
        prefix: parameter-name prefix.

    Returns:
        ``(expression, params)``.
    """
    parts = [
        sql.SQL("plainto_tsquery({}, {})").format(
            sql.Literal(TS_CONFIG), sql.Placeholder(f"{prefix}{i}")
        )
        for i in range(len(terms))
    ]
    expr = sql.SQL("(") + sql.SQL(" || ").join(parts) + sql.SQL(")")
    return expr, {f"{prefix}{i}": t for i, t in enumerate(terms)}
