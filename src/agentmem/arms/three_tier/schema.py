"""On-disk layout of the three-tier arm: ``tiers.db`` (L1, L2) and the L3 table in PostgreSQL.

:data:`SQLITE_SCHEMA` creates the SQLite file: L1 turns, L2 summary nodes and their
provenance, each with an FTS5 index kept by triggers. :func:`pg_table_ddl` and
:func:`pg_index_ddl` create ``l3_memories`` and its B-tree and HNSW indexes.
"""

from __future__ import annotations

from psycopg import sql

from agentmem.arms import base
from agentmem.sql.postgres.schema import MEMORY_COLUMNS as PG_MEMORY_COLUMNS

#: SQLite file of tiers L1 and L2 inside the store directory.
DB_NAME = "tiers.db"
#: Version of the on-disk layout, checked by :meth:`~agentmem.arms.three_tier.ThreeTierArm.open`.
LAYOUT_VERSION = "2"

#: Memory columns in storage order: (name, PostgreSQL COPY type, PostgreSQL DDL type) —
#: the Postgres arms' memory columns (agentmem.arms.postgres) without the entity array.
MEM_COLUMNS: tuple[tuple[str, str, str], ...] = tuple(
    c for c in PG_MEMORY_COLUMNS if c[0] != "entity_ids"
)
MEM_NAMES = tuple(c for c, _, _ in MEM_COLUMNS)
INT_COLS = {"turn_no", "seq", "created_day", "tokens"}
#: L3 columns after the memory columns.
L3_EXTRA: tuple[tuple[str, str, str], ...] = (
    ("entity_ids", "text[]", "text[] NOT NULL DEFAULT '{}'"),
    ("body_tokens", "int4", "integer NOT NULL"),
    ("embedding", "vector", f"vector({base.VECTOR_DIM}) NOT NULL"),
)
L3_NAMES = MEM_NAMES + tuple(c for c, _, _ in L3_EXTRA)
L3_BTREE = ("session_id", "created_day", "fact_id", "superseded_by", "scope_id")
#: Conditions of L3's partial B-tree indexes: a store without scopes pays nothing for them.
L3_PARTIAL = {"scope_id": "scope_id IS NOT NULL"}

SQLITE_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE l1_turns(
    id INTEGER PRIMARY KEY,              -- ingestion order: compaction evicts smallest first
    memory_id TEXT NOT NULL UNIQUE,
    session_id TEXT, turn_no INTEGER, seq INTEGER, kind TEXT, body TEXT NOT NULL,
    fact_id TEXT, created_day INTEGER, source TEXT, confidence REAL, superseded_by TEXT,
    tokens INTEGER,
    scope_id TEXT,                         -- whose memory (a query's scope); null: none
    entity_ids TEXT NOT NULL DEFAULT '[]', -- JSON list
    body_tokens INTEGER NOT NULL,          -- o200k tokens of body (the cap's unit)
    embedding BLOB NOT NULL                -- float32[{base.VECTOR_DIM}], carried to L3 on eviction
);
CREATE INDEX l1_recency ON l1_turns(created_day, seq);
CREATE VIRTUAL TABLE l1_fts USING fts5(
    body, content='l1_turns', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER l1_fts_ai AFTER INSERT ON l1_turns BEGIN
    INSERT INTO l1_fts(rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER l1_fts_ad AFTER DELETE ON l1_turns BEGIN
    INSERT INTO l1_fts(l1_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TABLE l2_nodes(
    node_id INTEGER PRIMARY KEY,
    session_id TEXT,
    scope_id TEXT,                         -- the scope of every memory it covers
    epoch INTEGER NOT NULL,                -- 0, 1, 2, ... per (scope, session)
    first_seq INTEGER, last_seq INTEGER, first_day INTEGER, last_day INTEGER,
    n_covered INTEGER NOT NULL,
    source_tokens INTEGER NOT NULL,        -- o200k tokens of the compacted turns
    summary TEXT NOT NULL,
    summary_tokens INTEGER NOT NULL,       -- o200k tokens of summary
    summariser TEXT NOT NULL,
    trigger_memory_id TEXT,                -- the turn whose ingest caused the compaction
    UNIQUE(scope_id, session_id, epoch)
);
CREATE VIRTUAL TABLE l2_fts USING fts5(
    summary, content='l2_nodes', content_rowid='node_id', tokenize='porter unicode61'
);
CREATE TRIGGER l2_fts_ai AFTER INSERT ON l2_nodes BEGIN
    INSERT INTO l2_fts(rowid, summary) VALUES (new.node_id, new.summary);
END;
CREATE TRIGGER l2_fts_ad AFTER DELETE ON l2_nodes BEGIN
    INSERT INTO l2_fts(l2_fts, rowid, summary) VALUES ('delete', old.node_id, old.summary);
END;
CREATE TABLE l2_covers(                  -- provenance: which memories a node covers
    node_id INTEGER NOT NULL REFERENCES l2_nodes(node_id),
    memory_id TEXT NOT NULL,
    ord INTEGER NOT NULL,                  -- position in the compacted run
    excerpt TEXT NOT NULL DEFAULT '',      -- the memory's sentences found in the summary
    session_id TEXT, seq INTEGER, created_day INTEGER, fact_id TEXT, superseded_by TEXT,
    scope_id TEXT,
    PRIMARY KEY (node_id, memory_id)
);
CREATE INDEX l2_covers_memory ON l2_covers(memory_id);
"""

#: Tables (and FTS5 virtual tables) a ``tiers.db`` must hold.
SQLITE_TABLES = {"meta", "l1_turns", "l1_fts", "l2_nodes", "l2_fts", "l2_covers"}


def pg_table_ddl() -> sql.Composable:
    """Return ``CREATE TABLE l3_memories (...)``."""
    cols = [
        sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(d))
        for c, _, d in (*MEM_COLUMNS, *L3_EXTRA)
    ]
    return sql.SQL("CREATE TABLE l3_memories ({})").format(sql.SQL(", ").join(cols))


def pg_index_ddl(m: int, ef_construction: int) -> list[sql.Composable]:
    """Return the B-tree (predicate and scope columns) and HNSW (cosine) index statements of L3.

    Args:
        m: HNSW ``m`` (links per node).
        ef_construction: HNSW build candidate list size.
    """
    out: list[sql.Composable] = [
        sql.SQL("CREATE INDEX {} ON l3_memories ({}){}").format(
            sql.Identifier(f"l3_{c}_idx"),
            sql.Identifier(c),
            sql.SQL(f" WHERE {L3_PARTIAL[c]}" if c in L3_PARTIAL else ""),
        )
        for c in L3_BTREE
    ]
    out.append(
        sql.SQL(
            "CREATE INDEX l3_embedding_idx ON l3_memories "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = {}, ef_construction = {})"
        ).format(sql.Literal(m), sql.Literal(ef_construction))
    )
    return out
