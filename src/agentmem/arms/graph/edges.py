"""Edges the sqlite-graph arm adds for a new memory node, one statement group each.

Each function runs inside the writer's transaction (``conn`` is the writer's connection);
the rules they follow are in ``docs/arms/sqlite-graph.md``.
"""

from __future__ import annotations

import apsw

from agentmem.arms.graph.confidence import CORRECTED_CONFIDENCE, CORRECTED_DECAY_RATE


def place_in_session(conn: apsw.Connection, nid: int, session_id: str, seq: int) -> None:
    """Link node ``nid`` into its session's ``temporal`` chain at position ``seq``.

    The chain runs by ``seq``: the node goes between the session's last node before it
    and its first node after it (the edge between those two is replaced).
    """
    prev = conn.execute(
        "SELECT id FROM nodes WHERE session_id = ? AND id <> ? AND seq <= ? "
        "ORDER BY seq DESC, id DESC LIMIT 1",
        (session_id, nid, seq),
    ).fetchall()
    nxt = conn.execute(
        "SELECT id FROM nodes WHERE session_id = ? AND id <> ? AND seq > ? "
        "ORDER BY seq, id LIMIT 1",
        (session_id, nid, seq),
    ).fetchall()
    if prev and nxt:
        conn.execute(
            "DELETE FROM edges WHERE src = ? AND dst = ? AND type = 'temporal'",
            (prev[0][0], nxt[0][0]),
        )
    if prev:
        conn.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'temporal')",
            (prev[0][0], nid),
        )
    if nxt:
        conn.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'temporal')",
            (nid, nxt[0][0]),
        )


def add_entity_edge(conn: apsw.Connection, nid: int, entity_id: str) -> None:
    """Add the ``entity`` edge from node ``nid`` to ``entity_id`` (created when new)."""
    conn.execute(
        "INSERT OR IGNORE INTO entity_nodes(id, entity_id) "
        "SELECT coalesce(min(id), 0) - 1, ? FROM entity_nodes "
        "WHERE NOT EXISTS (SELECT 1 FROM entity_nodes WHERE entity_id = ?)",
        (entity_id, entity_id),
    )
    conn.execute(
        "INSERT OR IGNORE INTO edges(src, dst, type) "
        "SELECT ?, id, 'entity' FROM entity_nodes WHERE entity_id = ?",
        (nid, entity_id),
    )


def supersede(conn: apsw.Connection, old: int, new: int, new_mid: str, day: int) -> None:
    """Mark node ``old`` superseded by node ``new`` (memory id ``new_mid``) as of ``day``.

    Adds the ``supersedes`` edge and sets ``superseded_by``, ``valid_until``, the corrected
    confidence and decay rate (re-based on ``day``), as
    :meth:`~agentmem.arms.graph.SqliteGraphArm.correct` does.
    """
    conn.execute(
        "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'supersedes')", (new, old)
    )
    conn.execute(
        "UPDATE nodes SET superseded_by = ?, valid_until = ?, confidence = ?, "
        "base_confidence = ?, decay_rate = ?, last_access_day = ? WHERE id = ?",
        (new_mid, day, CORRECTED_CONFIDENCE, CORRECTED_CONFIDENCE, CORRECTED_DECAY_RATE, day, old),
    )


def link_to_fact(conn: apsw.Connection, nid: int, fact_id: str, correction: bool) -> None:
    """Add the ``causal`` or ``derived_from`` edge between node ``nid`` and its fact's first node.

    The first node of the fact (by ``created_day``, then ``seq``; ``nid`` itself when it
    is the oldest, and then no edge) causes ``nid`` when it is episodic; otherwise ``nid``
    derives from it, unless ``nid`` is a correction (``docs/arms/sqlite-graph.md``).
    """
    first = conn.execute(
        "SELECT id, node_type FROM nodes WHERE fact_id = ? ORDER BY created_day, seq, id LIMIT 1",
        (fact_id,),
    ).fetchall()
    if not first or first[0][0] == nid:
        return
    if first[0][1] == "episodic":
        conn.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'causal')",
            (first[0][0], nid),
        )
    elif not correction:
        conn.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'derived_from')",
            (nid, first[0][0]),
        )
