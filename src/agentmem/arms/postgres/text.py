"""The text arms: ``pg-btree`` (ILIKE-term scoring) and ``pg-gin`` (tsvector + GIN, ts_rank_cd)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from psycopg import sql

from agentmem.arms import base
from agentmem.arms.postgres.base import PgArm
from agentmem.sql.postgres.queries import (
    TS_RANK_NORMALIZATION,
    PredicateShape,
    condition_sql,
    predicate_parts,
    rendered,
    safe_terms,
    tsquery_expr,
)
from agentmem.text import like_pattern


class PgBtreeArm(PgArm):
    r"""``pg-btree``: B-tree indexes for predicates, ILIKE-term scoring for text.

    Same scoring as sqlite-btree: score = number of query terms
    (:func:`agentmem.text.query_terms`) contained in the body, case-insensitively;
    ``WHERE score > 0 AND <predicate> ORDER BY score DESC, created_day DESC, seq DESC
    LIMIT k``. Text without terms returns no ids (the count, if wanted, still comes).

    Each term is tested as ``lb LIKE lower(%(t<i>)s) ESCAPE '\'``
    (:func:`agentmem.text.like_pattern`) against ``lb = lower(body)``, computed once per
    row behind an ``OFFSET 0`` fence. That is ``body ILIKE %(t<i>)s`` by definition: in a
    multi-byte encoding PostgreSQL's ILIKE lowers both sides and matches with LIKE
    (``src/backend/utils/adt/like.c``), but it lowers the body again for every term, which
    made this arm's scan three times slower (docs/arms/postgres.md, "The text arms").

    Scope: in the search (``scope_id = $s`` AND-ed with the predicate in the ``WHERE``;
    the planner may use the partial index ``memories_scope_id_idx``).
    """

    name: ClassVar[str] = "pg-btree"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="none", text_access="b-tree+like"
    )

    def _ranking(self, q: base.Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        terms = safe_terms(q.text)
        if not terms:
            return None
        shape, params = predicate_parts(q.filters)
        binds = {f"t{i}": like_pattern(t) for i, t in enumerate(terms)}
        return _btree_sql(len(terms), shape), {**params, **binds, "k": int(k)}


class PgGinArm(PgArm):
    """``pg-gin``: stored English ``tsvector`` + GIN index, ranked by ``ts_rank_cd``.

    ``tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED`` with a GIN
    index; the query is the OR of the terms (:func:`tsquery_sql`, each term through
    ``plainto_tsquery``, so no text can raise a tsquery syntax error)::

        SELECT memory_id FROM memories WHERE tsv @@ $tsq AND <predicate>
        ORDER BY ts_rank_cd(tsv, $tsq, 1) DESC, created_day DESC, seq DESC LIMIT k

    Text without terms returns no ids (the count, if wanted, still comes).

    Scope: in the search (``scope_id = $s`` AND-ed with the predicate beside the GIN
    match ``tsv @@ $tsq``).
    """

    name: ClassVar[str] = "pg-gin"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="none", text_access="gin-tsvector"
    )

    def _ranking(self, q: base.Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        terms = safe_terms(q.text)
        if not terms:
            return None
        shape, params = predicate_parts(q.filters)
        tparams = {f"t{i}": t for i, t in enumerate(terms)}
        return _gin_sql(len(terms), shape), {
            **params,
            **tparams,
            "k": int(k),
            "rnorm": TS_RANK_NORMALIZATION,
        }


@lru_cache(maxsize=256)
def _btree_sql(n_terms: int, shape: PredicateShape) -> sql.SQL:
    """pg-btree's ranking statement for ``n_terms`` terms and a filter shape, rendered once."""
    score = sql.SQL(" + ").join(
        sql.SQL("(lb LIKE lower({}) ESCAPE '\\')::int").format(sql.Placeholder(f"t{i}"))
        for i in range(n_terms)
    )
    return rendered(
        sql.SQL(
            "SELECT memory_id FROM ("
            "SELECT memory_id, created_day, seq, ({}) AS score FROM ("
            "SELECT memory_id, created_day, seq, lower(body) AS lb FROM memories WHERE {} "
            "OFFSET 0) AS lowered"
            ") AS scored WHERE score > 0 "
            "ORDER BY score DESC, created_day DESC, seq DESC LIMIT %(k)s"
        ).format(score, condition_sql(shape))
    )


@lru_cache(maxsize=256)
def _gin_sql(n_terms: int, shape: PredicateShape) -> sql.SQL:
    """pg-gin's ranking statement for ``n_terms`` terms and a filter shape, rendered once."""
    tsq = tsquery_expr(n_terms)
    return rendered(
        sql.SQL(
            "SELECT memory_id FROM memories WHERE tsv @@ {tsq} AND {cond} "
            "ORDER BY ts_rank_cd(tsv, {tsq}, %(rnorm)s) DESC, created_day DESC, seq DESC "
            "LIMIT %(k)s"
        ).format(tsq=tsq, cond=condition_sql(shape))
    )
