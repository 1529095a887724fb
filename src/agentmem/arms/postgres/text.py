"""The text arms: ``pg-btree`` (ILIKE-term scoring) and ``pg-gin`` (tsvector + GIN, ts_rank_cd)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from psycopg import sql

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.postgres.base import PgArm
from agentmem.sql.postgres.queries import (
    TS_RANK_NORMALIZATION,
    PredicateShape,
    check_normalization,
    condition_sql,
    predicate_parts,
    rendered,
    safe_terms,
    tsquery_expr,
)
from agentmem.text import TERM_EXTRACTIONS, check_choice, like_pattern

#: pg-btree's orders between memories of equal score (its ``tie_break``): newest first, or
#: ``seq`` descending alone (the study's)
BTREE_TIE_ORDERS = {"newest": "created_day DESC, seq DESC", "seq": "seq DESC"}
#: What follows pg-gin's rank in its ORDER BY (its ``tie_break``): newest first, or nothing,
#: so equal ranks come in the engine's order (the study's ``ORDER BY ts_rank_cd(...) DESC``)
GIN_TIE_ORDERS = {"newest": ", created_day DESC, seq DESC", "engine": ""}


class PgBtreeArm(PgArm):
    r"""``pg-btree``: B-tree indexes for predicates, ILIKE-term scoring for text.

    Same scoring as sqlite-btree: score = number of query terms
    (:func:`agentmem.text.query_terms`) contained in the body, case-insensitively;
    ``WHERE score > 0 AND <predicate> ORDER BY score DESC, created_day DESC, seq DESC
    LIMIT k``. Text without terms returns no ids (the count, if wanted, still comes).

    Each term is tested as ``lb LIKE lower(%(t<i>)s) ESCAPE '\'``
    (:func:`agentmem.text.like_pattern`) against ``lb = lower(body)``, computed once per
    row behind an ``OFFSET 0`` fence; a second fence keeps the score a column computed
    once per row (pulled up, the planner would compute the sum again in the sort key for
    every row that passes ``score > 0``). That is ``body ILIKE %(t<i>)s`` by definition: in a
    multi-byte encoding PostgreSQL's ILIKE lowers both sides and matches with LIKE
    (``src/backend/utils/adt/like.c``), but it lowers the body again for every term, which
    made this arm's scan three times slower (docs/arms/postgres.md, "The text arms").

    Scope: in the search (``scope_id = $s`` AND-ed with the predicate in the ``WHERE``;
    the planner may use the partial index ``memories_scope_id_idx``).

    Args:
        terms: the term extraction, ``"agentmem"`` or ``"study"``
            (:data:`agentmem.text.TERM_EXTRACTIONS`; a repeated study term counts twice).
        tie_break: a key of :data:`BTREE_TIE_ORDERS` (``"seq"``: the study's).
    """

    name: ClassVar[str] = "pg-btree"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="none", text_access="b-tree+like"
    )
    study_choices: ClassVar[dict[str, dict[str, Any]]] = {
        "terms": {"terms": "study"},
        "ties": {"tie_break": "seq"},
    }

    def __init__(self, *, terms: str = "agentmem", tie_break: str = "newest") -> None:
        super().__init__()
        self.terms = check_choice("terms", terms, TERM_EXTRACTIONS)
        self.tie_break = check_choice("tie_break", tie_break, tuple(BTREE_TIE_ORDERS))

    def _ranking(self, q: base.Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        terms = safe_terms(q.text, self.terms)
        if not terms:
            return None
        shape, params = predicate_parts(q.filters)
        binds = {f"t{i}": like_pattern(t) for i, t in enumerate(terms)}
        stmt = _btree_sql(len(terms), shape, self.tie_break)
        return stmt, {**params, **binds, "k": int(k)}


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

    Args:
        terms: the term extraction, ``"agentmem"`` or ``"study"``
            (:data:`agentmem.text.TERM_EXTRACTIONS`).
        tie_break: a key of :data:`GIN_TIE_ORDERS` (``"engine"``: the study's).
        rank_normalization: ``ts_rank_cd``'s normalization bit mask (default
            :data:`~agentmem.sql.postgres.queries.TS_RANK_NORMALIZATION`; the study's 0).
    """

    name: ClassVar[str] = "pg-gin"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("rank_normalization", "query", (0, 2, 4, 32), "ts_rank_cd normalization bit mask"),
    )
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="none", text_access="gin-tsvector"
    )
    study_choices: ClassVar[dict[str, dict[str, Any]]] = {
        "terms": {"terms": "study"},
        "ties": {"tie_break": "engine"},
        "normalisation": {"rank_normalization": 0},
    }

    def __init__(
        self,
        *,
        terms: str = "agentmem",
        tie_break: str = "newest",
        rank_normalization: int = TS_RANK_NORMALIZATION,
    ) -> None:
        super().__init__()
        self.terms = check_choice("terms", terms, TERM_EXTRACTIONS)
        self.tie_break = check_choice("tie_break", tie_break, tuple(GIN_TIE_ORDERS))
        self.rank_normalization = check_normalization(rank_normalization)

    def _ranking(self, q: base.Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        terms = safe_terms(q.text, self.terms)
        if not terms:
            return None
        shape, params = predicate_parts(q.filters)
        tparams = {f"t{i}": t for i, t in enumerate(terms)}
        return _gin_sql(len(terms), shape, self.tie_break), {
            **params,
            **tparams,
            "k": int(k),
            "rnorm": self.rank_normalization,
        }


@lru_cache(maxsize=256)
def _btree_sql(n_terms: int, shape: PredicateShape, tie_break: str = "newest") -> sql.SQL:
    """pg-btree's ranking statement for ``n_terms`` terms, a filter shape and a tie-break.

    Rendered once per combination (``tie_break`` a key of :data:`BTREE_TIE_ORDERS`).
    """
    score = sql.SQL(" + ").join(
        sql.SQL("(lb LIKE lower({}) ESCAPE '\\')::int").format(sql.Placeholder(f"t{i}"))
        for i in range(n_terms)
    )
    return rendered(
        sql.SQL(
            "SELECT memory_id FROM ("
            "SELECT memory_id, created_day, seq, ({}) AS score FROM ("
            "SELECT memory_id, created_day, seq, lower(body) AS lb FROM memories WHERE {} "
            "OFFSET 0) AS lowered OFFSET 0"
            ") AS scored WHERE score > 0 "
            "ORDER BY score DESC, {} LIMIT %(k)s"
        ).format(score, condition_sql(shape), sql.SQL(BTREE_TIE_ORDERS[tie_break]))
    )


@lru_cache(maxsize=256)
def _gin_sql(n_terms: int, shape: PredicateShape, tie_break: str = "newest") -> sql.SQL:
    """pg-gin's ranking statement for ``n_terms`` terms, a filter shape and a tie-break.

    Rendered once per combination (``tie_break`` a key of :data:`GIN_TIE_ORDERS`).
    """
    tsq = tsquery_expr(n_terms)
    return rendered(
        sql.SQL(
            "SELECT memory_id FROM memories WHERE tsv @@ {tsq} AND {cond} "
            "ORDER BY ts_rank_cd(tsv, {tsq}, %(rnorm)s) DESC{ties} LIMIT %(k)s"
        ).format(tsq=tsq, cond=condition_sql(shape), ties=sql.SQL(GIN_TIE_ORDERS[tie_break]))
    )
