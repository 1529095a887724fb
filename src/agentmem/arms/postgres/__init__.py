"""PostgreSQL arms (family ``postgres``): ILIKE scoring, GIN tsvector, pgvector HNSW, hybrid.

Every arm keeps its store in one database (:mod:`agentmem.pg`) and shares the machinery
of :mod:`.base`: the schema (:mod:`.schema`), binary COPY bulk load (:mod:`.ingest`),
the one-transaction write path (:mod:`.remember`), bound SQL fragments
(:mod:`.queries`) and PostgreSQL's plans and sizes (:mod:`.catalog`). The arms:
:mod:`.text` (``pg-btree``, ``pg-gin``), :mod:`.hnsw` (``pg-hnsw``,
``pg-hnsw-iterative``), :mod:`.hybrid` (``pg-hybrid``).
"""

from agentmem.arms.postgres.hnsw import PgHnswArm, PgHnswIterativeArm
from agentmem.arms.postgres.hybrid import PgHybridArm
from agentmem.arms.postgres.queries import TS_RANK_NORMALIZATION, predicate_sql, tsquery_sql
from agentmem.arms.postgres.schema import BUILD_MAINTENANCE_WORK_MEM, MEMORY_COLUMNS, TS_CONFIG
from agentmem.arms.postgres.text import PgBtreeArm, PgGinArm

__all__ = [
    "BUILD_MAINTENANCE_WORK_MEM",
    "MEMORY_COLUMNS",
    "TS_CONFIG",
    "TS_RANK_NORMALIZATION",
    "PgBtreeArm",
    "PgGinArm",
    "PgHnswArm",
    "PgHnswIterativeArm",
    "PgHybridArm",
    "predicate_sql",
    "tsquery_sql",
]
