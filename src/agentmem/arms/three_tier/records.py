"""What the three-tier arm reports: compactions and ingest events.

Its assembled contexts are :class:`agentmem.arms.context.AssembledContext`.

Every ``latency_ms`` in these records is wall time measured with :func:`elapsed_ms`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Compaction:
    """One L2 node written by a rolling compaction.

    Attributes:
        node_id: the node's id in ``l2_nodes``.
        session_id: the session of every memory it covers.
        epoch: the node's number within its (scope, session) (0, 1, ...).
        memory_ids: covered memories, oldest first (they moved to L3).
        source_tokens: o200k tokens of the covered turns.
        summary_tokens: o200k tokens of the summary (``<= summary_tokens`` parameter).
        scope_id: the scope of every memory it covers (``None``: unscoped memories).
    """

    node_id: int
    session_id: str | None
    epoch: int
    memory_ids: tuple[str, ...]
    source_tokens: int
    summary_tokens: int
    scope_id: str | None = None


@dataclass
class TierEvent:
    """What one :meth:`~agentmem.arms.three_tier.ThreeTierArm.ingest_turn` did.

    Attributes:
        memory_id: the ingested turn.
        tokens: its o200k tokens.
        l1_tokens: L1 total tokens after the turn (always ``<= l1_max_tokens``).
        l1_turns: turns in L1 after the turn.
        compactions: L2 nodes written (empty when no compaction ran).
        moved_to_l3: memory ids moved from L1 to L3, oldest first.
        latency_ms: wall time per tier in milliseconds: ``"L1"`` (insert + accounting),
            ``"L2"`` (summarising + node writes + L1 deletes), ``"L3"`` (vector inserts;
            for :meth:`~agentmem.arms.three_tier.ThreeTierArm.ingest_turn` also the lookup
            that keeps ids unique across L1 and L3, so it is never 0 there).
    """

    memory_id: str
    tokens: int
    l1_tokens: int
    l1_turns: int
    compactions: list[Compaction] = field(default_factory=list)
    moved_to_l3: list[str] = field(default_factory=list)
    latency_ms: dict[str, float] = field(default_factory=dict)

    @property
    def compacted(self) -> bool:
        """Whether this turn triggered a compaction."""
        return bool(self.compactions)


def elapsed_ms(t0: float) -> float:
    """Milliseconds since ``t0`` (a :func:`time.perf_counter` value)."""
    return (time.perf_counter() - t0) * 1e3
