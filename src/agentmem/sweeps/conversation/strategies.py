"""Context strategies driven turn by turn: the append baseline and the registered arms."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from agentmem.arms.base import VECTOR_DIM, Arm, Corpus, Embeddings, Query
from agentmem.arms.context import TIERS, ContextAssembler
from agentmem.arms.factory import make_arm
from agentmem.summarise import split_sentences
from agentmem.sweeps.conversation.records import Conversation

#: The baseline strategy (no store: the whole history is the context); always first.
APPEND = "append"
#: Sweep parameters handed to an arm whose constructor takes a parameter of that name.
SWEEP_ARM_PARAMS: tuple[str, ...] = ("l1_max_tokens", "summariser")


@dataclass
class TurnContext:
    """What a strategy put into the context for one turn."""

    ids: set[str]
    tokens: int
    latency_ms: float
    remember_ms: float | None = None
    tier: dict[str, Any] | None = None


class Strategy(Protocol):
    """A context strategy driven turn by turn: begin a conversation, answer each turn, close."""

    name: str

    def begin(self, conv: Conversation) -> None:
        """Start conversation ``conv`` with an empty memory."""
        ...

    def turn(self, t: int, query: Query) -> TurnContext:
        """Write turn ``t``'s memories (if the strategy stores any), then give its context."""
        ...

    def close(self) -> None:
        """Release the strategy's store; safe to call twice."""
        ...


class AppendStrategy:
    """Infinite append: the whole history is the context."""

    name = APPEND

    def begin(self, conv: Conversation) -> None:
        """Start ``conv``: the context of turn t is every memory up to its end."""
        self.c = conv
        self.cum = np.concatenate([[0], np.cumsum(conv.tokens)])

    def turn(self, t: int, query: Query) -> TurnContext:
        """The whole history up to the end of turn ``t`` (``query`` is not read)."""
        end = self.c.turns[t - 1].stop
        t0 = time.perf_counter()
        prompt = "\n".join(self.c.bodies[:end])
        ms = (time.perf_counter() - t0) * 1e3
        del prompt
        return TurnContext(set(self.c.ids[:end]), int(self.cum[end]), ms)

    def close(self) -> None:
        """Nothing to release."""


class ArmStrategy:
    """A registered arm: remember every turn; recall by ``query`` or ``assemble_context``."""

    def __init__(
        self, name: str, make: Callable[[], Arm], k: int, store_dir: Path, corpus: Corpus
    ) -> None:
        self.name = name
        self.make = make
        self.arm: Arm | None = None
        self.k = k
        self.store_dir = store_dir
        self.empty = Corpus(corpus.memories.clear(), corpus.sessions, corpus.facts, corpus.entities)

    def begin(self, conv: Conversation) -> None:
        """Build a fresh, empty store for ``conv`` (replacing the last conversation's)."""
        self.c = conv
        self.pos = {m: i for i, m in enumerate(conv.ids)}
        self.close()
        self.arm = self.make()
        self.assembles = isinstance(self.arm, ContextAssembler)
        none = Embeddings([], np.zeros((0, VECTOR_DIM), dtype=np.float32))
        self.arm.build(self.empty, none, self.store_dir)
        if self.assembles:
            self.sentences = {
                m: split_sentences(b) for m, b in zip(conv.ids, conv.bodies, strict=True)
            }

    def _remember(self, t: int) -> float:
        cur = self.c.turns[t - 1]
        rows = self.c.frame.slice(cur.start, len(cur))
        t0 = time.perf_counter()
        self.arm.remember(rows, self.c.embeddings)
        return (time.perf_counter() - t0) * 1e3

    def turn(self, t: int, query: Query) -> TurnContext:
        """Remember turn ``t`` through the arm, then recall (or assemble) its context."""
        if self.assembles:
            remember_ms = self._remember(t)
            ctx = self._assemble(t, query)
            ctx.remember_ms = remember_ms
            return ctx
        cur = self.c.turns[t - 1]
        t0 = time.perf_counter()
        picked: list[int] = []
        if cur.start and self.k:
            res = self.arm.query(query, self.k)
            picked = [self.pos[m] for m in res.memory_ids[: self.k] if m in self.pos]
        pos = picked + list(cur)
        prompt = "\n".join(self.c.bodies[i] for i in pos)
        ms = (time.perf_counter() - t0) * 1e3
        del prompt
        remember_ms = self._remember(t)
        ids = {self.c.ids[i] for i in pos}
        return TurnContext(ids, int(self.c.tokens[pos].sum()), ms, remember_ms)

    def _assemble(self, t: int, query: Query) -> TurnContext:
        t0 = time.perf_counter()
        ctx = self.arm.assemble_context(query.text, query.embedding, self.k)  # type: ignore[attr-defined]
        ms = (time.perf_counter() - t0) * 1e3
        by_tier: dict[str, set[str]] = {tier: set() for tier in TIERS}
        for it in ctx.items:
            if it.tier == "L2":
                by_tier["L2"].update(
                    m for m in it.memory_ids if any(s in it.text for s in self.sentences.get(m, ()))
                )
            else:
                by_tier[it.tier].update(it.memory_ids)
        ids = set().union(*by_tier.values())
        probe = self.c.probes.get(t)
        hit_tiers = (
            " ".join(tier for tier in TIERS if by_tier[tier] & probe.gold) if probe else None
        )
        tier = {
            "l1_tokens": ctx.tokens["L1"],
            "l2_tokens": ctx.tokens["L2"],
            "l3_tokens": ctx.tokens["L3"],
            "l1_ms": ctx.latency_ms["L1"],
            "l2_ms": ctx.latency_ms["L2"],
            "l3_ms": ctx.latency_ms["L3"],
            "hit_tiers": hit_tiers,
        }
        return TurnContext(ids, ctx.total_tokens, ms, tier=tier)

    def close(self) -> None:
        """Close the arm's store; safe to call twice."""
        if self.arm is not None:
            self.arm.close()
            self.arm = None


def make_conversation_arm(
    name: str, params: Mapping[str, Any] | None, sweep_params: Mapping[str, Any]
) -> Arm:
    """Instantiate registered arm ``name`` for the sweep.

    Args:
        name: an ``agentmem.arms.ARMS`` name.
        params: its constructor parameters (config ``arm_params``).
        sweep_params: the sweep's :data:`SWEEP_ARM_PARAMS` values; each is passed when the
            arm's constructor takes a parameter of that name, overriding ``params``.

    Raises:
        ValueError: on an unknown arm or parameters its constructor refuses.
    """
    try:
        return make_arm(name, params, optional=sweep_params)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    except (TypeError, ValueError) as exc:
        given = {**dict(params or {}), **dict(sweep_params)}
        raise ValueError(f"{name}: bad parameters {given!r}: {exc}") from None
