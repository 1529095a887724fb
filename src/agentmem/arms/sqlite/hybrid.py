"""``sqlite-hybrid``: FTS5 bm25 and a cosine scan fused by Reciprocal Rank Fusion in SQL.

Why the vector branch is a full scan rather than a ``vec0`` table: docs/arms/sqlite.md.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agentmem.arms import base
from agentmem.arms.sqlite.store import SqliteArm
from agentmem.sql.sqlite.statements import predicate_sql
from agentmem.text import fts5_match


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
    """

    name: ClassVar[str] = "sqlite-hybrid"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="brute-force", text_access="fts5-bm25"
    )

    def __init__(self, *, branch_k: int = 50, rrf_k: int = 60) -> None:
        super().__init__()
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
        match = fts5_match(q.text)
        branches = [
            "vec AS (SELECT id, row_number() OVER (ORDER BY dist, created_day DESC, seq DESC) "
            "AS rnk FROM (SELECT m.id, m.created_day, m.seq, "
            "vec_distance_cosine(v.embedding, :qvec) AS dist "
            "FROM memory_vectors AS v JOIN memories AS m ON m.id = v.id "
            f"WHERE {cond} ORDER BY dist, m.created_day DESC, m.seq DESC LIMIT :bk))"
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
                "fts AS (SELECT id, row_number() OVER (ORDER BY s, created_day DESC, seq DESC) "
                "AS rnk FROM (SELECT m.id, m.created_day, m.seq, bm25(memories_fts) AS s "
                "FROM memories_fts JOIN memories AS m ON m.id = memories_fts.rowid "
                f"WHERE memories_fts MATCH :match AND {cond} "
                "ORDER BY s, m.created_day DESC, m.seq DESC LIMIT :bk))",
            )
            union = "SELECT id, rnk FROM fts UNION ALL " + union
            binds["match"] = match
        sql = (
            f"WITH {', '.join(branches)}, "
            f"fused AS (SELECT id, sum(1.0 / (:rrfk + rnk)) AS score FROM ({union}) GROUP BY id) "
            "SELECT m.memory_id FROM fused JOIN memories AS m ON m.id = fused.id "
            "ORDER BY fused.score DESC, m.created_day DESC, m.seq DESC LIMIT :k"
        )
        return sql, binds
