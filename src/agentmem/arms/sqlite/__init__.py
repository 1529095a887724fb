"""SQLite arms (family ``sqlite``): B-tree + LIKE, FTS5 bm25, and FTS5 + vector hybrid.

All three store one database file ``memory.db`` (WAL mode) under the store directory;
predicates are applied inside the SQL statement and every value is a bound parameter.
Schema, durability and the hybrid's vector branch: docs/arms/sqlite.md.

The shared SQL layer is :mod:`agentmem.sql.sqlite` (DDL, predicate conditions, plan
rendering, connection). Modules here: :mod:`~agentmem.arms.sqlite.rows` (rows written
and read back), :mod:`~agentmem.arms.sqlite.store` (the shared arm) and one module per arm
(:mod:`~agentmem.arms.sqlite.fts`, :mod:`~agentmem.arms.sqlite.btree`,
:mod:`~agentmem.arms.sqlite.hybrid`).
"""

from agentmem.arms.sqlite.btree import SqliteBtreeArm
from agentmem.arms.sqlite.fts import SqliteFtsArm
from agentmem.arms.sqlite.gated import SqliteGatedArm
from agentmem.arms.sqlite.hybrid import SqliteHybridArm
from agentmem.arms.sqlite.store import SqliteArm
from agentmem.sql.sqlite.connection import BUSY_TIMEOUT_MS
from agentmem.sql.sqlite.schema import DB_NAME
from agentmem.sql.sqlite.statements import format_plan, predicate_sql

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
