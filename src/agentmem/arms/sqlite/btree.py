"""``sqlite-btree``: B-tree indexes for predicates, LIKE-term scoring for text."""

from __future__ import annotations

from typing import Any, ClassVar

from agentmem.arms import base
from agentmem.arms.sqlite.store import SqliteArm
from agentmem.sql.sqlite.statements import predicate_sql
from agentmem.text import TERM_EXTRACTIONS, check_choice, like_pattern, query_terms

#: The orders between memories of equal score (the ``tie_break`` parameter):
#: newest first, or ``seq`` descending alone (the study's)
TIE_ORDERS = {"newest": "created_day DESC, seq DESC", "seq": "seq DESC"}


class SqliteBtreeArm(SqliteArm):
    r"""``sqlite-btree``: B-tree indexes for predicates, LIKE-term scoring for text.

    score = number of query terms (:func:`agentmem.text.query_terms`) contained in
    the body, each tested with ``body LIKE ? ESCAPE '\'`` (ASCII case-insensitive,
    :func:`agentmem.text.like_pattern`), summed in one statement;
    ``WHERE score > 0 AND predicate ORDER BY score DESC, created_day DESC, seq DESC``.

    Scope: in the search (``m.scope_id = ?`` AND-ed with the predicate in the ``WHERE``).

    Args:
        terms: the term extraction, ``"agentmem"`` or ``"study"``
            (:data:`agentmem.text.TERM_EXTRACTIONS`; a repeated study term counts twice).
        tie_break: a key of :data:`TIE_ORDERS` (``"seq"``: the study's ``seq DESC``).
    """

    name: ClassVar[str] = "sqlite-btree"
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
        self.tie_break = check_choice("tie_break", tie_break, tuple(TIE_ORDERS))

    def _ranking(self, q: base.Query, k: int) -> tuple[str, dict[str, Any]] | None:
        terms = query_terms(q.text, extraction=self.terms)
        if not terms:
            return None
        cond, params = predicate_sql(q.filters)
        score = " + ".join(
            f"(CASE WHEN m.body LIKE :t{i} ESCAPE '\\' THEN 1 ELSE 0 END)"
            for i in range(len(terms))
        )
        sql = (
            "SELECT memory_id FROM ("
            f"SELECT m.memory_id, m.created_day, m.seq, ({score}) AS score "
            f"FROM memories AS m WHERE {cond}"
            f") WHERE score > 0 ORDER BY score DESC, {TIE_ORDERS[self.tie_break]} LIMIT :k"
        )
        binds = {f"t{i}": like_pattern(t) for i, t in enumerate(terms)}
        return sql, {**params, **binds, "k": int(k)}
