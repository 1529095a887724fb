"""What the three-tier arm reports: compactions, ingest events and assembled contexts.

Every ``latency_ms`` in these records is wall time measured with :func:`elapsed_ms`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple


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


@dataclass(frozen=True)
class ContextItem:
    """One piece of assembled context.

    Attributes:
        tier: ``"L1"`` (working-memory turn), ``"L2"`` (summary node) or ``"L3"``
            (vector-recalled memory).
        ref: the memory id (L1, L3) or ``"L2:<node_id>"``.
        text: the text that goes into the prompt (turn body or summary).
        tokens: o200k tokens of ``text``.
        memory_ids: the memories behind the item: ``(memory_id,)`` for L1/L3, the covered
            ids (provenance) for L2 — a summary covers them but need not quote them all.
        rank: position within its tier's selection (0 = first).
        keyword_hit: for L1, whether FTS5 matched the turn; for L2, whether FTS5 matched
            the summary (``False`` for nodes added by recency); always ``False`` for L3.
    """

    tier: str
    ref: str
    text: str
    tokens: int
    memory_ids: tuple[str, ...]
    rank: int
    keyword_hit: bool = False


class AssembledContext(NamedTuple):
    """Result of :meth:`~agentmem.arms.three_tier.ThreeTierArm.assemble_context` (a 3-tuple).

    Attributes:
        items: context items, tier order L1 (chronological), L2, L3 (best first).
        tokens: o200k tokens per tier ``{"L1": ..., "L2": ..., "L3": ...}`` (sum of the
            items' ``tokens``).
        latency_ms: wall time per tier in milliseconds (each tier's SQL round trips).
    """

    items: list[ContextItem]
    tokens: dict[str, int]
    latency_ms: dict[str, float]

    @property
    def total_tokens(self) -> int:
        """Sum of ``tokens`` over the tiers."""
        return sum(self.tokens.values())

    def memory_ids(self) -> set[str]:
        """Every memory id behind the context (L2 provenance included)."""
        return {m for it in self.items for m in it.memory_ids}


def elapsed_ms(t0: float) -> float:
    """Milliseconds since ``t0`` (a :func:`time.perf_counter` value)."""
    return (time.perf_counter() - t0) * 1e3
