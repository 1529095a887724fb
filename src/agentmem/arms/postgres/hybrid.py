"""The hybrid arm ``pg-hybrid``: GIN and HNSW branches fused by RRF in one SQL statement."""

from __future__ import annotations

from typing import Any, ClassVar

from psycopg import sql

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.postgres.base import PgArm, check_hnsw_build, check_positive
from agentmem.sql.postgres.queries import (
    TS_RANK_NORMALIZATION,
    check_normalization,
    predicate_sql,
    safe_terms,
    tsquery_sql,
)
from agentmem.text import TERM_EXTRACTIONS, check_choice

#: The order between equal scores (the ``tie_break`` parameter): (what follows the GIN
#: rank in that branch's ORDER BY and ranks, the fused list's order after its RRF score).
#: Newest first; or the study's: each branch numbered in the engine's output order
#: (``row_number() OVER ()``), the fused list by memory id ascending
TIE_ORDERS = {
    "newest": (", created_day DESC, seq DESC", "created_day DESC, seq DESC"),
    "memory-id": ("", "memory_id"),
}


class PgHybridArm(PgArm):
    """``pg-hybrid``: GIN branch + HNSW branch fused by RRF, in ONE SQL statement.

    Branch ``gin``: top ``branch_k`` by ``ts_rank_cd`` among ``tsv @@ $tsq AND <predicate>``
    (ties newest first); branch ``vec``: top ``branch_k`` by cosine distance
    (``ORDER BY embedding <=> $q``) among ``<predicate>``. Each branch numbers its rows
    with ``row_number()`` (rank from 1); the branches are combined with ``UNION ALL`` and
    ``GROUP BY memory_id`` and ranked by Reciprocal Rank Fusion (Cormack, Clarke &
    Buettcher 2009): ``score(d) = sum over branches of 1 / (rrf_k + rank_b(d))``; ties
    newest first; ``LIMIT k``. Both branches live in the same statement, so one EXPLAIN
    shows the GIN and the HNSW index. When the text has no terms only the vector branch
    runs. Note: with pgvector's default ``hnsw.ef_search = 40`` the HNSW branch yields at
    most ~40 candidates before filtering, fewer than ``branch_k = 50``.

    Scope: inside BOTH branches before fusion (``scope_id = $s`` AND-ed with the
    predicate in the GIN branch's and the HNSW branch's ``WHERE``); the HNSW branch
    post-filters its index candidates as :class:`~agentmem.arms.postgres.hnsw.PgHnswArm`
    does, so a selective scope can leave that branch short (the GIN branch is exact).

    Args:
        branch_k: candidates per branch (default 50).
        rrf_k: RRF constant (default 60).
        m: HNSW ``m`` (default 16).
        ef_construction: HNSW build list size (default 64; at least ``2 * m``, as pgvector
            requires: a pair it refuses raises ``ValueError`` when the arm is made).
        ef_search: ``hnsw.ef_search`` (default 40).
        terms: the term extraction, ``"agentmem"`` or ``"study"``
            (:data:`agentmem.text.TERM_EXTRACTIONS`).
        tie_break: a key of :data:`TIE_ORDERS` (``"memory-id"``: the study's).
        rank_normalization: ``ts_rank_cd``'s normalization bit mask (default
            :data:`~agentmem.sql.postgres.queries.TS_RANK_NORMALIZATION`; the study's 0).
    """

    name: ClassVar[str] = "pg-hybrid"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("ef_search", "query", (160,), "hnsw.ef_search of the dense branch"),
        Knob("branch_k", "query", (20,), "candidates per branch before RRF"),
        Knob("rrf_k", "query", (), "RRF constant k in 1 / (k + rank)"),
        Knob("m", "build", (), "HNSW links per node"),
        Knob("rank_normalization", "query", (), "ts_rank_cd normalization of the text branch"),
    )
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="hnsw-filtered", text_access="gin-tsvector"
    )
    study_choices: ClassVar[dict[str, dict[str, Any]]] = {
        "terms": {"terms": "study"},
        "ties": {"tie_break": "memory-id"},
        "normalisation": {"rank_normalization": 0},
    }

    def __init__(
        self,
        *,
        branch_k: int = 50,
        rrf_k: int = 60,
        m: int = 16,
        ef_construction: int = 64,
        ef_search: int = 40,
        terms: str = "agentmem",
        tie_break: str = "newest",
        rank_normalization: int = TS_RANK_NORMALIZATION,
    ) -> None:
        super().__init__()
        self.terms = check_choice("terms", terms, TERM_EXTRACTIONS)
        self.tie_break = check_choice("tie_break", tie_break, tuple(TIE_ORDERS))
        self.rank_normalization = check_normalization(rank_normalization)
        check_positive(branch_k=branch_k, m=m, ef_construction=ef_construction, ef_search=ef_search)
        check_hnsw_build(m, ef_construction)
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 0:
            raise ValueError(f"rrf_k must be a non-negative integer, got {rrf_k!r}")
        self.branch_k = branch_k
        self.rrf_k = rrf_k
        self.m = m
        self.ef_construction = ef_construction
        self.ef_search = ef_search

    def _session_settings(self) -> dict[str, str]:
        return {"hnsw.ef_search": str(self.ef_search), "hnsw.iterative_scan": "off"}

    def _ranking(self, q: base.Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        cond, params = predicate_sql(q.filters)
        binds: dict[str, Any] = {
            **params,
            "qv": self._query_vector(q),
            "bk": self.branch_k,
            "rrfk": self.rrf_k,
            "k": int(k),
        }
        rank_ties, fused_ties = TIE_ORDERS[self.tie_break]
        # numbered in the branch's own order: ``OVER ()`` over the ordered, limited subquery
        # under the study's tie-break, the full order otherwise
        vec_window = "ORDER BY distance" if rank_ties else ""
        vec = sql.SQL(
            "vec AS (SELECT memory_id, created_day, seq, "
            "row_number() OVER ({window}) AS rnk FROM ("
            "SELECT memory_id, created_day, seq, embedding <=> %(qv)s AS distance "
            "FROM memories WHERE {cond} ORDER BY distance LIMIT %(bk)s) AS v)"
        ).format(cond=cond, window=sql.SQL(vec_window))
        ctes = [vec]
        union = sql.SQL("SELECT memory_id, created_day, seq, rnk FROM vec")
        terms = safe_terms(q.text, self.terms)
        if terms:
            tsq, tparams = tsquery_sql(terms)
            binds.update(tparams)
            binds["rnorm"] = self.rank_normalization
            gin_window = f"ORDER BY rank DESC{rank_ties}" if rank_ties else ""
            gin = sql.SQL(
                "gin AS (SELECT memory_id, created_day, seq, row_number() OVER "
                "({window}) AS rnk FROM ("
                "SELECT memory_id, created_day, seq, ts_rank_cd(tsv, {tsq}, %(rnorm)s) AS rank "
                "FROM memories WHERE tsv @@ {tsq} AND {cond} "
                "ORDER BY rank DESC{ties} LIMIT %(bk)s) AS g)"
            ).format(tsq=tsq, cond=cond, window=sql.SQL(gin_window), ties=sql.SQL(rank_ties))
            ctes.insert(0, gin)
            union = sql.SQL("SELECT memory_id, created_day, seq, rnk FROM gin UNION ALL ") + union
        stmt = sql.SQL(
            "WITH {ctes} SELECT memory_id FROM ({union}) AS u "
            "GROUP BY memory_id, created_day, seq "
            "ORDER BY sum(1.0 / (%(rrfk)s + rnk)) DESC, {fused} "
            "LIMIT %(k)s"
        ).format(ctes=sql.SQL(", ").join(ctes), union=union, fused=sql.SQL(fused_ties))
        return stmt, binds
