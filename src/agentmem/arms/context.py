"""The context-assembly protocol: an arm that builds a turn's context itself.

Beside the arm contract (:mod:`agentmem.arms.base`): an arm that also implements
:class:`ContextAssembler` hands the conversation sweep (docs/experiments/conversation.md)
its own context for a turn, in tiers (working memory L1, summaries L2, recall L3), instead
of the ids of :meth:`~agentmem.arms.base.Arm.query`. The three-tier arm is one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

#: Tier labels used in context items, token and latency dicts.
TIERS: tuple[str, str, str] = ("L1", "L2", "L3")


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
    """Result of :meth:`ContextAssembler.assemble_context` (a 3-tuple).

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


@runtime_checkable
class ContextAssembler(Protocol):
    """An arm that assembles a turn's context itself (working memory + summaries + recall).

    The conversation sweep then uses ``assemble_context`` instead of ``query`` for the
    context and records its tiers.
    """

    def assemble_context(self, query_text: str, query_vec: Any, k: int = 5) -> AssembledContext:
        """Return the context for a turn: items per tier L1, L2, L3, tokens and ms per tier."""
        ...
