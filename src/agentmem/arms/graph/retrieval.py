"""Retrieval of the sqlite-graph arm: the one ranking statement, counts, plans and ``fetch``.

The ranking (FTS5 and vector branches, one-hop graph expansion, RRF, superseded nodes
replaced by their successors) is described in ``docs/arms/sqlite-graph.md``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw
import polars as pl

from agentmem.arms import base
from agentmem.arms.graph.connections import GraphStore
from agentmem.arms.graph.schema import MEMORY_COLUMNS
from agentmem.arms.rows import memory_frame, memory_rows_frame
from agentmem.arms.statements import StatementQueries
from agentmem.sql.sqlite.statements import explain_statement, predicate_sql
from agentmem.text import fts5_match, is_utf8

#: How a query treats superseded nodes (``hide_superseded``).
HIDE_MODES: tuple[str, ...] = ("visible", "always")


class RetrievalMixin(StatementQueries, GraphStore):
    """Reads of :class:`~agentmem.arms.graph.SqliteGraphArm`: query, bench hooks, explain, fetch.

    Subclasses :class:`~agentmem.arms.graph.connections.GraphStore`, whose state it uses.
    """

    def _query_vector(self, q: base.Query) -> bytes:
        """Return the query embedding as float32 bytes.

        Raises:
            ArmError: when the embedding is missing or not of size 384.
        """
        v = base.checked_vector(q.embedding, self.name, f"query {q.query_id!r}", base.VECTOR_DIM)
        return v.tobytes()

    def _ranking(self, q: base.Query, k: int) -> tuple[str, dict[str, Any]]:
        """Return the one retrieval statement for ``q`` and its bindings.

        The statement is described in ``docs/arms/sqlite-graph.md`` (Retrieval).
        """
        cond, params = predicate_sql(q.filters)
        live = f"m.pruned_day IS NULL AND {cond}"
        if q.scope is None:
            degree = "SELECT count(*) FROM edges AS e WHERE e.dst = x.ent AND e.type = 'entity'"
        else:  # the scope's subgraph: an entity's degree counts the scope's nodes only
            degree = (
                "SELECT count(*) FROM edges AS e JOIN nodes AS d ON d.id = e.src "
                "WHERE e.dst = x.ent AND e.type = 'entity' AND d.scope_id = :scope"
            )
            # a scope that is not UTF-8 matches no node (the filters bind it as NULL too)
            params = {**params, "scope": q.scope if is_utf8(q.scope) else None}
        match = fts5_match(q.text)
        ctes = []
        union = "SELECT id, rnk FROM vec"
        if match is not None:
            ctes.append(
                "fts AS MATERIALIZED (SELECT id, row_number() OVER "
                "(ORDER BY s, created_day DESC, seq DESC) AS rnk FROM ("
                "SELECT m.id, m.created_day, m.seq, bm25(nodes_fts) AS s "
                "FROM nodes_fts JOIN nodes AS m ON m.id = nodes_fts.rowid "
                f"WHERE nodes_fts MATCH :match AND {live} "
                "ORDER BY s, m.created_day DESC, m.seq DESC LIMIT :bk))"
            )
            union = "SELECT id, rnk FROM fts UNION ALL " + union
        if self.hide_superseded == "visible":
            last_only = ""
            target = "coalesce(s.tid, f.id)"
        else:
            last_only = (
                " AND NOT EXISTS (SELECT 1 FROM edges AS e2 "
                "WHERE e2.dst = m.id AND e2.type = 'supersedes')"
            )
            target = (
                "CASE WHEN s.tid IS NOT NULL THEN s.tid WHEN EXISTS (SELECT 1 FROM edges AS e "
                "WHERE e.dst = f.id AND e.type = 'supersedes') THEN NULL ELSE f.id END"
            )
        ctes += [
            "vec AS MATERIALIZED (SELECT id, row_number() OVER "
            "(ORDER BY dist, created_day DESC, seq DESC) AS rnk FROM ("
            "SELECT m.id, m.created_day, m.seq, vec_distance_cosine(v.embedding, :qvec) AS dist "
            f"FROM node_vectors AS v JOIN nodes AS m ON m.id = v.id WHERE {live} "
            "ORDER BY dist, m.created_day DESC, m.seq DESC LIMIT :bk))",
            f"seed_score AS (SELECT id, sum(1.0 / (:rrfk + rnk)) AS score FROM ({union}) "
            "GROUP BY id)",
            "seeds AS MATERIALIZED (SELECT id, rnk FROM (SELECT s.id, row_number() OVER "
            "(ORDER BY s.score DESC, m.created_day DESC, m.seq DESC) AS rnk "
            "FROM seed_score AS s JOIN nodes AS m ON m.id = s.id) WHERE rnk <= :ns)",
            "seed_ent AS MATERIALIZED (SELECT s.id AS sid, s.rnk, e.dst AS ent FROM seeds AS s "
            "CROSS JOIN edges AS e ON e.src = s.id AND e.type = 'entity')",
            f"ent_deg AS MATERIALIZED (SELECT x.ent, ({degree}) AS deg "
            "FROM (SELECT DISTINCT ent FROM seed_ent) AS x)",
            # CROSS JOIN keeps the few seeds as the outer loop (edges searched by index)
            "hop AS (SELECT e.src AS nid, 1.0 / ((:rrfk + se.rnk) * d.deg) AS w "
            "FROM seed_ent AS se JOIN ent_deg AS d ON d.ent = se.ent "
            "CROSS JOIN edges AS e ON e.dst = se.ent AND e.type = 'entity' AND e.src <> se.sid "
            "UNION ALL SELECT e.src, 1.0 / (:rrfk + s.rnk) FROM seeds AS s "
            "CROSS JOIN edges AS e ON e.dst = s.id AND e.type = 'supersedes')",
            "graph AS (SELECT id, row_number() OVER (ORDER BY g DESC, created_day DESC, seq DESC) "
            "AS rnk FROM (SELECT m.id, m.created_day, m.seq, sum(h.w) AS g FROM hop AS h "
            f"JOIN nodes AS m ON m.id = h.nid WHERE {live} GROUP BY m.id "
            "ORDER BY g DESC, m.created_day DESC, m.seq DESC LIMIT :gk))",
            "fused AS (SELECT id, sum(1.0 / (:rrfk + rnk)) AS score FROM "
            f"({union} UNION ALL SELECT id, rnk FROM graph) GROUP BY id)",
            "chain(orig, cur) AS (SELECT id, id FROM fused UNION SELECT c.orig, e.src "
            "FROM chain AS c CROSS JOIN edges AS e ON e.dst = c.cur AND e.type = 'supersedes')",
            "succ AS (SELECT orig, tid FROM (SELECT c.orig, m.id AS tid, row_number() OVER "
            "(PARTITION BY c.orig ORDER BY m.created_day DESC, m.seq DESC) AS r "
            f"FROM chain AS c JOIN nodes AS m ON m.id = c.cur WHERE c.cur <> c.orig AND {live}"
            f"{last_only}) WHERE r = 1)",
            f"placed AS (SELECT {target} AS tid, f.score FROM fused AS f "
            "LEFT JOIN succ AS s ON s.orig = f.id)",
            "final AS (SELECT tid, max(score) AS score FROM placed WHERE tid IS NOT NULL "
            "GROUP BY tid)",
        ]
        sql = (
            f"WITH RECURSIVE {', '.join(ctes)} "
            "SELECT m.memory_id FROM final JOIN nodes AS m ON m.id = final.tid "
            "ORDER BY final.score DESC, m.created_day DESC, m.seq DESC LIMIT :k"
        )
        binds: dict[str, Any] = {
            **params,
            "qvec": self._query_vector(q),
            "bk": self.branch_k,
            "rrfk": self.rrf_k,
            "ns": self.expand_seeds,
            "gk": self.graph_k,
            "k": int(k),
        }
        if match is not None:
            binds["match"] = match
        return sql, binds

    def _count_sql(self, q: base.Query) -> tuple[str, dict[str, Any]]:
        """Return the exact-count statement: live nodes in the scope matching the predicate."""
        cond, params = predicate_sql(q.filters)
        return f"SELECT count(*) FROM nodes AS m WHERE m.pruned_day IS NULL AND {cond}", params

    driver_errors = apsw.Error
    ranking_label = "retrieval"

    def _query_connection(self) -> apsw.Connection:
        """The read-only connection: a query never waits for the writer.

        Text with no search terms drops the FTS branch (vector + graph remain); building
        the ranking raises :class:`ArmError` when the embedding is missing or malformed.
        """
        return self._r()

    def _store_location(self) -> str:
        return str(self._path)

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Return EXPLAIN QUERY PLAN of the exact statements :meth:`query` runs for ``q``.

        Args:
            q: the query.
            k: the result size bound into ``LIMIT`` (does not change the plan shape).

        Returns:
            One block per statement (retrieval, then count when ``q.wants_count``): the
            statement text and its indented plan tree.

        Raises:
            ArmError: when the store is not open or SQLite fails.
        """
        conn = self._r()
        with self._driver_failure("explain on"):
            return "\n".join(
                explain_statement(conn, label, *stmt)
                for label, stmt in self._query_statements(q, max(k, 1))
            )

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the stored nodes of ``memory_ids`` (pruned ones included), read-only.

        ``confidence`` is the node's current (decayed, corrected) confidence; ``entity_ids``
        lists the node's entity edges in the order the store first saw each entity;
        ``form`` is null (the graph does not keep it).

        Returns:
            The :data:`~agentmem.arms.base.MEMORY_SCHEMA` columns, one row per stored id
            asked, in the order asked.

        Raises:
            ArmError: when the store is not open or SQLite fails.
        """
        conn = self._r()
        asked = json.dumps([str(m) for m in memory_ids])
        cols = [c for c in MEMORY_COLUMNS if c != "entity_ids"]
        with self._driver_failure("fetch on"):
            found = conn.execute(
                f"SELECT id, {', '.join(cols)} FROM nodes "
                "WHERE memory_id IN (SELECT value FROM json_each(?))",
                (asked,),
            ).fetchall()
            ents: dict[int, list[str]] = {}
            for src, ent in conn.execute(
                "SELECT e.src, x.entity_id FROM edges AS e JOIN entity_nodes AS x ON x.id = e.dst "
                "WHERE e.type = 'entity' AND e.src IN (SELECT n.id FROM nodes AS n "
                "WHERE n.memory_id IN (SELECT value FROM json_each(?))) ORDER BY e.src, e.dst DESC",
                (asked,),
            ):
                ents.setdefault(int(src), []).append(str(ent))
        frame = memory_rows_frame(
            [(*r[1:], ents.get(int(r[0]), [])) for r in found], [*cols, "entity_ids"]
        )
        return memory_frame(frame, memory_ids)
