"""The SQLite arms' DDL: the shared memory tables, the FTS5 index and the vector table.

``memories`` and ``memory_entities`` (with their B-tree indexes) come from the one schema
declaration, :mod:`agentmem.schema`; ``id`` is the integer rowid alias FTS5 external
content needs. The FTS5 and vector objects are the arms' access paths (docs/arms/sqlite.md).
"""

from __future__ import annotations

from agentmem.schema import sqlite_ddl

#: File name of the store inside ``store_dir``.
DB_NAME = "memory.db"

#: The ``memories`` columns an arm writes and reads back, in statement order (``id`` aside).
MEMORY_COLUMNS = (
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
    "scope_id",
)

_TABLES, _INDEXES = sqlite_ddl(("memories", "memory_entities"), rowid_alias={"memories": "id"})
#: ``CREATE TABLE`` of ``memories`` and ``memory_entities``.
TABLES_SQL = ";\n".join(_TABLES) + ";"
#: ``CREATE INDEX`` of the B-tree indexes on those tables.
BTREE_INDEXES_SQL = ";\n".join(_INDEXES) + ";"

#: The FTS5 index over ``memories.body`` (external content), filled from the table.
FTS_SQL = """
CREATE VIRTUAL TABLE memories_fts USING fts5(
    body, content='memories', content_rowid='id', tokenize='porter unicode61'
);
INSERT INTO memories_fts(memories_fts) VALUES('rebuild');
"""

#: One float32[384] embedding BLOB per memory row (sqlite-hybrid).
VECTORS_SQL = """
CREATE TABLE memory_vectors(
    id INTEGER PRIMARY KEY REFERENCES memories(id),
    embedding BLOB NOT NULL
);
"""

#: ``INSERT`` of one ``memories`` row: ``id`` then :data:`MEMORY_COLUMNS`.
INSERT_MEMORY_SQL = (
    f"INSERT INTO memories(id, {', '.join(MEMORY_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(MEMORY_COLUMNS) + 1))})"
)
#: ``INSERT`` of one ``memory_entities`` row.
INSERT_ENTITY_SQL = "INSERT INTO memory_entities(memory_id, entity_id) VALUES (?, ?)"
#: ``INSERT`` of one ``memory_vectors`` row.
INSERT_VECTOR_SQL = "INSERT INTO memory_vectors(id, embedding) VALUES (?, ?)"
