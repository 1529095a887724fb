"""The statements ``sqlite-gated`` runs (:class:`~agentmem.arms.sqlite.gated.SqliteGatedArm`).

Its table of entity names, its four branches (keys, text, dense scan, session neighbours)
under a filter condition, and the candidates' rows with their dense and correction terms;
what each computes is in the arm's docstring and docs/arms/sqlite-gated.md.
"""

from __future__ import annotations

__all__ = [
    "CANDIDATES_SQL",
    "CANDIDATE_COLUMNS",
    "ENTITY_NAMES_SQL",
    "branch_statements",
    "json_words",
]

#: The name -> entity table the keys branch looks a named entity up in
ENTITY_NAMES_SQL = """
CREATE TABLE entity_names(
    name TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (name, entity_id)
) WITHOUT ROWID;
"""


#: A candidate's row: ``(id, memory_id, -created_day, -seq, dense term, correction term)``,
#: the dense term ``dense_weight * v`` (``v`` its int8 cosine to the query, 0 when negative
#: or for a zero vector), the correction term ``correction_weight * c``; the negated day and
#: seq (0 when null) are the ranking's tie-breaks as they stand
CANDIDATE_COLUMNS = (
    "m.id, m.memory_id, -coalesce(m.created_day, 0), -coalesce(m.seq, 0), "
    ":dw * max(coalesce(1 - vec_distance_cosine(vec_int8(v.embedding), vec_int8(:q8)), 0), 0.0), "
    ":cw * EXISTS (SELECT 1 FROM memories AS o WHERE o.superseded_by = m.memory_id)"
)

#: The candidates' statement: their rows by id (``:ids``, a JSON array)
CANDIDATES_SQL = (
    f"SELECT {CANDIDATE_COLUMNS} FROM memories AS m JOIN memory_vectors AS v ON v.id = m.id "
    "WHERE m.id IN (SELECT value FROM json_each(:ids))"
)


def json_words(words: list[str]) -> str:
    """A JSON array of the words of :func:`text_keys`, as ``json.dumps`` would mean it.

    No such word holds a character JSON escapes (they are letters, digits, hyphens and
    spaces, all UTF-8), so the words are joined as they are.
    """
    return '["' + '","'.join(words) + '"]' if words else "[]"


def branch_statements(cond: str) -> tuple[str, str, str, str]:
    """The keys, text, dense-scan and neighbour statements under the filter SQL ``cond``.

    ``cond`` is :func:`agentmem.sql.sqlite.statements.predicate_sql`'s condition on ``m``
    (scope and predicate). Parameters: keys ``:names``, ``:ids`` (JSON arrays, see
    :func:`json_words`), ``:kk``; text ``:match``, ``:tk``; dense ``:q8`` (int8 codes),
    ``:dk``; neighbours ``:src`` (JSON array of source ids), ``:q8``, ``:mc``, ``:dw``,
    ``:cw``; each also the condition's own.
    """
    return (
        "WITH RECURSIVE ents AS (SELECT entity_id FROM entity_names "
        "WHERE name IN (SELECT value FROM json_each(:names)) UNION "
        "SELECT entity_id FROM memory_entities "
        "WHERE entity_id IN (SELECT value FROM json_each(:ids))), "
        "linked AS (SELECT me.memory_id, count(*) AS hits FROM memory_entities AS me "
        "WHERE me.entity_id IN (SELECT entity_id FROM ents) GROUP BY me.memory_id), "
        # a correction is about what it corrects: it inherits the links, down the chain
        "chain(memory_id, hits) AS (SELECT memory_id, hits FROM linked UNION "
        "SELECT o.superseded_by, c.hits FROM chain AS c "
        "JOIN memories AS o ON o.memory_id = c.memory_id "
        "WHERE o.superseded_by IS NOT NULL) "
        # e: the share of the named entities the memory links to
        "SELECT m.id, CAST(max(c.hits) AS REAL) / max((SELECT count(*) FROM ents), 1) "
        "AS e FROM chain AS c JOIN memories AS m ON m.memory_id = c.memory_id "
        f"WHERE {cond} "
        "GROUP BY m.id ORDER BY e DESC, m.created_day DESC, m.seq DESC LIMIT :kk",
        "SELECT m.id, -bm25(memories_fts) AS s FROM memories_fts "
        "JOIN memories AS m ON m.id = memories_fts.rowid "
        f"WHERE memories_fts MATCH :match AND {cond} "
        "ORDER BY s DESC, m.created_day DESC, m.seq DESC LIMIT :tk",
        "SELECT m.id FROM memory_vectors AS v JOIN memories AS m ON m.id = v.id "
        f"WHERE {cond} ORDER BY coalesce(vec_distance_cosine(vec_int8(v.embedding), "
        "vec_int8(:q8)), 2), "
        "m.created_day DESC, m.seq DESC LIMIT :dk",
        # the turns next to the sources, under the filters, close enough to them
        f"SELECT {CANDIDATE_COLUMNS}, s.id FROM memories AS s "
        "JOIN memories AS m ON m.session_id = s.session_id "
        "AND m.turn_no IN (s.turn_no - 1, s.turn_no + 1) "
        "JOIN memory_vectors AS v ON v.id = m.id "
        "JOIN memory_vectors AS sv ON sv.id = s.id "
        f"WHERE s.id IN (SELECT value FROM json_each(:src)) AND {cond} "
        "AND coalesce(1 - vec_distance_cosine(vec_int8(v.embedding), "
        "vec_int8(sv.embedding)), -2) >= :mc",
    )
