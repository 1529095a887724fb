"""The conversation sweep's records: conversations, probe questions and scheduled probes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from agentmem.arms.base import Embeddings


@dataclass(frozen=True)
class ProbeQuestion:
    """A corpus query usable as a probe.

    Attributes:
        query_id: id in ``queries.parquet``.
        query_class: its class (one of :data:`PROBE_CLASSES`).
        text: the question.
        vector: its stored embedding, float32 ``(384,)``.
        fact_id: the one fact all its qrels belong to.
    """

    query_id: str
    query_class: str
    text: str
    vector: np.ndarray
    fact_id: str


@dataclass(frozen=True)
class Probe:
    """A probe scheduled at one turn of a conversation.

    Attributes:
        question: the corpus query asked.
        gold: the memory ids that answer it at that turn (the correction once it was
            stated, else the fact's earlier renderings).
        row: its row of the probe table
            (:data:`~agentmem.sweeps.conversation.schemas.PROBE_SCHEMA`).
    """

    question: ProbeQuestion
    gold: frozenset[str]
    row: dict[str, Any]


@dataclass
class Conversation:
    """One simulated conversation: its memory stream cut into turns, and its probes."""

    index: int
    rows: list[dict[str, Any]]  # memory rows in stream order
    ids: list[str]
    bodies: list[str]
    tokens: np.ndarray  # int64 (n,)
    vectors: np.ndarray  # float32 (n, 384)
    turn_of: list[int]  # 1-based turn of each stream position
    turns: list[range]  # stream positions of turn t at index t - 1
    frame: pl.DataFrame  # the rows as remember takes them (remember_frame)
    embeddings: Embeddings  # the stream's vectors keyed by memory id
    probes: dict[int, Probe] = field(default_factory=dict)  # turn -> its probe
