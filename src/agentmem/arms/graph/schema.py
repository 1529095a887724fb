"""On-disk layout of the sqlite-graph arm: the tables of ``graph.db`` and the derived edges.

:data:`SCHEMA` creates the node, entity and edge tables; :data:`DERIVED_EDGES` derives
the ``temporal``, ``supersedes``, ``causal`` and ``derived_from`` edges of a built corpus
in SQL; :data:`INDEXES` adds the B-tree and FTS5 indexes after the bulk load. The edge
rules are in ``docs/arms/sqlite-graph.md``.
"""

from __future__ import annotations

from agentmem.sql.sqlite.schema import MEMORY_COLUMNS as SQLITE_MEMORY_COLUMNS

#: SQLite file of the store inside the store directory.
DB_NAME = "graph.db"
#: Node types of the seed; a memory ``kind`` outside this set becomes ``episodic``.
NODE_TYPES: tuple[str, ...] = ("episodic", "semantic", "procedural", "opinion")
#: Edge types of the seed.
EDGE_TYPES: tuple[str, ...] = ("temporal", "causal", "entity", "derived_from", "supersedes")

#: Tables a ``graph.db`` must hold.
REQUIRED_TABLES = frozenset({"nodes", "entity_nodes", "edges", "nodes_fts", "node_vectors"})
#: Memory columns the arm reads from a corpus and returns from ``fetch``.
MEMORY_COLUMNS = (*SQLITE_MEMORY_COLUMNS, "entity_ids")
#: Columns of ``nodes`` a store must have (a store of an older layout lacks ``scope_id``).
REQUIRED_NODE_COLUMNS = frozenset(c for c in MEMORY_COLUMNS if c != "entity_ids")

SCHEMA = """
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
    scope_id TEXT,
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

DERIVED_EDGES = """
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

INDEXES = """
CREATE INDEX idx_edges_dst ON edges(dst, type, src);
CREATE INDEX idx_nodes_session ON nodes(session_id, seq);
CREATE INDEX idx_nodes_day ON nodes(created_day);
CREATE INDEX idx_nodes_seq ON nodes(seq);
CREATE INDEX idx_nodes_fact ON nodes(fact_id, created_day, seq);
CREATE INDEX idx_nodes_superseded ON nodes(superseded_by);
CREATE INDEX idx_nodes_scope ON nodes(scope_id) WHERE scope_id IS NOT NULL;
CREATE VIRTUAL TABLE nodes_fts USING fts5(
    body, content='nodes', content_rowid='id', tokenize='porter unicode61'
);
INSERT INTO nodes_fts(nodes_fts) VALUES('rebuild');
"""


def node_type_of(kind: str | None) -> str:
    """Map a memory ``kind`` to a node type (:data:`NODE_TYPES`; unknown -> ``episodic``)."""
    return kind if kind in NODE_TYPES else "episodic"
