"""SQL fragments of the Postgres arms' queries: filters and OR-tsqueries, always bound.

:func:`predicate_sql` turns a query's filters (its scope and its predicate,
:attr:`~agentmem.arms.base.Query.filters`) into one condition; the three-tier arm uses it
for its L3 tier too.

Every value that comes from a query (free text, tsquery terms, predicate values) is a
bound parameter; SQL text is composed only from fixed fragments and
:class:`psycopg.sql.Identifier` column names from a fixed set. Free text becomes terms
via :mod:`agentmem.text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from agentmem.arms.base import PREDICATE_FIELDS, ArmError, Predicate
from agentmem.arms.postgres.schema import TS_CONFIG
from agentmem.text import is_utf8, query_terms

#: ``ts_rank_cd`` normalization flag: 1 divides the rank by 1 + log(document length)
#: (PostgreSQL manual, "Ranking Search Results"), the length normalisation BM25 also has.
#: Without it a short statement of a fact ties with long chatter that merely mentions the
#: identifier, and the newest-first tie-break hands the slot to the chatter.
TS_RANK_NORMALIZATION = 1


def _one_condition(pred: Predicate, name: str) -> tuple[sql.Composable, dict[str, Any]]:
    """Translate one predicate, its value bound as ``name``.

    A text value holding NUL or not UTF-8 (:func:`~agentmem.text.is_utf8`) matches
    nothing (PostgreSQL ``text`` cannot store either, so no stored value equals it, and
    psycopg cannot send the second): the condition is ``FALSE`` and nothing is bound.

    Raises:
        ArmError: for a field or op outside the supported set.
    """
    if pred.field not in PREDICATE_FIELDS:
        raise ArmError(f"unsupported predicate field {pred.field!r}")
    col = sql.Identifier(pred.field)
    if pred.op == "is_null":
        return sql.SQL("{} IS NULL").format(col), {}
    if pred.op not in ("<=", "="):
        raise ArmError(f"unsupported predicate op {pred.op!r}")
    if isinstance(pred.value, str) and ("\x00" in pred.value or not is_utf8(pred.value)):
        return sql.SQL("FALSE"), {}
    cmp = sql.SQL("{} <= {}") if pred.op == "<=" else sql.SQL("{} = {}")
    return cmp.format(col, sql.Placeholder(name)), {name: pred.value}


def predicate_sql(
    preds: Predicate | Sequence[Predicate] | None,
) -> tuple[sql.Composable, dict[str, Any]]:
    """Translate a conjunction of predicates into one SQL condition plus its bound values.

    Args:
        preds: the filters to AND — usually :attr:`Query.filters` (the scope first,
            then the predicate); a single :class:`Predicate`, or ``None`` / ``()`` for
            no filter.

    Returns:
        ``(condition, params)``: ``TRUE`` without filters; otherwise the conditions
        ``<column> <= %(pv<i>)s``, ``<column> = %(pv<i>)s`` or ``<column> IS NULL``
        joined by ``AND``, each column an :class:`~psycopg.sql.Identifier` from
        :data:`~agentmem.arms.base.PREDICATE_FIELDS` and the ``i``-th value bound as
        ``pv<i>``, never spliced (a hostile scope or id is only ever a value); a value
        holding NUL or not UTF-8 gives ``FALSE`` (no stored text can hold it).

    Raises:
        ArmError: for a field or op outside the supported set.
    """
    if preds is None:
        preds = ()
    elif isinstance(preds, Predicate):
        preds = (preds,)
    conds: list[sql.Composable] = []
    params: dict[str, Any] = {}
    for i, pred in enumerate(preds):
        cond, bound = _one_condition(pred, f"pv{i}")
        conds.append(cond)
        params.update(bound)
    if not conds:
        return sql.SQL("TRUE"), {}
    if len(conds) == 1:
        return conds[0], params
    return sql.SQL("(") + sql.SQL(" AND ").join(conds) + sql.SQL(")"), params


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
