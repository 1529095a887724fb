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
from functools import lru_cache
from typing import Any

from psycopg import sql

from agentmem.arms.base import PREDICATE_FIELDS, ArmError, Predicate
from agentmem.sql.postgres.schema import TS_CONFIG
from agentmem.text import is_utf8, query_terms

#: ``ts_rank_cd`` normalization flag: 1 divides the rank by 1 + log(document length)
#: (PostgreSQL manual, "Ranking Search Results"), the length normalisation BM25 also has.
#: Without it a short statement of a fact ties with long chatter that merely mentions the
#: identifier, and the newest-first tie-break hands the slot to the chatter.
TS_RANK_NORMALIZATION = 1


#: A conjunction's shape: one ``(column, op)`` per predicate (``("", "false")`` for a value
#: no stored text can equal). Statements are composed and rendered once per shape
#: (:func:`condition_sql`); the values are bound on every call.
PredicateShape = tuple[tuple[str, str], ...]


def rendered(stmt: sql.Composable) -> sql.SQL:
    """``stmt`` rendered to its SQL text once, as a :class:`psycopg.sql.SQL` to compose or run.

    Identifiers and literals are quoted as psycopg quotes them without a connection
    (``Composable.as_string(None)``); running the result skips psycopg's composition.
    """
    return sql.SQL(stmt.as_string(None))


def predicate_parts(
    preds: Predicate | Sequence[Predicate] | None,
) -> tuple[PredicateShape, dict[str, Any]]:
    """Split a conjunction of predicates into its shape and its bound values.

    The ``i``-th value is bound as ``pv<i>``. A text value holding NUL or not UTF-8
    (:func:`~agentmem.text.is_utf8`) matches nothing (PostgreSQL ``text`` cannot store
    either, and psycopg cannot send the second): its condition is ``FALSE``, nothing bound.

    Raises:
        ArmError: for a field or op outside the supported set.
    """
    if preds is None:
        preds = ()
    elif isinstance(preds, Predicate):
        preds = (preds,)
    shape: list[tuple[str, str]] = []
    params: dict[str, Any] = {}
    for i, pred in enumerate(preds):
        if pred.field not in PREDICATE_FIELDS:
            raise ArmError(f"unsupported predicate field {pred.field!r}")
        if pred.op not in ("<=", "=", "is_null"):
            raise ArmError(f"unsupported predicate op {pred.op!r}")
        value = pred.value
        if (
            pred.op != "is_null"
            and isinstance(value, str)
            and ("\x00" in value or not is_utf8(value))
        ):
            shape.append(("", "false"))
            continue
        shape.append((pred.field, pred.op))
        if pred.op != "is_null":
            params[f"pv{i}"] = value
    return tuple(shape), params


@lru_cache(maxsize=256)
def condition_sql(shape: PredicateShape) -> sql.SQL:
    """The rendered condition of a :data:`PredicateShape` (``TRUE`` for the empty one).

    Conditions ``<column> <= %(pv<i>)s``, ``<column> = %(pv<i>)s``, ``<column> IS NULL``
    or ``FALSE``, joined by ``AND``; each column an :class:`~psycopg.sql.Identifier`.
    """
    conds: list[sql.Composable] = []
    for i, (field, op) in enumerate(shape):
        if op == "false":
            conds.append(sql.SQL("FALSE"))
        elif op == "is_null":
            conds.append(sql.SQL("{} IS NULL").format(sql.Identifier(field)))
        else:
            cmp = sql.SQL("{} <= {}") if op == "<=" else sql.SQL("{} = {}")
            conds.append(cmp.format(sql.Identifier(field), sql.Placeholder(f"pv{i}")))
    if not conds:
        return sql.SQL("TRUE")
    if len(conds) == 1:
        return rendered(conds[0])
    return rendered(sql.SQL("(") + sql.SQL(" AND ").join(conds) + sql.SQL(")"))


def predicate_sql(
    preds: Predicate | Sequence[Predicate] | None,
) -> tuple[sql.Composable, dict[str, Any]]:
    """Translate a conjunction of predicates into one SQL condition plus its bound values.

    Args:
        preds: the filters to AND — usually :attr:`Query.filters` (the scope first,
            then the predicate); a single :class:`Predicate`, or ``None`` / ``()`` for
            no filter.

    Returns:
        ``(condition, params)``: :func:`condition_sql` of the shape and the values of
        :func:`predicate_parts` — ``TRUE`` without filters; otherwise the conditions
        ``<column> <= %(pv<i>)s``, ``<column> = %(pv<i>)s`` or ``<column> IS NULL``
        joined by ``AND``, each column from :data:`~agentmem.arms.base.PREDICATE_FIELDS`
        and the ``i``-th value bound as ``pv<i>``, never spliced (a hostile scope or id is
        only ever a value); a value holding NUL or not UTF-8 gives ``FALSE``.

    Raises:
        ArmError: for a field or op outside the supported set.
    """
    shape, params = predicate_parts(preds)
    return condition_sql(shape), params


def safe_terms(text: str, extraction: str = "agentmem") -> list[str]:
    """Return :func:`query_terms` of ``text`` without NUL characters (PostgreSQL rejects them).

    ``extraction`` is the term extraction (:data:`agentmem.text.TERM_EXTRACTIONS`).
    """
    terms = query_terms(text or "", extraction=extraction)
    return [t for t in (x.replace("\x00", "") for x in terms) if t]


def check_normalization(value: object) -> int:
    """Return ``value`` if it is a ``ts_rank_cd`` normalization bit mask (0–63).

    Raises:
        ValueError: naming the value otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 63:
        raise ValueError(f"rank_normalization must be an integer bit mask 0-63, got {value!r}")
    return value


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
    return tsquery_expr(len(terms), prefix), {f"{prefix}{i}": t for i, t in enumerate(terms)}


@lru_cache(maxsize=256)
def tsquery_expr(n_terms: int, prefix: str = "t") -> sql.SQL:
    """The rendered OR-tsquery of :func:`tsquery_sql` over ``n_terms`` bound terms."""
    parts = [
        sql.SQL("plainto_tsquery({}, {})").format(
            sql.Literal(TS_CONFIG), sql.Placeholder(f"{prefix}{i}")
        )
        for i in range(n_terms)
    ]
    return rendered(sql.SQL("(") + sql.SQL(" || ").join(parts) + sql.SQL(")"))
