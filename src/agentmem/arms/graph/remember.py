"""Writes of the sqlite-graph arm: ``add_node``, ``remember`` and ``correct``.

Each builds one writer job (one transaction) that inserts the node, its FTS and vector
rows and its edges (:mod:`agentmem.arms.graph.edges`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import apsw
import numpy as np
import polars as pl

from agentmem.arms import base
from agentmem.arms.graph.confidence import DECAY_RATES, DEFAULT_CONFIDENCE
from agentmem.arms.graph.connections import GraphStore
from agentmem.arms.graph.edges import add_entity_edge, link_to_fact, place_in_session, supersede
from agentmem.arms.graph.schema import node_type_of
from agentmem.tokens import count_tokens


class RememberMixin(GraphStore):
    """Memory writes of :class:`~agentmem.arms.graph.SqliteGraphArm`, through the writer.

    Subclasses :class:`~agentmem.arms.graph.connections.GraphStore`, whose state it uses.
    """

    def add_node(
        self,
        body: str,
        kind: str = "semantic",
        *,
        day: int,
        session_id: str | None = None,
        fact_id: str | None = None,
        entity_ids: Sequence[str] = (),
        embedding: np.ndarray | None = None,
        confidence: float = DEFAULT_CONFIDENCE,
        source: str = "agent",
        memory_id: str | None = None,
        scope_id: str | None = None,
    ) -> str:
        """Write one memory node through the writer queue (the hot path: no LLM, one txn).

        Adds the node, its FTS row, its vector (when ``embedding`` is given; without one
        the node is reachable by text and graph only), its entity edges (creating entity
        nodes as needed), a ``temporal`` edge from the previous node of ``session_id`` and
        the ``causal`` / ``derived_from`` edge to the first node of ``fact_id`` (rules in
        ``docs/arms/sqlite-graph.md``).

        Args:
            body: the memory text (non-empty; stored as a bound value, never spliced).
            kind: memory kind; node type per :func:`node_type_of`.
            day: the day it is written (``created_day``, ``valid_from``, last access).
            session_id: session it belongs to; ``turn_no`` continues that session.
            fact_id: fact it renders, if any.
            entity_ids: entity ids it mentions.
            embedding: float32 ``(384,)`` vector of ``body``.
            confidence: initial confidence in ``[0, 1]``.
            source: provenance label.
            memory_id: its id; ``N<node id>`` when omitted.
            scope_id: whose memory it is (a query's scope); ``None``: outside every scope.

        Returns:
            The new node's ``memory_id``.

        Raises:
            ValueError: on an empty body, bad confidence, embedding shape or an empty scope_id.
            ArmError: when the store is not open, the id exists, the embedding is not
                numeric, or SQLite fails.
        """
        job = self._node_job(
            body, kind, day=day, session_id=session_id, fact_id=fact_id,
            entity_ids=entity_ids, embedding=embedding, confidence=confidence, source=source,
            memory_id=memory_id, supersedes=None, scope_id=scope_id,
        )  # fmt: skip
        return self._w().call(job)

    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Write a batch of memories through the writer queue, in one transaction.

        The batch is validated by :func:`~agentmem.arms.base.prepare_memories`. Each row
        becomes a memory node with the row's own values (node type from its ``kind``),
        its FTS row, its vector and its edges, as :meth:`add_node` makes them: ``entity``
        edges (entity nodes created as needed), ``temporal`` edges placing it in its
        session by ``seq`` (between the neighbours it falls between), and the ``causal``
        / ``derived_from`` edge to the first node of its ``fact_id``. A row's
        ``supersedes`` list has the effects of :meth:`correct`: a ``supersedes`` edge to
        each named node, whose ``superseded_by`` becomes the row's id, ``valid_until`` the
        row's ``created_day``, confidence :data:`CORRECTED_CONFIDENCE` and decay rate
        :data:`CORRECTED_DECAY_RATE`; a current-only query no longer returns it. A row
        that arrives with ``superseded_by`` naming a stored node (or one of the batch)
        gets the same treatment from that node. Committed when the call returns.

        Args:
            memories: the rows (:func:`~agentmem.arms.base.prepare_memories`).
            vectors: their embeddings (``(n, 384)``).

        Raises:
            ArmError: when the store is not open, the batch is invalid, a confidence is
                outside ``[0, 1]``, an id is already stored, a superseded id is neither
                stored nor in the batch, or SQLite fails; nothing is written then.
        """
        writer = self._w()
        batch = base.prepare_memories(memories, vectors, self.name)
        if not batch.ids:
            return
        rows = batch.memories.rows(named=True)
        for r in rows:
            if not 0.0 <= float(r["confidence"]) <= 1.0:
                raise base.ArmError(
                    f"{self.name}: memory {r['memory_id']!r} has confidence {r['confidence']}, "
                    "need a value in [0, 1]"
                )
        vecs = [batch.vectors[i].tobytes() for i in range(len(rows))]
        pairs = list(batch.supersessions)
        batch_ids = set(batch.ids)
        pairs += [
            (r["memory_id"], r["superseded_by"])
            for r in rows
            if r["superseded_by"] is not None and r["superseded_by"] in batch_ids
        ]
        given = [
            (r["memory_id"], r["superseded_by"])
            for r in rows
            if r["superseded_by"] is not None and r["superseded_by"] not in batch_ids
        ]
        correcting = {new for _, new in pairs}
        label, path = self.name, self._path

        def job(conn: apsw.Connection) -> None:
            (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM nodes").fetchall()[0]
            nids: dict[str, int] = {}
            for i, r in enumerate(rows):
                nid = int(top) + 1 + i
                mid = r["memory_id"]
                nids[mid] = nid
                ntype = node_type_of(r["kind"])
                conf = float(r["confidence"])
                try:
                    conn.execute(
                        "INSERT INTO nodes(id, memory_id, node_type, kind, body, session_id, "
                        "turn_no, seq, created_day, fact_id, source, superseded_by, tokens, "
                        "scope_id, valid_from, confidence, base_confidence, decay_rate, "
                        "last_access_day) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (nid, mid, ntype, r["kind"], r["body"], r["session_id"], r["turn_no"],
                         r["seq"], r["created_day"], r["fact_id"], r["source"], None,
                         r["tokens"], r["scope_id"], r["created_day"], conf, conf,
                         DECAY_RATES[ntype], r["created_day"]),
                    )  # fmt: skip
                except apsw.ConstraintError:
                    raise base.ArmError(
                        f"{label}: memory {mid!r} is already stored in {path}"
                    ) from None
                conn.execute("INSERT INTO nodes_fts(rowid, body) VALUES (?, ?)", (nid, r["body"]))
                conn.execute(
                    "INSERT INTO node_vectors(id, embedding) VALUES (?, ?)", (nid, vecs[i])
                )
                if r["session_id"] is not None:
                    place_in_session(conn, nid, r["session_id"], int(r["seq"]))
                for e in r["entity_ids"]:
                    add_entity_edge(conn, nid, str(e))
            for old, new in [*pairs, *given]:
                found = conn.execute(
                    "SELECT id, created_day FROM nodes WHERE memory_id = ?", (new,)
                ).fetchall()
                if not found:  # a superseded_by value naming no node: kept as given
                    conn.execute(
                        "UPDATE nodes SET superseded_by = ? WHERE id = ?", (new, nids[old])
                    )
                    continue
                new_id, day = found[0]
                old_row = conn.execute(
                    "SELECT id FROM nodes WHERE memory_id = ?", (old,)
                ).fetchall()
                if not old_row:
                    raise base.ArmError(
                        f"{label}: memory {new!r} supersedes {old!r}, which is not stored in {path}"
                    )
                supersede(conn, old_row[0][0], new_id, new, day)
            for r in rows:
                if r["fact_id"] is not None:
                    link_to_fact(
                        conn, nids[r["memory_id"]], r["fact_id"], r["memory_id"] in correcting
                    )

        writer.call(job)

    def correct(
        self,
        old_id: str,
        new_body: str,
        day: int,
        *,
        embedding: np.ndarray | None = None,
        session_id: str | None = None,
        entity_ids: Sequence[str] | None = None,
        confidence: float = DEFAULT_CONFIDENCE,
        source: str = "agent_summary",
        memory_id: str | None = None,
    ) -> str:
        """Write a correction of ``old_id`` through the writer queue, in one transaction.

        The new node takes the old node's kind, ``fact_id`` and ``scope_id`` (and its entity
        ids unless ``entity_ids`` is given) and gets a ``supersedes`` edge to the old node; the old
        node gets ``superseded_by`` = the new id, ``valid_until`` = ``day``, confidence
        :data:`CORRECTED_CONFIDENCE` and decay rate :data:`CORRECTED_DECAY_RATE`
        (re-based: ``last_access_day`` = ``day``), and is hidden from queries.

        Args:
            old_id: ``memory_id`` of the node being corrected.
            new_body: the corrected statement.
            day: day of the correction.
            embedding: float32 ``(384,)`` vector of ``new_body``.
            session_id: session of the correction, if any.
            entity_ids: entity ids of the correction (default: the old node's).
            confidence: confidence of the correction.
            source: provenance label.
            memory_id: id of the correction; ``N<node id>`` when omitted.

        Returns:
            The correction's ``memory_id``.

        Raises:
            ValueError: as :meth:`add_node`.
            ArmError: when ``old_id`` does not exist, or as :meth:`add_node`.
        """
        job = self._node_job(
            new_body, None, day=day, session_id=session_id, fact_id=None,
            entity_ids=entity_ids, embedding=embedding, confidence=confidence, source=source,
            memory_id=memory_id, supersedes=old_id, scope_id=None,
        )  # fmt: skip
        return self._w().call(job)

    def _node_job(
        self,
        body: str,
        kind: str | None,
        *,
        day: int,
        session_id: str | None,
        fact_id: str | None,
        entity_ids: Sequence[str] | None,
        embedding: np.ndarray | None,
        confidence: float,
        source: str,
        memory_id: str | None,
        supersedes: str | None,
        scope_id: str | None,
    ) -> Callable[[apsw.Connection], str]:
        """Validate a node write and return the writer job that performs it."""
        if not isinstance(body, str) or not body.strip():
            raise ValueError("a memory body must be a non-empty string")
        if not 0.0 <= float(confidence) <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {confidence}")
        if scope_id is not None and (not isinstance(scope_id, str) or not scope_id):
            raise ValueError(f"scope_id must be a non-empty string or None, got {scope_id!r}")
        day = int(day)
        vec: bytes | None = None
        if embedding is not None:
            v = base.float32_array(embedding, self.name, "embedding").reshape(-1)
            if v.shape[0] != base.VECTOR_DIM:
                raise ValueError(f"embedding has {v.shape[0]} values, need {base.VECTOR_DIM}")
            vec = v.tobytes()
        ents = None if entity_ids is None else [str(e) for e in entity_ids]
        tokens = count_tokens([body])[0]  # o200k, as the corpus counts (outside the txn)
        label = self.name

        def job(conn: apsw.Connection) -> str:
            old: tuple[Any, ...] | None = None
            node_kind, node_fact, node_scope = kind, fact_id, scope_id
            if supersedes is not None:
                rows = conn.execute(
                    "SELECT id, kind, fact_id, scope_id FROM nodes WHERE memory_id = ?",
                    (supersedes,),
                ).fetchall()
                if not rows:
                    raise base.ArmError(f"{label}: no node {supersedes!r} to correct")
                old = rows[0]
                node_kind, node_fact, node_scope = old[1], old[2], old[3]
            ntype = node_type_of(node_kind)
            nid, seq = conn.execute(
                "SELECT coalesce(max(id), 0) + 1, coalesce(max(seq), -1) + 1 FROM nodes"
            ).fetchall()[0]
            mid = memory_id if memory_id is not None else f"N{nid:06d}"
            prev = None
            turn = None
            if session_id is not None:
                row = conn.execute(
                    "SELECT id, turn_no FROM nodes WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
                    (session_id,),
                ).fetchall()
                if row:
                    prev = row[0][0]
                    turn = (row[0][1] if row[0][1] is not None else -1) + 1
                else:
                    turn = 0
            try:
                conn.execute(
                    "INSERT INTO nodes(id, memory_id, node_type, kind, body, session_id, "
                    "turn_no, seq, created_day, fact_id, source, tokens, scope_id, valid_from, "
                    "confidence, base_confidence, decay_rate, last_access_day) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (nid, mid, ntype, node_kind or ntype, body, session_id, turn, seq, day,
                     node_fact, source, tokens, node_scope, day, float(confidence),
                     float(confidence), DECAY_RATES[ntype], day),
                )  # fmt: skip
            except apsw.ConstraintError as exc:
                raise base.ArmError(f"{label}: cannot add node {mid!r}: {exc}") from exc
            conn.execute("INSERT INTO nodes_fts(rowid, body) VALUES (?, ?)", (nid, body))
            if vec is not None:
                conn.execute("INSERT INTO node_vectors(id, embedding) VALUES (?, ?)", (nid, vec))
            if prev is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'temporal')",
                    (prev, nid),
                )
            if ents is None and old is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO edges(src, dst, type) SELECT ?, dst, 'entity' "
                    "FROM edges WHERE src = ? AND type = 'entity'",
                    (nid, old[0]),
                )
            for e in ents or []:
                add_entity_edge(conn, nid, e)
            if old is not None:
                supersede(conn, old[0], nid, mid, day)
            if node_fact is not None:
                link_to_fact(conn, nid, node_fact, old is not None)
            return str(mid)

        return job
