"""PostgreSQL arms (family ``postgres``): ILIKE scoring, GIN tsvector, pgvector HNSW, hybrid.

Every arm keeps its store in one database (:mod:`agentmem.pg`) and shares the machinery
of :mod:`.base`: binary COPY bulk load (:mod:`.ingest`) and the one-transaction write
path (:mod:`.remember`), over the shared SQL layer :mod:`agentmem.sql.postgres` (the
schema, bound SQL fragments, PostgreSQL's plans and sizes). The arms:
:mod:`.text` (``pg-btree``, ``pg-gin``), :mod:`.hnsw` (``pg-hnsw``,
``pg-hnsw-iterative``), :mod:`.hybrid` (``pg-hybrid``).

Scope (``Query.scope``, whose memory): ``memories.scope_id`` with a partial B-tree index
(``WHERE scope_id IS NOT NULL``), AND-ed with the predicate, as a bound value, in the
``WHERE`` of every statement a query runs (both branches of ``pg-hybrid``, and the
count). Where that ``WHERE`` acts follows the access path: inside the B-tree / GIN search
(``pg-btree``, ``pg-gin``, the GIN branch), or on the rows pgvector's HNSW index scan
yields (``pg-hnsw``, the HNSW branch): a post-filter of ~``hnsw.ef_search`` candidates,
so a selective scope can return fewer than ``k`` ids at the default ``ef_search = 40``;
``pg-hnsw-iterative``'s iterative scan keeps scanning until ``k`` rows of the scope pass.
The planner may instead read the scope's index and sort exact distances when it
estimates the scope small; EXPLAIN shows which path ran.

``k`` above ``hnsw.ef_search``: the HNSW index scan yields at most about ``ef_search``
rows (40 by default) whatever the filter, so ``pg-hnsw`` answers an unfiltered ``k = 50``
with ~40 ids and ``pg-hybrid``'s HNSW branch stops there too (its GIN branch does not);
``pg-hnsw-iterative`` keeps scanning and fills. The fill columns of the score tables
(:func:`agentmem.metrics.fill_rate`) show it; docs/arms/postgres.md has the measurements.
"""

from agentmem.arms.postgres.hnsw import PgHnswArm, PgHnswIterativeArm
from agentmem.arms.postgres.hybrid import PgHybridArm
from agentmem.arms.postgres.text import PgBtreeArm, PgGinArm
from agentmem.sql.postgres.queries import TS_RANK_NORMALIZATION, predicate_sql, tsquery_sql
from agentmem.sql.postgres.schema import BUILD_MAINTENANCE_WORK_MEM, MEMORY_COLUMNS, TS_CONFIG

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
