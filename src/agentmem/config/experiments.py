"""Sections ``sweeps`` and ``seed_systems``: the sweeps and the seed systems' experiments."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from agentmem.config.base import StrictModel


class SweepsConfig(StrictModel):
    """Post-filter overfetch and token-budget sweeps."""

    overfetch: list[int] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128],
        min_length=1,
        description="candidate-list factors (multiples of k) of the arms that declare a "
        "candidate parameter (file-vec-meta: overfetch; an HNSW ef: k * factor)",
    )
    budget_k: list[int] = Field(
        default_factory=lambda: [1, 3, 5, 10, 20, 50],
        min_length=1,
        description="result-list lengths of the token-budget sweep",
    )
    budget_products: bool = Field(
        False,
        description="run the token-budget sweep on the product arms too (false: the arms "
        "this project builds; config/full.yaml sets true)",
    )

    @model_validator(mode="after")
    def _positive(self) -> SweepsConfig:
        if min(self.overfetch) < 1 or min(self.budget_k) < 1:
            raise ValueError("overfetch factors and budget k values must be >= 1")
        return self


# The sweep's only defaults: agentmem.sweeps.conversation.run_conversations takes every value.
class ConversationConfig(StrictModel):
    """The long-conversation experiment: arms driven turn by turn, against appending all."""

    conversations: int = Field(3, ge=1, le=100)
    turns: int = Field(100, ge=10, description="turns per conversation (the seed: 100)")
    memories_per_turn: int = Field(
        25, ge=1, description="memories per turn (25 ~ one chat exchange, ~565 tokens)"
    )
    probes_every: int = Field(2, ge=1, description="a probe question every N turns")
    min_gap: int = Field(20, ge=1, description="probe facts first stated >= N turns earlier")
    l1_max_tokens: int = Field(
        3000, ge=100, description="working-memory (L1) cap of arms that take one (the seed: 3,000)"
    )
    k: int = Field(5, ge=1, description="memories recalled per turn")
    seed: int = Field(0, description="seeds the choice of each conversation and its probes")
    sampling: Literal["window", "topics"] = Field(
        "window",
        description="how a conversation's memories are picked: consecutive sessions "
        "(window) or the memories of random facts and their distractors (topics)",
    )
    summariser: Literal["extractive", "openai"] = Field(
        "extractive",
        description="summariser of arms that take one (extractive: deterministic, offline)",
    )
    arms: list[str] = Field(
        default_factory=list,
        description="arms driven through remember and query beside the append baseline, in "
        "this order; an arm not in `arms` is left out",
    )


class DecayConfig(StrictModel):
    """Graph-memory forgetting over simulated time (sqlite-graph's decay)."""

    step_days: int = Field(7, ge=1, le=365, description="a decay pass every N simulated days")
    max_day: int = Field(365, ge=1, le=3650)
    k: int = Field(10, ge=1, description="results per evaluated query")

    def days(self) -> range:
        """The simulated days a decay pass runs on: 0, ``step_days``, ... up to ``max_day``."""
        return range(0, self.max_day + 1, self.step_days)


class SeedSystemsConfig(StrictModel):
    """The seed systems' claims (docs/STUDY.md §5)."""

    conversation: ConversationConfig = ConversationConfig()
    decay: DecayConfig = DecayConfig()
