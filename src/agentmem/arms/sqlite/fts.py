"""``sqlite-fts``: FTS5 bm25 ranking with the predicate in the same statement."""

from __future__ import annotations

from typing import Any, ClassVar

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.sqlite.store import SqliteArm
from agentmem.sql.sqlite.statements import predicate_sql
from agentmem.text import TERM_EXTRACTIONS, check_choice, fts5_match

#: What follows ``bm25`` in the ORDER BY (the ``tie_break`` parameter): newest first, or
#: the engine's order (the study's ``ORDER BY bm25`` alone: FTS5 yields matches in rowid
#: order and SQLite's sorter keeps the first of equal rows), written out as ``m.id``
TIE_ORDERS = {"newest": ", m.created_day DESC, m.seq DESC", "engine": ", m.id"}


class SqliteFtsArm(SqliteArm):
    """``sqlite-fts``: FTS5 (``porter unicode61``) over memory bodies, ranked by ``bm25()``.

    The match expression is :func:`agentmem.text.fts5_match` (every term quoted,
    OR-ed); the predicate sits in the same statement (``JOIN memories ... WHERE``). Ties
    on bm25 go newest first (larger ``created_day``, then larger ``seq``). Text with no
    terms returns no ids (the count, if wanted, is still returned).

    Scope: in the search (``m.scope_id = ?`` AND-ed with the predicate beside ``MATCH``).

    Args:
        terms: the term extraction, ``"agentmem"`` or ``"study"``
            (:data:`agentmem.text.TERM_EXTRACTIONS`).
        tie_break: a key of :data:`TIE_ORDERS` (``"engine"``: the study's).
    """

    name: ClassVar[str] = "sqlite-fts"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("tie_break", "query", ("engine",), "order among equal bm25 scores"),
        Knob("terms", "query", ("study",), "query term extraction"),
    )
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="none", text_access="fts5-bm25"
    )

    study_choices: ClassVar[dict[str, dict[str, Any]]] = {
        "terms": {"terms": "study"},
        "ties": {"tie_break": "engine"},
    }

    def __init__(self, *, terms: str = "agentmem", tie_break: str = "newest") -> None:
        super().__init__()
        self.terms = check_choice("terms", terms, TERM_EXTRACTIONS)
        self.tie_break = check_choice("tie_break", tie_break, tuple(TIE_ORDERS))
        self._sql: dict[str, str] = {}

    def _ranking(self, q: base.Query, k: int) -> tuple[str, dict[str, Any]] | None:
        match = fts5_match(q.text, self.terms)
        if match is None:
            return None
        cond, params = predicate_sql(q.filters)
        sql = self._sql.get(cond)
        if sql is None:  # composed once per condition
            sql = self._sql[cond] = (
                "SELECT m.memory_id FROM memories_fts JOIN memories AS m "
                "ON m.id = memories_fts.rowid "
                f"WHERE memories_fts MATCH :match AND {cond} "
                f"ORDER BY bm25(memories_fts){TIE_ORDERS[self.tie_break]} LIMIT :k"
            )
        params["match"] = match
        params["k"] = int(k)
        return sql, params
