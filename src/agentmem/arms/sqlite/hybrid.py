"""``sqlite-hybrid``: FTS5 bm25 and a cosine scan fused by Reciprocal Rank Fusion in SQL.

Why the vector branch is a full scan rather than a ``vec0`` table: docs/arms/sqlite.md.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.sqlite.store import SqliteArm
from agentmem.sql.sqlite.statements import predicate_sql
from agentmem.text import TERM_EXTRACTIONS, check_choice, fts5_match

#: The order between equal scores (the ``tie_break`` parameter): (a branch's row_number
#: window, a branch's ORDER BY, the fused list's ORDER BY). Newest first; or the study's:
#: each branch in the engine's order (rowid, ``id``), the fused list by memory id ascending
TIE_ORDERS = {
    "newest": (
        "created_day DESC, seq DESC",
        "m.created_day DESC, m.seq DESC",
        "m.created_day DESC, m.seq DESC",
    ),
    "memory-id": ("id", "m.id", "m.memory_id"),
}


class SqliteHybridArm(SqliteArm):
    """``sqlite-hybrid``: FTS5 bm25 top ``branch_k`` + cosine top ``branch_k``, fused by RRF.

    Both branches carry the predicate (and the scope) in their ``WHERE``. The vector
    branch is a full scan of sqlite-vec's ``vec_distance_cosine`` over the float32 BLOB
    column (vec0 cannot filter on ``IS NULL``). Fusion is Reciprocal Rank Fusion
    (Cormack, Clarke & Buettcher 2009): ``score(d) = sum over branches of
    1 / (rrf_k + rank_b(d))``, ranks from 1, computed in the same SQL statement; ties
    newest first; cut to ``k``. When the text has no terms the vector branch alone
    answers.

    Scope: in the search, inside BOTH branches before fusion (``m.scope_id = ?`` AND-ed
    with the predicate in each branch's ``WHERE``), so neither branch fills its
    ``branch_k`` candidates from another scope.

    Args:
        branch_k: candidates taken from each branch (default 50).
        rrf_k: RRF constant (default 60).
        terms: the term extraction, ``"agentmem"`` or ``"study"``
            (:data:`agentmem.text.TERM_EXTRACTIONS`).
        tie_break: a key of :data:`TIE_ORDERS` (``"memory-id"``: the study's).
    """

    name: ClassVar[str] = "sqlite-hybrid"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("branch_k", "query", (20, 100), "candidates per branch before RRF"),
        Knob("rrf_k", "query", (10,), "RRF constant k in 1 / (k + rank)"),
    )
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="brute-force", text_access="fts5-bm25"
    )

    study_choices: ClassVar[dict[str, dict[str, Any]]] = {
        "terms": {"terms": "study"},
        "ties": {"tie_break": "memory-id"},
    }

    def __init__(
        self,
        *,
        branch_k: int = 50,
        rrf_k: int = 60,
        terms: str = "agentmem",
        tie_break: str = "newest",
    ) -> None:
        super().__init__()
        self.terms = check_choice("terms", terms, TERM_EXTRACTIONS)
        self.tie_break = check_choice("tie_break", tie_break, tuple(TIE_ORDERS))
        if branch_k < 1:
            raise ValueError(f"branch_k must be >= 1, got {branch_k}")
        if rrf_k < 0:
            raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")
        self.branch_k = int(branch_k)
        self.rrf_k = int(rrf_k)

    def _query_vector(self, q: base.Query) -> bytes:
        """Return the query embedding as float32 bytes.

        Raises:
            ArmError: when the embedding is missing or not of size 384.
        """
        v = base.checked_vector(q.embedding, self.name, f"query {q.query_id!r}", base.VECTOR_DIM)
        return v.tobytes()

    def _ranking(self, q: base.Query, k: int) -> tuple[str, dict[str, Any]] | None:
        cond, params = predicate_sql(q.filters)
        match = fts5_match(q.text, self.terms)
        window, branch, fused = TIE_ORDERS[self.tie_break]
        branches = [
            f"vec AS (SELECT id, row_number() OVER (ORDER BY dist, {window}) "
            "AS rnk FROM (SELECT m.id, m.created_day, m.seq, "
            "vec_distance_cosine(v.embedding, :qvec) AS dist "
            "FROM memory_vectors AS v JOIN memories AS m ON m.id = v.id "
            f"WHERE {cond} ORDER BY dist, {branch} LIMIT :bk))"
        ]
        union = "SELECT id, rnk FROM vec"
        binds: dict[str, Any] = {
            **params,
            "qvec": self._query_vector(q),
            "bk": self.branch_k,
            "rrfk": self.rrf_k,
            "k": int(k),
        }
        if match is not None:
            branches.insert(
                0,
                f"fts AS (SELECT id, row_number() OVER (ORDER BY s, {window}) "
                "AS rnk FROM (SELECT m.id, m.created_day, m.seq, bm25(memories_fts) AS s "
                "FROM memories_fts JOIN memories AS m ON m.id = memories_fts.rowid "
                f"WHERE memories_fts MATCH :match AND {cond} "
                f"ORDER BY s, {branch} LIMIT :bk))",
            )
            union = "SELECT id, rnk FROM fts UNION ALL " + union
            binds["match"] = match
        sql = (
            f"WITH {', '.join(branches)}, "
            f"fused AS (SELECT id, sum(1.0 / (:rrfk + rnk)) AS score FROM ({union}) GROUP BY id) "
            "SELECT m.memory_id FROM fused JOIN memories AS m ON m.id = fused.id "
            f"ORDER BY fused.score DESC, {fused} LIMIT :k"
        )
        return sql, binds
