"""``sqlite-fts``: FTS5 bm25 ranking with the predicate in the same statement."""

from __future__ import annotations

from typing import Any, ClassVar

from agentmem.arms import base
from agentmem.arms.sqlite.store import SqliteArm
from agentmem.sql.sqlite.statements import predicate_sql
from agentmem.text import fts5_match


class SqliteFtsArm(SqliteArm):
    """``sqlite-fts``: FTS5 (``porter unicode61``) over memory bodies, ranked by ``bm25()``.

    The match expression is :func:`agentmem.text.fts5_match` (every term quoted,
    OR-ed); the predicate sits in the same statement (``JOIN memories ... WHERE``). Ties
    on bm25 go newest first (larger ``created_day``, then larger ``seq``). Text with no
    terms returns no ids (the count, if wanted, is still returned).

    Scope: in the search (``m.scope_id = ?`` AND-ed with the predicate beside ``MATCH``).
    """

    name: ClassVar[str] = "sqlite-fts"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="none", text_access="fts5-bm25"
    )

    def _ranking(self, q: base.Query, k: int) -> tuple[str, dict[str, Any]] | None:
        match = fts5_match(q.text)
        if match is None:
            return None
        cond, params = predicate_sql(q.filters)
        sql = (
            "SELECT m.memory_id FROM memories_fts JOIN memories AS m "
            "ON m.id = memories_fts.rowid "
            f"WHERE memories_fts MATCH :match AND {cond} "
            "ORDER BY bm25(memories_fts), m.created_day DESC, m.seq DESC LIMIT :k"
        )
        return sql, {**params, "match": match, "k": int(k)}
