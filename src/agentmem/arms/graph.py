"""The ``sqlite-graph`` arm: the seed "graph cognitive memory" on one SQLite file.

Everything lives in ``graph.db`` (WAL mode) under the store directory, written through
`apsw <https://rogerbinns.github.io/apsw/>`_ with sqlite-vec loaded on the reader.

Schema::

    nodes(id INTEGER PRIMARY KEY (> 0), memory_id TEXT UNIQUE, node_type, kind, body,
          session_id, turn_no, seq, created_day, fact_id, source, superseded_by, tokens,
          valid_from, valid_until, confidence, base_confidence, decay_rate,
          last_access_day, pruned_day)
    entity_nodes(id INTEGER PRIMARY KEY (< 0), entity_id TEXT UNIQUE)
    edges(src, dst, type) WITHOUT ROWID, PRIMARY KEY (src, type, dst);
          index (dst, type, src)
    nodes_fts    FTS5(body) external content over nodes, porter unicode61
    node_vectors(id INTEGER PRIMARY KEY, embedding BLOB)   -- float32[384]
    B-tree indexes on nodes(session_id, seq), created_day, seq,
          (fact_id, created_day, seq), superseded_by

Memory nodes have positive ids, entity nodes negative ids, so ``edges.src``/``dst`` name
one node in one id space. ``node_type`` is the memory ``kind`` when it is one of
``episodic``, ``semantic``, ``procedural``, ``opinion`` and ``episodic`` otherwise (a
record of an event or turn; the original ``kind`` is kept in its own column).
``valid_from`` is the day the memory was written; ``valid_until`` the day a correction
superseded it (``NULL`` while current).

Edges derived from the corpus (and maintained for new memories by
:meth:`SqliteGraphArm.remember`, :meth:`SqliteGraphArm.add_node` and
:meth:`SqliteGraphArm.correct`):

* ``temporal``: each memory -> the next memory of the same session (by ``seq``).
* ``entity``: each memory -> one entity node per entity id it mentions (so the edge count
  is the number of (memory, entity) pairs, never all pairs of memories sharing one).
* ``supersedes``: correction -> every memory whose ``superseded_by`` names it.
* ``causal``: the first memory of a fact, when it is episodic (an incident: the event
  itself) -> every later memory of the same fact (reports caused by the event). No other
  causal relation can be read off the corpus.
* ``derived_from``: every later non-correction memory of a non-episodic fact -> the
  fact's first memory (a restatement derives from the original statement).

Retrieval (one SQL statement, all values bound): an FTS5 bm25 branch (terms from
:func:`agentmem.text.fts5_match`) and a brute-force ``vec_distance_cosine`` branch,
each the top ``branch_k`` live nodes passing the predicate, are fused by Reciprocal Rank
Fusion (Cormack, Clarke & Buettcher 2009: ``score = sum 1 / (rrf_k + rank)``, ranks from
1); the top ``expand_seeds`` fused nodes are the *seeds* of a one-hop graph expansion
along ``entity`` edges (seed -> entity -> neighbour, weight ``1 / ((rrf_k + seed rank) *
entity degree)`` so hub entities count less) and ``supersedes`` edges (seed -> its
successor, weight ``1 / (rrf_k + seed rank)``); neighbours passing the predicate are ranked
by summed weight (top ``graph_k``) and the three rankings are fused by RRF again.
Superseded nodes are then replaced by their successors: each candidate follows
``supersedes`` edges (any depth) to the newest successor that is live and passes the
predicate, which takes the candidate's place with the candidate's score (max over the
nodes it replaces); the superseded node is hidden. With ``hide_superseded="visible"``
(default) a candidate whose successors are all excluded by the predicate stays (a query
restricted to ``created_day <= 160`` sees the world before the day-320 correction, and
``superseded_by = X`` still finds what X superseded); with ``"always"`` a superseded
node is never returned (dropped when its newest successor is filtered out or pruned).
Ties go newest first (larger ``created_day``, then larger ``seq``).

Decay (Ebbinghaus-style, as the seed claims): ``confidence = base_confidence *
exp(-decay_rate * days_since_last_access ** 0.8)`` (:func:`decayed_confidence`); nodes
below :data:`PRUNE_BELOW` are pruned (``pruned_day`` set, removed from the FTS and vector
indexes, never returned or counted); episodic nodes never decay. A correction drops the
old node to confidence :data:`CORRECTED_CONFIDENCE` and decay rate
:data:`CORRECTED_DECAY_RATE` (re-based on the correction day) and hides it.

Concurrency: one writer thread owns the only read-write connection; every write (build,
remember, add_node, correct, touch, decay, checkpoint) is a job on its queue, run in a
``BEGIN IMMEDIATE`` transaction, with a :class:`concurrent.futures.Future` for the result.
Queries and :meth:`SqliteGraphArm.fetch` use a separate read-only connection; WAL lets them
run while the writer writes. A write is committed (WAL, ``synchronous=NORMAL``: it survives
the process being killed; a power loss may lose the last commits) when its call returns.
"""

from __future__ import annotations

import json
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ClassVar

import apsw
import numpy as np
import polars as pl

from agentmem.arms.base import (
    VECTOR_DIM,
    ArmBase,
    ArmError,
    BareCall,
    BuildStats,
    Capabilities,
    Corpus,
    Embeddings,
    Query,
    RawIngest,
    Result,
    StorageStats,
    checked_vector,
    prepare_memories,
)
from agentmem.arms.rows import memory_frame, memory_rows_frame
from agentmem.arms.sqlite import format_plan, predicate_sql
from agentmem.text import fts5_match
from agentmem.tokens import count_tokens

DB_NAME = "graph.db"
#: Node types of the seed; a memory ``kind`` outside this set becomes ``episodic``.
NODE_TYPES: tuple[str, ...] = ("episodic", "semantic", "procedural", "opinion")
#: Edge types of the seed.
EDGE_TYPES: tuple[str, ...] = ("temporal", "causal", "entity", "derived_from", "supersedes")
#: Decay rate per node type (per day**0.8). Episodic nodes never decay (seed claim); the
#: other values are this implementation's choice (opinions fade fastest, procedures
#: slowest): a semantic node at confidence 0.9 keeps 0.33 after 320 days unaccessed and
#: is pruned after about 1,000 days.
DECAY_RATES: dict[str, float] = {
    "episodic": 0.0,
    "semantic": 0.01,
    "procedural": 0.005,
    "opinion": 0.05,
}
#: Exponent on the days since last access (seed claim: ``days ** 0.8``).
DECAY_EXPONENT = 0.8
#: Nodes whose decayed confidence falls below this are pruned (seed claim).
PRUNE_BELOW = 0.05
#: A superseded node's confidence and decay rate after a correction (seed claim).
CORRECTED_CONFIDENCE = 0.3
CORRECTED_DECAY_RATE = 0.5
#: Default confidence of a memory written through :meth:`SqliteGraphArm.add_node`.
DEFAULT_CONFIDENCE = 0.9
HIDE_MODES: tuple[str, ...] = ("visible", "always")
_REQUIRED_TABLES = frozenset({"nodes", "entity_nodes", "edges", "nodes_fts", "node_vectors"})
_MEMORY_COLUMNS = (
    "memory_id",
    "session_id",
    "turn_no",
    "seq",
    "kind",
    "body",
    "fact_id",
    "created_day",
    "source",
    "confidence",
    "superseded_by",
    "tokens",
    "entity_ids",
)

_SCHEMA = """
CREATE TABLE nodes(
    id INTEGER PRIMARY KEY CHECK (id > 0),
    memory_id TEXT NOT NULL UNIQUE,
    node_type TEXT NOT NULL
        CHECK (node_type IN ('episodic', 'semantic', 'procedural', 'opinion')),
    kind TEXT,
    body TEXT NOT NULL,
    session_id TEXT,
    turn_no INTEGER,
    seq INTEGER NOT NULL,
    created_day INTEGER NOT NULL,
    fact_id TEXT,
    source TEXT,
    superseded_by TEXT,
    tokens INTEGER,
    valid_from INTEGER NOT NULL,
    valid_until INTEGER,
    confidence REAL NOT NULL,
    base_confidence REAL NOT NULL,
    decay_rate REAL NOT NULL,
    last_access_day INTEGER NOT NULL,
    pruned_day INTEGER
);
CREATE TABLE entity_nodes(
    id INTEGER PRIMARY KEY CHECK (id < 0),
    entity_id TEXT NOT NULL UNIQUE
);
CREATE TABLE edges(
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    type TEXT NOT NULL
        CHECK (type IN ('temporal', 'causal', 'entity', 'derived_from', 'supersedes')),
    PRIMARY KEY (src, type, dst)
) WITHOUT ROWID;
CREATE TABLE node_vectors(
    id INTEGER PRIMARY KEY REFERENCES nodes(id),
    embedding BLOB NOT NULL
);
"""

_DERIVED_EDGES = """
INSERT OR IGNORE INTO edges(src, dst, type)
SELECT id, nxt, 'temporal' FROM (
    SELECT id, lead(id) OVER (PARTITION BY session_id ORDER BY seq) AS nxt
    FROM nodes WHERE session_id IS NOT NULL
) WHERE nxt IS NOT NULL;
INSERT OR IGNORE INTO edges(src, dst, type)
SELECT s.id, o.id, 'supersedes' FROM nodes AS o JOIN nodes AS s ON s.memory_id = o.superseded_by
WHERE s.id <> o.id;
UPDATE nodes SET
    confidence = :cc, base_confidence = :cc, decay_rate = :cr,
    valid_until = (SELECT s.created_day FROM nodes AS s WHERE s.memory_id = nodes.superseded_by),
    last_access_day = coalesce(
        (SELECT s.created_day FROM nodes AS s WHERE s.memory_id = nodes.superseded_by),
        last_access_day)
WHERE superseded_by IS NOT NULL;
WITH firsts AS (
    SELECT fact_id, id AS fid, node_type AS ftype FROM (
        SELECT fact_id, id, node_type,
               row_number() OVER (PARTITION BY fact_id ORDER BY created_day, seq) AS r
        FROM nodes WHERE fact_id IS NOT NULL
    ) WHERE r = 1
)
INSERT OR IGNORE INTO edges(src, dst, type)
SELECT CASE WHEN f.ftype = 'episodic' THEN f.fid ELSE n.id END,
       CASE WHEN f.ftype = 'episodic' THEN n.id ELSE f.fid END,
       CASE WHEN f.ftype = 'episodic' THEN 'causal' ELSE 'derived_from' END
FROM nodes AS n JOIN firsts AS f ON f.fact_id = n.fact_id
WHERE n.id <> f.fid AND (f.ftype = 'episodic' OR NOT EXISTS (
    SELECT 1 FROM edges AS e WHERE e.src = n.id AND e.type = 'supersedes'));
"""

_INDEXES = """
CREATE INDEX idx_edges_dst ON edges(dst, type, src);
CREATE INDEX idx_nodes_session ON nodes(session_id, seq);
CREATE INDEX idx_nodes_day ON nodes(created_day);
CREATE INDEX idx_nodes_seq ON nodes(seq);
CREATE INDEX idx_nodes_fact ON nodes(fact_id, created_day, seq);
CREATE INDEX idx_nodes_superseded ON nodes(superseded_by);
CREATE VIRTUAL TABLE nodes_fts USING fts5(
    body, content='nodes', content_rowid='id', tokenize='porter unicode61'
);
INSERT INTO nodes_fts(nodes_fts) VALUES('rebuild');
"""


def decayed_confidence(confidence0: float, decay_rate: float, days_since_access: float) -> float:
    """Return the Ebbinghaus-style decayed confidence of the seed "graph cognitive memory".

    ``confidence_t = confidence_0 * exp(-decay_rate * days ** 0.8)`` (the seed's claim;
    an exponential forgetting curve after Ebbinghaus 1885 with a sub-linear time axis).

    Args:
        confidence0: confidence at the last access, in ``[0, 1]``.
        decay_rate: per ``day ** 0.8``; ``0`` means no decay.
        days_since_access: days since the last access; negative values count as 0.

    Returns:
        The decayed confidence (``confidence0`` when nothing has elapsed).
    """
    days = max(0.0, float(days_since_access))
    if days == 0.0 or decay_rate == 0.0:
        return float(confidence0)
    return float(confidence0) * math.exp(-float(decay_rate) * days**DECAY_EXPONENT)


def node_type_of(kind: str | None) -> str:
    """Map a memory ``kind`` to a node type (:data:`NODE_TYPES`; unknown -> ``episodic``)."""
    return kind if kind in NODE_TYPES else "episodic"


def _place_in_session(conn: apsw.Connection, nid: int, session_id: str, seq: int) -> None:
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


def _add_entity_edge(conn: apsw.Connection, nid: int, entity_id: str) -> None:
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


def _supersede(conn: apsw.Connection, old: int, new: int, new_mid: str, day: int) -> None:
    """Mark node ``old`` superseded by node ``new`` (memory id ``new_mid``) as of ``day``.

    Adds the ``supersedes`` edge and sets ``superseded_by``, ``valid_until``, the corrected
    confidence and decay rate (re-based on ``day``), as :meth:`SqliteGraphArm.correct` does.
    """
    conn.execute(
        "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'supersedes')", (new, old)
    )
    conn.execute(
        "UPDATE nodes SET superseded_by = ?, valid_until = ?, confidence = ?, "
        "base_confidence = ?, decay_rate = ?, last_access_day = ? WHERE id = ?",
        (new_mid, day, CORRECTED_CONFIDENCE, CORRECTED_CONFIDENCE, CORRECTED_DECAY_RATE, day, old),
    )


def _link_to_fact(conn: apsw.Connection, nid: int, fact_id: str, correction: bool) -> None:
    """Add the ``causal`` or ``derived_from`` edge between node ``nid`` and its fact's first node.

    The first node of the fact (by ``created_day``, then ``seq``; ``nid`` itself when it
    is the oldest, and then no edge) causes ``nid`` when it is episodic; otherwise ``nid``
    derives from it, unless ``nid`` is a correction (module docstring).
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


class _Writer:
    """A single writer thread owning the only read-write connection to the store.

    Jobs are callables ``fn(conn) -> result`` put on a FIFO queue; each runs in its own
    ``BEGIN IMMEDIATE`` transaction (or none, for pragmas such as checkpoints), and its
    result or exception lands in the :class:`~concurrent.futures.Future` returned by
    :meth:`submit`. Jobs queued before :meth:`close` still run.
    """

    def __init__(self, path: Path, *, create: bool, label: str) -> None:
        self.path = path
        self._label = label
        self._jobs: queue.Queue[tuple[Callable[[apsw.Connection], Any], Future, bool] | None]
        self._jobs = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._run, args=(create, ready), name=f"{label}-writer", daemon=True
        )
        self._thread.start()
        ready.result()

    def _connect(self, create: bool) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
        conn = apsw.Connection(str(self.path), flags=flags)
        try:
            conn.set_busy_timeout(10_000)
            if create:
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.create_scalar_function("agentmem_decay", decayed_confidence, 3, deterministic=True)
        except apsw.Error:
            conn.close()
            raise
        return conn

    def _run(self, create: bool, ready: Future[None]) -> None:
        try:
            conn = self._connect(create)
        except apsw.Error as exc:
            ready.set_exception(
                ArmError(f"{self._label}: cannot open SQLite store {self.path}: {exc}")
            )
            return
        ready.set_result(None)
        try:
            while True:
                job = self._jobs.get()
                if job is None:
                    break
                fn, fut, transaction = job
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    if transaction:
                        conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = fn(conn)
                    except BaseException:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
                    if transaction:
                        conn.execute("COMMIT")
                except Exception as exc:
                    fut.set_exception(exc)
                else:
                    fut.set_result(result)
        finally:
            conn.close()

    def submit(self, fn: Callable[[apsw.Connection], Any], *, transaction: bool = True) -> Future:
        """Queue ``fn(conn)`` for the writer thread and return its future.

        Raises:
            ArmError: when the writer has been closed.
        """
        fut: Future = Future()
        with self._lock:
            if self._closed:
                raise ArmError(f"{self._label}: writer for {self.path} is closed")
            self._jobs.put((fn, fut, transaction))
        return fut

    def call(self, fn: Callable[[apsw.Connection], Any], *, transaction: bool = True) -> Any:
        """Run ``fn(conn)`` on the writer thread and wait for its result.

        Raises:
            ArmError: wrapping an SQLite error (naming the store path), or when closed.
        """
        try:
            return self.submit(fn, transaction=transaction).result()
        except apsw.Error as exc:
            raise ArmError(f"{self._label}: write to {self.path} failed: {exc}") from exc

    def close(self) -> None:
        """Let queued jobs finish, then stop the thread and close the connection."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        self._thread.join()


class SqliteGraphArm(ArmBase):
    """``sqlite-graph``: typed memory nodes + edges, FTS5 + vector + graph expansion, RRF.

    See the module docstring for the schema, the derived edges, the retrieval statement,
    decay and the writer queue. ``Result.count`` (when ``q.wants_count``) is ``SELECT
    count(*)`` of the live (not pruned) memory nodes matching the predicate, superseded
    ones included (they were recorded), independent of the text.

    Args:
        branch_k: candidates taken from each of the FTS, vector and graph branches (50).
        rrf_k: RRF constant (60, Cormack et al. 2009).
        expand_seeds: fused FTS+vector nodes whose one-hop neighbourhood is expanded (10);
            ``0`` turns the graph branch off (FTS + vector + superseded replacement only).
        graph_k: neighbours kept in the graph branch's ranking (50, as ``branch_k``).
        hide_superseded: ``"visible"`` (hide a node when a successor passes the query's
            predicate) or ``"always"`` (never return a superseded node).

    Raises:
        ValueError: on a parameter out of range.
    """

    name: ClassVar[str] = "sqlite-graph"
    prefix_stable: ClassVar[bool] = True
    family: ClassVar[str] = "graph"
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=True,
        aggregate=True,
        vector_access="brute-force",
        text_access="fts5-bm25",
        transactions=True,
        filter_stage="in-search",
    )
    bare_call: ClassVar[BareCall] = BareCall(
        "execute + fetchall of the prepared ranking (and count) statements",
        "building the SQL text and bindings per call; the id list",
    )

    def __init__(
        self,
        *,
        branch_k: int = 50,
        rrf_k: int = 60,
        expand_seeds: int = 10,
        graph_k: int = 50,
        hide_superseded: str = "visible",
    ) -> None:
        if branch_k < 1:
            raise ValueError(f"branch_k must be >= 1, got {branch_k}")
        if rrf_k < 0:
            raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")
        if expand_seeds < 0:
            raise ValueError(f"expand_seeds must be >= 0, got {expand_seeds}")
        if graph_k < 1:
            raise ValueError(f"graph_k must be >= 1, got {graph_k}")
        if hide_superseded not in HIDE_MODES:
            raise ValueError(
                f"hide_superseded must be one of {HIDE_MODES}, got {hide_superseded!r}"
            )
        self.branch_k = int(branch_k)
        self.rrf_k = int(rrf_k)
        self.expand_seeds = int(expand_seeds)
        self.graph_k = int(graph_k)
        self.hide_superseded = hide_superseded
        self._writer: _Writer | None = None
        self._reader: apsw.Connection | None = None
        self._path: Path | None = None

    # ----------------------------------------------------------------- connections
    def _open_connections(self, path: Path, *, create: bool) -> None:
        """Start the writer (read-write, creating the file if asked), then the reader."""
        writer = _Writer(path, create=create, label=self.name)
        try:
            reader = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        except apsw.Error as exc:
            writer.close()
            raise ArmError(f"{self.name}: cannot open {path} read-only: {exc}") from exc
        try:
            reader.set_busy_timeout(10_000)
            import sqlite_vec

            reader.enable_load_extension(True)
            reader.load_extension(sqlite_vec.loadable_path())
            reader.enable_load_extension(False)
        except apsw.Error as exc:
            reader.close()
            writer.close()
            raise ArmError(f"{self.name}: cannot load sqlite-vec for {path}: {exc}") from exc
        self._writer, self._reader, self._path = writer, reader, path

    def _w(self) -> _Writer:
        if self._writer is None:
            raise ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._writer

    def _r(self) -> apsw.Connection:
        if self._reader is None:
            raise ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._reader

    # ----------------------------------------------------------------------- build
    def build(self, corpus: Corpus, vectors: Embeddings, store_dir: Path) -> BuildStats:
        """Create ``store_dir/graph.db`` from scratch (through the writer) and leave it open.

        ``ingest_ms`` covers writing the nodes, entity nodes and every edge (entity edges
        from ``entity_ids``, the others derived in SQL); ``index_ms`` the B-tree indexes,
        the FTS5 index, the vector rows and ``ANALYZE``.

        Args:
            corpus: the memories (columns of :class:`~agentmem.arms.base.Corpus`).
            vectors: float32 ``(n, 384)`` embeddings keyed by memory id.
            store_dir: directory for ``graph.db``; created if missing; an existing store
                is replaced.

        Returns:
            Build timings in milliseconds.

        Raises:
            ArmError: on missing columns, missing embeddings or an SQLite error.
        """
        self.close()
        store_dir = Path(store_dir)
        store_dir.mkdir(parents=True, exist_ok=True)
        path = store_dir / DB_NAME
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        mem = corpus.memories
        missing = [c for c in _MEMORY_COLUMNS if c not in mem.columns]
        if missing:
            raise ArmError(f"{self.name}: corpus memories lack columns {missing} ({path})")
        ids = mem["memory_id"].to_list()
        try:
            mat = np.ascontiguousarray(vectors.get(ids), dtype=np.float32)
        except KeyError as exc:
            raise ArmError(f"{self.name}: {exc.args[0]} ({path})") from None
        if len(ids) and (mat.ndim != 2 or mat.shape[1] != VECTOR_DIM):
            raise ArmError(
                f"{self.name}: embeddings have shape {mat.shape}, need (n, {VECTOR_DIM})"
            )

        node_rows = []
        ent_ids: dict[str, int] = {}
        edge_rows: list[tuple[int, int]] = []
        for i, r in enumerate(mem.select(_MEMORY_COLUMNS).iter_rows(named=True)):
            nid = i + 1
            ntype = node_type_of(r["kind"])
            conf = float(r["confidence"]) if r["confidence"] is not None else DEFAULT_CONFIDENCE
            node_rows.append(
                (nid, r["memory_id"], ntype, r["kind"], r["body"] or "", r["session_id"],
                 r["turn_no"], r["seq"] if r["seq"] is not None else i, r["created_day"],
                 r["fact_id"], r["source"], r["superseded_by"], r["tokens"], r["created_day"],
                 conf, conf, DECAY_RATES[ntype], r["created_day"])
            )  # fmt: skip
            for e in r["entity_ids"] or []:
                eid = ent_ids.setdefault(str(e), -(len(ent_ids) + 1))
                edge_rows.append((nid, eid))
        vec_rows = [(i + 1, mat[i].tobytes()) for i in range(len(ids))]

        def ingest(conn: apsw.Connection) -> None:
            conn.execute(_SCHEMA)
            conn.executemany(
                "INSERT INTO nodes(id, memory_id, node_type, kind, body, session_id, turn_no, "
                "seq, created_day, fact_id, source, superseded_by, tokens, valid_from, "
                "confidence, base_confidence, decay_rate, last_access_day) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                node_rows,
            )
            conn.executemany(
                "INSERT INTO entity_nodes(id, entity_id) VALUES (?, ?)",
                [(v, k) for k, v in ent_ids.items()],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'entity')", edge_rows
            )
            conn.execute(_DERIVED_EDGES, {"cc": CORRECTED_CONFIDENCE, "cr": CORRECTED_DECAY_RATE})

        def index(conn: apsw.Connection) -> None:
            conn.execute(_INDEXES)
            conn.executemany("INSERT INTO node_vectors(id, embedding) VALUES (?, ?)", vec_rows)
            conn.execute("ANALYZE")

        self._open_connections(path, create=True)
        try:
            t0 = time.perf_counter()
            self._w().call(ingest)
            t1 = time.perf_counter()
            self._w().call(index)
            t2 = time.perf_counter()
        except ArmError:
            self.close()
            raise
        return BuildStats(ingest_ms=(t1 - t0) * 1e3, index_ms=(t2 - t1) * 1e3)

    # ------------------------------------------------------------------------ open
    def open(self, store_dir: Path) -> None:
        """Reopen ``store_dir/graph.db``: a new writer thread plus a read-only reader.

        Several instances (or processes) may hold the same store open; their writers
        serialise on SQLite's write lock (``BEGIN IMMEDIATE`` with a 10 s busy timeout).

        Raises:
            ArmError: naming the path when the file is missing, not an SQLite database,
                or lacks a table of this arm.
        """
        self.close()
        path = Path(store_dir) / DB_NAME
        if not path.is_file():
            raise ArmError(f"{self.name}: no SQLite store at {path}")
        self._open_connections(path, create=False)
        try:
            have = {r[0] for r in self._r().execute("SELECT name FROM sqlite_schema")}
        except apsw.Error as exc:
            self.close()
            raise ArmError(f"{self.name}: {path} is not a readable SQLite database: {exc}") from exc
        if _REQUIRED_TABLES - have:
            self.close()
            raise ArmError(f"{self.name}: {path} lacks tables {sorted(_REQUIRED_TABLES - have)}")

    # ---------------------------------------------------------------------- writes
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
    ) -> str:
        """Write one memory node through the writer queue (the hot path: no LLM, one txn).

        Adds the node, its FTS row, its vector (when ``embedding`` is given; without one
        the node is reachable by text and graph only), its entity edges (creating entity
        nodes as needed), a ``temporal`` edge from the previous node of ``session_id`` and
        the ``causal`` / ``derived_from`` edge to the first node of ``fact_id`` (rules in
        the module docstring).

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

        Returns:
            The new node's ``memory_id``.

        Raises:
            ValueError: on an empty body, bad confidence or embedding shape.
            ArmError: when the store is not open, the id exists, or SQLite fails.
        """
        job = self._node_job(
            body, kind, day=day, session_id=session_id, fact_id=fact_id,
            entity_ids=entity_ids, embedding=embedding, confidence=confidence, source=source,
            memory_id=memory_id, supersedes=None,
        )  # fmt: skip
        return self._w().call(job)

    def remember(self, memories: pl.DataFrame, vectors: Embeddings) -> None:
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
        batch = prepare_memories(memories, vectors, self.name)
        if not batch.ids:
            return
        rows = batch.memories.rows(named=True)
        for r in rows:
            if not 0.0 <= float(r["confidence"]) <= 1.0:
                raise ArmError(
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
                        "valid_from, confidence, base_confidence, decay_rate, last_access_day) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (nid, mid, ntype, r["kind"], r["body"], r["session_id"], r["turn_no"],
                         r["seq"], r["created_day"], r["fact_id"], r["source"], None,
                         r["tokens"], r["created_day"], conf, conf, DECAY_RATES[ntype],
                         r["created_day"]),
                    )  # fmt: skip
                except apsw.ConstraintError:
                    raise ArmError(f"{label}: memory {mid!r} is already stored in {path}") from None
                conn.execute("INSERT INTO nodes_fts(rowid, body) VALUES (?, ?)", (nid, r["body"]))
                conn.execute(
                    "INSERT INTO node_vectors(id, embedding) VALUES (?, ?)", (nid, vecs[i])
                )
                if r["session_id"] is not None:
                    _place_in_session(conn, nid, r["session_id"], int(r["seq"]))
                for e in r["entity_ids"]:
                    _add_entity_edge(conn, nid, str(e))
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
                    raise ArmError(
                        f"{label}: memory {new!r} supersedes {old!r}, which is not stored in {path}"
                    )
                _supersede(conn, old_row[0][0], new_id, new, day)
            for r in rows:
                if r["fact_id"] is not None:
                    _link_to_fact(
                        conn, nids[r["memory_id"]], r["fact_id"], r["memory_id"] in correcting
                    )

        writer.call(job)

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
        cols = [c for c in _MEMORY_COLUMNS if c != "entity_ids"]
        try:
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
        except apsw.Error as exc:
            raise ArmError(f"{self.name}: fetch on {self._path} failed: {exc}") from exc
        frame = memory_rows_frame(
            [(*r[1:], ents.get(int(r[0]), [])) for r in found], [*cols, "entity_ids"]
        )
        return memory_frame(frame, memory_ids)

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

        The new node takes the old node's kind and ``fact_id`` (and its entity ids unless
        ``entity_ids`` is given) and gets a ``supersedes`` edge to the old node; the old
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
            memory_id=memory_id, supersedes=old_id,
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
    ) -> Callable[[apsw.Connection], str]:
        """Validate a node write and return the writer job that performs it."""
        if not isinstance(body, str) or not body.strip():
            raise ValueError("a memory body must be a non-empty string")
        if not 0.0 <= float(confidence) <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {confidence}")
        day = int(day)
        vec: bytes | None = None
        if embedding is not None:
            v = np.ascontiguousarray(embedding, dtype=np.float32).reshape(-1)
            if v.shape[0] != VECTOR_DIM:
                raise ValueError(f"embedding has {v.shape[0]} values, need {VECTOR_DIM}")
            vec = v.tobytes()
        ents = None if entity_ids is None else [str(e) for e in entity_ids]
        tokens = count_tokens([body])[0]  # o200k, as the corpus counts (outside the txn)
        label = self.name

        def job(conn: apsw.Connection) -> str:
            old: tuple[Any, ...] | None = None
            node_kind, node_fact = kind, fact_id
            if supersedes is not None:
                rows = conn.execute(
                    "SELECT id, kind, fact_id FROM nodes WHERE memory_id = ?", (supersedes,)
                ).fetchall()
                if not rows:
                    raise ArmError(f"{label}: no node {supersedes!r} to correct")
                old = rows[0]
                node_kind, node_fact = old[1], old[2]
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
                    "turn_no, seq, created_day, fact_id, source, tokens, valid_from, "
                    "confidence, base_confidence, decay_rate, last_access_day) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (nid, mid, ntype, node_kind or ntype, body, session_id, turn, seq, day,
                     node_fact, source, tokens, day, float(confidence),
                     float(confidence), DECAY_RATES[ntype], day),
                )  # fmt: skip
            except apsw.ConstraintError as exc:
                raise ArmError(f"{label}: cannot add node {mid!r}: {exc}") from exc
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
                _add_entity_edge(conn, nid, e)
            if old is not None:
                _supersede(conn, old[0], nid, mid, day)
            if node_fact is not None:
                _link_to_fact(conn, nid, node_fact, old is not None)
            return str(mid)

        return job

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

    # ----------------------------------------------------------------------- query
    def _query_vector(self, q: Query) -> bytes:
        """Return the query embedding as float32 bytes.

        Raises:
            ArmError: when the embedding is missing or not of size 384.
        """
        v = checked_vector(q.embedding, self.name, f"query {q.query_id!r}", VECTOR_DIM)
        return v.tobytes()

    def _ranking(self, q: Query, k: int) -> tuple[str, dict[str, Any]]:
        """Return the one retrieval statement for ``q`` and its bindings (module docstring)."""
        cond, params = predicate_sql(q.predicate)
        live = f"m.pruned_day IS NULL AND {cond}"
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
            "ent_deg AS MATERIALIZED (SELECT x.ent, (SELECT count(*) FROM edges AS e "
            "WHERE e.dst = x.ent AND e.type = 'entity') AS deg "
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

    def _count_sql(self, q: Query) -> tuple[str, dict[str, Any]]:
        """Return the exact-count statement: live memory nodes matching the predicate."""
        cond, params = predicate_sql(q.predicate)
        return f"SELECT count(*) FROM nodes AS m WHERE m.pruned_day IS NULL AND {cond}", params

    def raw_ingest(self) -> RawIngest:
        """The raw bulk path: the node, entity and edge tables written in one transaction."""
        return RawIngest(
            "tables",
            "graph.db",
            ("nodes", "entity_nodes", "edges"),
            beyond="deriving the temporal/supersedes/causal edges in SQL and the confidence "
            "update; the hop to the single writer thread",
        )

    def query(self, q: Query, k: int) -> Result:
        """Return at most ``k`` memory ids best first, plus the exact count if wanted.

        Runs on the read-only connection (never waits for the writer). Hostile text never
        raises: text with no search terms drops the FTS branch (vector + graph remain).

        Raises:
            ArmError: when the store is not open, the embedding is missing or malformed,
                or on an SQLite error.
        """
        conn = self._r()
        ids: list[str] = []
        count: int | None = None
        try:
            if k > 0:
                sql, params = self._ranking(q, k)
                ids = [r[0] for r in conn.execute(sql, params)]
            if q.wants_count:
                sql, params = self._count_sql(q)
                count = int(conn.execute(sql, params).fetchall()[0][0])
        except apsw.Error as exc:
            raise ArmError(
                f"{self.name}: query {q.query_id!r} on {self._path} failed: {exc}"
            ) from exc
        return Result(memory_ids=ids[:k], count=count)

    def raw_query_call(self, q: Query, k: int) -> Callable[[], list[list[Any]]]:
        """Return a zero-argument function making exactly the driver calls :meth:`query` makes.

        The retrieval statement (:meth:`_ranking`, when ``k > 0``) and the count statement
        (when ``q.wants_count``) are built here, once; each call of the returned function
        only executes them on the read-only connection and fetches every row. The
        harness-overhead benchmark (:mod:`agentmem.bench`) times it against :meth:`query`.

        Returns:
            A function returning one list of rows per statement run.

        Raises:
            ArmError: when the store is not open or the embedding is malformed.
        """
        conn = self._r()
        stmts: list[tuple[str, dict[str, Any]]] = []
        if k > 0:
            stmts.append(self._ranking(q, k))
        if q.wants_count:
            stmts.append(self._count_sql(q))

        def call() -> list[list[Any]]:
            return [conn.execute(s, p).fetchall() for s, p in stmts]

        return call

    def raw_ids(self, raw: list[list[Any]], k: int) -> list[str]:
        """The ids :meth:`query` makes of the bare call's rows: the ranking's first column.

        Args:
            raw: one list of rows per statement, from the function
                :meth:`raw_query_call` returned (the ranking first when ``k > 0``).
            k: the result length the call was made for.

        Returns:
            At most ``k`` memory ids, best first.
        """
        if k <= 0 or not raw:
            return []
        return [r[0] for r in raw[0]][:k]

    def explain(self, q: Query, k: int = 10) -> str:
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
        stmts = [("retrieval", self._ranking(q, max(k, 1)))]
        if q.wants_count:
            stmts.append(("count", self._count_sql(q)))
        parts = []
        for label, (sql, params) in stmts:
            try:
                rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
            except apsw.Error as exc:
                raise ArmError(f"{self.name}: explain on {self._path} failed: {exc}") from exc
            parts.append(f"-- {label}: {' '.join(sql.split())}\n{format_plan(rows)}")
        return "\n".join(parts)

    # --------------------------------------------------------------------- storage
    def storage(self) -> StorageStats:
        """Return bytes per SQLite object from ``dbstat`` (after a WAL checkpoint).

        The checkpoint runs on the writer thread; ``dbstat`` on the reader. Objects are
        tables, indexes and FTS5 shadow tables (``sum(pgsize)`` per name); a non-empty
        ``graph.db-wal`` left after the checkpoint is its own entry.

        Raises:
            ArmError: when the store is not open or ``dbstat`` fails.
        """
        self._w().call(
            lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall(), transaction=False
        )
        try:
            objects = {
                str(n): int(b)
                for n, b in self._r().execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
            }
        except apsw.Error as exc:
            raise ArmError(f"{self.name}: dbstat on {self._path} failed: {exc}") from exc
        wal = Path(str(self._path) + "-wal")
        if wal.is_file() and os.path.getsize(wal) > 0:
            objects[wal.name] = os.path.getsize(wal)
        return StorageStats(total_bytes=sum(objects.values()), objects=objects, source="dbstat")

    def close(self) -> None:
        """Close the reader, drain and stop the writer thread; safe to call twice."""
        reader, writer = self._reader, self._writer
        self._reader = self._writer = None
        try:
            if reader is not None:
                reader.close()
        finally:
            if writer is not None:
                writer.close()
