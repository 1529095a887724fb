"""The ``sqlite-graph`` arm (family ``graph``): the seed "graph cognitive memory" in SQLite.

Typed memory nodes, entity nodes and typed edges in ``graph.db``; retrieval fuses FTS5,
vector and one-hop graph branches by RRF and replaces superseded nodes by their
successors; confidence decays (Ebbinghaus-style) and weak nodes are pruned; one writer
thread serialises every write. The schema, the edge rules, retrieval, decay and the
writer queue are described in ``docs/arms/sqlite-graph.md``.

Modules: ``schema`` (DDL), ``confidence`` (decay formula and constants), ``edges``,
``connections`` (writer thread, reader), ``remember``, ``decay``, ``retrieval`` (the
arm's methods by concern) and ``arm`` (:class:`SqliteGraphArm`).
"""

from agentmem.arms.graph.arm import SqliteGraphArm
from agentmem.arms.graph.confidence import (
    CORRECTED_CONFIDENCE,
    CORRECTED_DECAY_RATE,
    DECAY_EXPONENT,
    DECAY_RATES,
    DEFAULT_CONFIDENCE,
    PRUNE_BELOW,
    decayed_confidence,
)
from agentmem.arms.graph.retrieval import HIDE_MODES
from agentmem.arms.graph.schema import DB_NAME, EDGE_TYPES, NODE_TYPES, node_type_of

__all__ = [
    "CORRECTED_CONFIDENCE",
    "CORRECTED_DECAY_RATE",
    "DB_NAME",
    "DECAY_EXPONENT",
    "DECAY_RATES",
    "DEFAULT_CONFIDENCE",
    "EDGE_TYPES",
    "HIDE_MODES",
    "NODE_TYPES",
    "PRUNE_BELOW",
    "SqliteGraphArm",
    "decayed_confidence",
    "node_type_of",
]
