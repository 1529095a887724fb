"""Context assembly of the three-tier arm: what an agent would see for one turn.

The whole of L1, the best and newest L2 summary nodes, and the nearest L3 memories,
each labelled with its tier and counted in o200k tokens.
"""

from __future__ import annotations

import json
import time
from typing import Any

import apsw
import psycopg
from psycopg import sql

from agentmem.arms import base
from agentmem.arms.context import TIERS, AssembledContext, ContextItem
from agentmem.arms.three_tier.records import elapsed_ms
from agentmem.arms.three_tier.store import TierStore
from agentmem.sql.postgres.queries import predicate_sql as pg_predicate_sql
from agentmem.sql.sqlite.statements import predicate_sql as sqlite_predicate_sql
from agentmem.text import fts5_match


class ContextMixin(TierStore):
    """``assemble_context`` of :class:`~agentmem.arms.three_tier.ThreeTierArm`.

    Subclasses :class:`~agentmem.arms.three_tier.store.TierStore`, whose state it uses.
    """

    def assemble_context(
        self,
        query_text: str,
        query_vec: Any,
        k: int = 5,
        *,
        predicate: base.Predicate | None = None,
        scope: str | None = None,
    ) -> AssembledContext:
        """Assemble the context an agent would see for one turn: L1 + L2 + L3.

        * **L1**: the whole working memory (every L1 turn, chronological — at most
          ``l1_max_tokens`` tokens); FTS5 marks the turns matching ``query_text``
          (``keyword_hit``).
        * **L2**: ``l2_context_nodes`` summary nodes: the best by FTS5 ``bm25`` over the
          summaries (ties newest), then the newest nodes to fill up (the running summary).
        * **L3**: the ``k`` nearest memories by HNSW cosine distance.

        ``predicate`` (optional) restricts L2 (a node qualifies when one of its covered
        memories matches) and L3; working memory is always included whole. ``scope``
        (optional) is a hard filter on every tier: L1 holds the scope's turns only, L2 the
        scope's summary nodes (a node covers one scope's memories), L3 the scope's
        memories.

        Args:
            query_text: the turn's text or probe question (untrusted; may be empty).
            query_vec: its embedding, 384 floats.
            k: memories recalled from L3 (``0`` disables L3).
            predicate: optional structured filter for L2 and L3.
            scope: optional scope (whose memory) for all three tiers.

        Returns:
            :class:`AssembledContext` ``(items, tokens per tier, latency ms per tier)``.

        Raises:
            ArmError: when the store is not open, the vector is bad, or an engine fails.
        """
        db = self._sqlite()
        conn = self._pg()
        qv = self._vector(query_vec, "context query")
        match = fts5_match(query_text or "")
        scoped = () if scope is None else (base.Predicate("scope_id", "=", scope),)
        filters = (*scoped, *(() if predicate is None else (predicate,)))
        cond, params = sqlite_predicate_sql(filters)
        pcond, pparams = pg_predicate_sql(filters)
        l1cond, l1params = sqlite_predicate_sql(scoped)
        items: list[ContextItem] = []
        lat = {t: 0.0 for t in TIERS}
        try:
            t0 = time.perf_counter()
            hits: set[str] = set()
            if match is not None:
                hits = {
                    r[0]
                    for r in db.execute(
                        "SELECT m.memory_id FROM l1_fts JOIN l1_turns AS m "
                        f"ON m.id = l1_fts.rowid WHERE l1_fts MATCH :match AND {l1cond}",
                        {**l1params, "match": match},
                    )
                }
            for i, (mid, body, ntok) in enumerate(
                db.execute(
                    "SELECT m.memory_id, m.body, m.body_tokens FROM l1_turns AS m "
                    f"WHERE {l1cond} ORDER BY m.id",
                    l1params,
                )
            ):
                items.append(ContextItem("L1", mid, body, int(ntok), (mid,), i, mid in hits))
            lat["L1"] = elapsed_ms(t0)

            t0 = time.perf_counter()
            nodes: list[tuple[int, str, int, bool]] = []
            want = int(self.l2_context_nodes)
            exists = f"EXISTS (SELECT 1 FROM l2_covers AS m WHERE m.node_id = n.node_id AND {cond})"
            if want > 0 and match is not None:
                nodes += [
                    (int(r[0]), r[1], int(r[2]), True)
                    for r in db.execute(
                        "SELECT n.node_id, n.summary, n.summary_tokens FROM l2_fts "
                        "JOIN l2_nodes AS n ON n.node_id = l2_fts.rowid "
                        f"WHERE l2_fts MATCH :match AND {exists} "
                        "ORDER BY bm25(l2_fts), n.node_id DESC LIMIT :n",
                        {**params, "match": match, "n": want},
                    )
                ]
            if len(nodes) < want:
                have = [n[0] for n in nodes]
                nodes += [
                    (int(r[0]), r[1], int(r[2]), False)
                    for r in db.execute(
                        "SELECT n.node_id, n.summary, n.summary_tokens FROM l2_nodes AS n "
                        f"WHERE {exists} AND n.node_id NOT IN (SELECT value FROM json_each(:have)) "
                        "ORDER BY n.node_id DESC LIMIT :n",
                        {**params, "have": json.dumps(have), "n": want - len(nodes)},
                    )
                ]
            for i, (node_id, summary, ntok, hit) in enumerate(nodes):
                covered = tuple(
                    r[0]
                    for r in db.execute(
                        "SELECT memory_id FROM l2_covers WHERE node_id = ? ORDER BY ord",
                        (node_id,),
                    )
                )
                items.append(ContextItem("L2", f"L2:{node_id}", summary, ntok, covered, i, hit))
            lat["L2"] = elapsed_ms(t0)

            t0 = time.perf_counter()
            if k > 0:
                rows = conn.execute(
                    sql.SQL(
                        "SELECT memory_id, body, body_tokens FROM l3_memories WHERE {} "
                        "ORDER BY embedding <=> %(qv)s LIMIT %(k)s"
                    ).format(pcond),
                    {**pparams, "qv": qv, "k": int(k)},
                ).fetchall()
                for i, (mid, body, ntok) in enumerate(rows):
                    items.append(ContextItem("L3", mid, body, int(ntok), (mid,), i, False))
            lat["L3"] = elapsed_ms(t0)
        except (apsw.Error, psycopg.Error) as exc:
            raise base.ArmError(
                f"{self.name}: assembling context on {self._where()} failed: {exc}"
            ) from exc
        tokens = {t: sum(it.tokens for it in items if it.tier == t) for t in TIERS}
        return AssembledContext(items=items, tokens=tokens, latency_ms=lat)
