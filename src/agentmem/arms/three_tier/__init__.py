"""The ``three-tier`` arm (family ``tiered``): the seed's three-tier agent memory, every tier real.

L1 working memory (recent turns in SQLite, capped in o200k tokens), L2 episodic summary
nodes written by rolling compaction (SQLite, with provenance), L3 semantic vectors
(PostgreSQL + pgvector) holding exactly the memories that have left L1. The tiers, the
order of writes across the two engines and the ways to drive the arm are described in
``docs/arms/three-tier.md``.

Modules: :mod:`~agentmem.arms.three_tier.schema` (layout), ``records`` (returned
records), ``store`` (connections, accounting), ``compaction``, ``ingest``, ``remember``,
``retrieval``, ``context`` (the arm's methods by concern) and ``arm``
(:class:`ThreeTierArm`).
"""

from agentmem.arms.context import TIERS, AssembledContext, ContextItem
from agentmem.arms.three_tier.arm import ThreeTierArm
from agentmem.arms.three_tier.records import (
    Compaction,
    TierEvent,
)
from agentmem.arms.three_tier.retrieval import rrf_fuse
from agentmem.arms.three_tier.schema import DB_NAME, LAYOUT_VERSION

__all__ = [
    "DB_NAME",
    "LAYOUT_VERSION",
    "TIERS",
    "AssembledContext",
    "Compaction",
    "ContextItem",
    "ThreeTierArm",
    "TierEvent",
    "rrf_fuse",
]
