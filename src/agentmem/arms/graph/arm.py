"""The ``sqlite-graph`` arm class: parameters, declarations, build, open, storage.

Its other methods come from the mixins of this package (remember, decay, retrieval);
``docs/arms/sqlite-graph.md`` describes the schema, the edges, retrieval and decay.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import ClassVar

import apsw

from agentmem.arms import base
from agentmem.arms.graph.confidence import (
    CORRECTED_CONFIDENCE,
    CORRECTED_DECAY_RATE,
    DECAY_RATES,
    DEFAULT_CONFIDENCE,
)
from agentmem.arms.graph.connections import Writer
from agentmem.arms.graph.decay import DecayMixin
from agentmem.arms.graph.remember import RememberMixin
from agentmem.arms.graph.retrieval import HIDE_MODES, RetrievalMixin
from agentmem.arms.graph.schema import (
    DB_NAME,
    DERIVED_EDGES,
    INDEXES,
    MEMORY_COLUMNS,
    REQUIRED_NODE_COLUMNS,
    REQUIRED_TABLES,
    SCHEMA,
    node_type_of,
)
from agentmem.arms.knobs import Knob
from agentmem.sql.sqlite.connection import (
    INTEGRITY_CHECK,
    fresh_database,
    integrity_problems,
)


class SqliteGraphArm(RememberMixin, DecayMixin, RetrievalMixin):
    """``sqlite-graph``: typed memory nodes + edges, FTS5 + vector + graph expansion, RRF.

    ``docs/arms/sqlite-graph.md`` describes the schema, the derived edges, the retrieval
    statement, decay and the writer queue. ``Result.count`` (when ``q.wants_count``) is
    ``SELECT count(*)`` of the live (not pruned) memory nodes matching the predicate,
    superseded ones included (they were recorded), independent of the text.

    Scope: a node attribute (``nodes.scope_id``, partial index ``idx_nodes_scope``),
    filtered inside the retrieval statement: AND-ed with the predicate wherever the
    predicate applies (FTS and vector seeds, graph neighbours, successors that replace
    superseded nodes) and in the count, so a scoped query walks only its scope's nodes;
    the entity degrees that weight the graph branch count the scope's nodes only.

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
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("branch_k", "query", (20, 100), "candidates per branch before RRF"),
        Knob("rrf_k", "query", (), "RRF constant k in 1 / (k + rank)"),
        Knob("expand_seeds", "query", (), "seed memories the graph expands from"),
    )
    prefix_stable: ClassVar[bool] = True
    family: ClassVar[str] = "graph"
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="brute-force", text_access="fts5-bm25"
    )
    bare_call: ClassVar[base.BareCall] = base.BareCall(
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
        self._writer: Writer | None = None
        self._reader: apsw.Connection | None = None
        self._path: Path | None = None

    # ----------------------------------------------------------------------- build
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
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
        path = fresh_database(Path(store_dir), DB_NAME)
        mem = base.build_memories(corpus.memories, MEMORY_COLUMNS, self.name, path)
        ids = mem["memory_id"].to_list()
        mat = base.embedding_matrix(vectors, ids, self.name, path)

        node_rows = []
        ent_ids: dict[str, int] = {}
        edge_rows: list[tuple[int, int]] = []
        for i, r in enumerate(mem.select(MEMORY_COLUMNS).iter_rows(named=True)):
            nid = i + 1
            ntype = node_type_of(r["kind"])
            conf = float(r["confidence"]) if r["confidence"] is not None else DEFAULT_CONFIDENCE
            node_rows.append(
                (nid, r["memory_id"], ntype, r["kind"], r["body"] or "", r["session_id"],
                 r["turn_no"], r["seq"] if r["seq"] is not None else i, r["created_day"],
                 r["fact_id"], r["source"], r["superseded_by"], r["tokens"], r["scope_id"],
                 r["created_day"], conf, conf, DECAY_RATES[ntype], r["created_day"])
            )  # fmt: skip
            for e in r["entity_ids"] or []:
                eid = ent_ids.setdefault(str(e), -(len(ent_ids) + 1))
                edge_rows.append((nid, eid))
        vec_rows = [(i + 1, mat[i].tobytes()) for i in range(len(ids))]

        def ingest(conn: apsw.Connection) -> None:
            conn.execute(SCHEMA)
            conn.executemany(
                "INSERT INTO nodes(id, memory_id, node_type, kind, body, session_id, turn_no, "
                "seq, created_day, fact_id, source, superseded_by, tokens, scope_id, "
                "valid_from, confidence, base_confidence, decay_rate, last_access_day) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                node_rows,
            )
            conn.executemany(
                "INSERT INTO entity_nodes(id, entity_id) VALUES (?, ?)",
                [(v, k) for k, v in ent_ids.items()],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?, ?, 'entity')", edge_rows
            )
            conn.execute(DERIVED_EDGES, {"cc": CORRECTED_CONFIDENCE, "cr": CORRECTED_DECAY_RATE})

        def index(conn: apsw.Connection) -> None:
            conn.execute(INDEXES)
            conn.executemany("INSERT INTO node_vectors(id, embedding) VALUES (?, ?)", vec_rows)
            conn.execute("ANALYZE")

        self._open_connections(path, create=True)
        try:
            t0 = time.perf_counter()
            self._w().call(ingest)
            t1 = time.perf_counter()
            self._w().call(index)
            t2 = time.perf_counter()
        except base.ArmError:
            self.close()
            raise
        return base.BuildStats(ingest_ms=(t1 - t0) * 1e3, index_ms=(t2 - t1) * 1e3)

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
            raise base.ArmError(f"{self.name}: no SQLite store at {path}")
        self._open_connections(path, create=False)
        try:
            have = {r[0] for r in self._r().execute("SELECT name FROM sqlite_schema")}
        except apsw.Error as exc:
            self.close()
            raise base.ArmError(
                f"{self.name}: {path} is not a readable SQLite database: {exc}"
            ) from exc
        if REQUIRED_TABLES - have:
            self.close()
            raise base.ArmError(
                f"{self.name}: {path} lacks tables {sorted(REQUIRED_TABLES - have)}"
            )
        cols = {r[1] for r in self._r().execute("PRAGMA table_info(nodes)")}
        if REQUIRED_NODE_COLUMNS - cols:
            self.close()
            raise base.ArmError(
                f"{self.name}: {path} lacks nodes columns "
                f"{sorted(REQUIRED_NODE_COLUMNS - cols)} (built by an older layout); rebuild it"
            )

    def raw_ingest(self) -> base.RawIngest:
        """The raw bulk path: the node, entity and edge tables written in one transaction."""
        return base.RawIngest(
            "tables",
            "graph.db",
            ("nodes", "entity_nodes", "edges"),
            beyond="deriving the temporal/supersedes/causal edges in SQL and the confidence "
            "update; the hop to the single writer thread",
        )

    def integrity_check(self) -> tuple[str, list[str]]:
        """SQLite's ``PRAGMA integrity_check`` and FTS5's ``integrity-check``, on the writer.

        Raises:
            ArmError: when the store is not open or a check cannot run.
        """
        return INTEGRITY_CHECK, self._w().call(integrity_problems, transaction=False)

    # --------------------------------------------------------------------- storage
    def storage(self) -> base.StorageStats:
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
        with self._driver_failure("dbstat on"):
            objects = {
                str(n): int(b)
                for n, b in self._r().execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
            }
        wal = Path(str(self._path) + "-wal")
        if wal.is_file() and os.path.getsize(wal) > 0:
            objects[wal.name] = os.path.getsize(wal)
        return base.StorageStats(
            total_bytes=sum(objects.values()), objects=objects, source="dbstat"
        )
