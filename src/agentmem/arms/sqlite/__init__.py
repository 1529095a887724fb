"""SQLite arms (family ``sqlite``): B-tree + LIKE, FTS5 bm25, and FTS5 + vector hybrid.

All three store one database file ``memory.db`` (WAL mode) under the store directory;
predicates are applied inside the SQL statement and every value is a bound parameter.
Schema, durability and the hybrid's vector branch: docs/arms/sqlite.md.

Modules: :mod:`~agentmem.arms.sqlite.schema` (DDL), :mod:`~agentmem.arms.sqlite.sql`
(predicate conditions, plan rendering), :mod:`~agentmem.arms.sqlite.connection`,
:mod:`~agentmem.arms.sqlite.rows` (rows written and read back),
:mod:`~agentmem.arms.sqlite.store` (the shared arm) and one module per arm
(:mod:`~agentmem.arms.sqlite.fts`, :mod:`~agentmem.arms.sqlite.btree`,
:mod:`~agentmem.arms.sqlite.hybrid`).
"""

from agentmem.arms.sqlite.btree import SqliteBtreeArm
from agentmem.arms.sqlite.connection import BUSY_TIMEOUT_MS
from agentmem.arms.sqlite.fts import SqliteFtsArm
from agentmem.arms.sqlite.gated import SqliteGatedArm
from agentmem.arms.sqlite.hybrid import SqliteHybridArm
from agentmem.arms.sqlite.schema import DB_NAME
from agentmem.arms.sqlite.sql import format_plan, predicate_sql
from agentmem.arms.sqlite.store import SqliteArm

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DB_NAME",
    "SqliteArm",
    "SqliteBtreeArm",
    "SqliteFtsArm",
    "SqliteGatedArm",
    "SqliteHybridArm",
    "format_plan",
    "predicate_sql",
]
