"""Access and decay jobs of the sqlite-graph arm: ``touch`` and ``decay``.

Both run on the writer thread; the formula is
:func:`~agentmem.arms.graph.confidence.decayed_confidence`, registered on the writer's
connection as the SQL function ``agentmem_decay``.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from agentmem.arms.graph.confidence import PRUNE_BELOW
from agentmem.arms.graph.connections import GraphStore


class DecayMixin(GraphStore):
    """``touch`` and ``decay`` of :class:`~agentmem.arms.graph.SqliteGraphArm`.

    Subclasses :class:`~agentmem.arms.graph.connections.GraphStore`, whose state it uses.
    """

    def touch(self, memory_ids: Sequence[str], day: int) -> int:
        """Record an access on ``day``: re-base confidence and restart the decay clock.

        For non-episodic nodes ``base_confidence`` becomes the confidence decayed up to
        ``day``; ``last_access_day`` becomes ``max(last_access_day, day)``. Pruned nodes
        are not revived. Goes through the writer queue.

        Returns:
            The number of nodes touched.

        Raises:
            ArmError: when the store is not open or SQLite fails.
        """
        ids = [str(m) for m in memory_ids]
        # both columns get the value computed from the row before the update
        rebased = (
            "CASE WHEN node_type = 'episodic' THEN base_confidence ELSE "
            "agentmem_decay(base_confidence, decay_rate, :day - last_access_day) END"
        )

        def job(conn: apsw.Connection) -> int:
            n = 0
            for mid in ids:
                conn.execute(
                    f"UPDATE nodes SET base_confidence = {rebased}, confidence = {rebased}, "
                    "last_access_day = max(last_access_day, :day) "
                    "WHERE memory_id = :mid AND pruned_day IS NULL",
                    {"day": int(day), "mid": mid},
                )
                n += conn.changes()
            return n

        return self._w().call(job)

    def decay(self, day: int) -> dict[str, int]:
        """Run the decay job as of ``day`` through the writer queue.

        Every live non-episodic node gets ``confidence = decayed_confidence(
        base_confidence, decay_rate, day - last_access_day)`` (idempotent for a given
        day: computed from the base, not compounded); nodes that fall below
        :data:`PRUNE_BELOW` are pruned: ``pruned_day = day``, their FTS and vector rows
        deleted (the node row and its edges stay for audit; queries and counts skip them).
        Episodic nodes are never touched.

        Args:
            day: the current day.

        Returns:
            ``{"day", "decayed", "pruned", "episodic_kept", "live"}``: nodes whose
            confidence was recomputed, nodes pruned now, live episodic nodes (not
            decayed), and live nodes after the job.

        Raises:
            ArmError: when the store is not open or SQLite fails.
        """
        day = int(day)

        def job(conn: apsw.Connection) -> dict[str, int]:
            conn.execute(
                "UPDATE nodes SET confidence = agentmem_decay(base_confidence, decay_rate, "
                ":day - last_access_day) WHERE pruned_day IS NULL AND node_type <> 'episodic'",
                {"day": day},
            )
            decayed = conn.changes()
            victims = conn.execute(
                "SELECT id, body FROM nodes WHERE pruned_day IS NULL "
                "AND node_type <> 'episodic' AND confidence < :th",
                {"th": PRUNE_BELOW},
            ).fetchall()
            conn.executemany(
                "INSERT INTO nodes_fts(nodes_fts, rowid, body) VALUES ('delete', ?, ?)", victims
            )
            conn.executemany("DELETE FROM node_vectors WHERE id = ?", [(v[0],) for v in victims])
            conn.executemany(
                "UPDATE nodes SET pruned_day = ? WHERE id = ?", [(day, v[0]) for v in victims]
            )
            episodic, live = conn.execute(
                "SELECT count(*) FILTER (WHERE node_type = 'episodic'), count(*) FROM nodes "
                "WHERE pruned_day IS NULL"
            ).fetchall()[0]
            return {
                "day": day,
                "decayed": int(decayed),
                "pruned": len(victims),
                "episodic_kept": int(episodic),
                "live": int(live),
            }

        return self._w().call(job)
