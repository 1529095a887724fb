"""The six-memory hand-made corpus (``TINY_ROWS``) with deterministic fake 384-d vectors.

Arm unit tests compute their expectations by hand on it; the ``tiny`` fixture in
conftest.py returns :func:`make_tiny`.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl

from agentmem.arms.base import Corpus, Embeddings, Predicate, Query


def fake_vector(text: str, dim: int = 384) -> np.ndarray:
    """Deterministic unit vector from the sha256 of ``text`` (bag of hashed words)."""
    v = np.zeros(dim, dtype=np.float32)
    for w in text.lower().split():
        h = int.from_bytes(hashlib.sha256(w.encode()).digest()[:8], "little")
        v[h % dim] += 1.0
    n = np.linalg.norm(v)
    if n == 0:
        v[0] = 1.0
        n = 1.0
    return v / n


TINY_ROWS = [
    # memory_id, session, turn, day, kind, body, fact, superseded_by, entities
    (
        "M1",
        "S1",
        0,
        10,
        "semantic",
        "CFG-799 sets the timeout of SVC-5345 to 30s.",
        "F1",
        "M5",
        ["CFG-799", "SVC-5345"],
    ),
    (
        "M2",
        "S1",
        1,
        12,
        "semantic",
        "The amber ledger gateway waits half a minute per call.",
        "F1",
        "M5",
        ["CFG-799", "SVC-5345"],
    ),
    (
        "M3",
        "S1",
        2,
        15,
        "episodic",
        "Someone asked about CFG-799 in chat; nothing decided.",
        None,
        None,
        ["CFG-799"],
    ),
    (
        "M4",
        "S2",
        0,
        200,
        "episodic",
        "INC-2356: SVC-5345 outage caused by a full disk.",
        "F2",
        None,
        ["INC-2356", "SVC-5345"],
    ),
    (
        "M5",
        "S3",
        0,
        320,
        "semantic",
        "Correction: CFG-799 now sets the timeout of SVC-5345 to 45s.",
        "F1",
        None,
        ["CFG-799", "SVC-5345"],
    ),
    (
        "M6",
        "S3",
        1,
        320,
        "procedural",
        "RUN-481: to rotate keys on SVC-77, drain traffic first.",
        "F3",
        None,
        ["RUN-481", "SVC-77"],
    ),
]


def fake_query(
    text: str = "",
    predicate: Predicate | None = None,
    wants_count: bool = False,
    *,
    vec_of: str | None = None,
) -> Query:
    """Query ``"q"`` carrying ``text``; its embedding is the fake vector of ``vec_of``
    (default: of ``text``, as the tiny corpus embeds its bodies)."""
    vec = fake_vector(vec_of if vec_of is not None else text)
    return Query("q", text, vec, predicate, wants_count)


def make_tiny() -> tuple[Corpus, Embeddings]:
    """Build the six-memory corpus above and fake 384-d vectors for its bodies."""
    cols = list(zip(*TINY_ROWS, strict=True))
    memories = pl.DataFrame(
        {
            "memory_id": list(cols[0]),
            "session_id": list(cols[1]),
            "turn_no": list(cols[2]),
            "seq": list(range(len(TINY_ROWS))),
            "kind": list(cols[4]),
            "body": list(cols[5]),
            "fact_id": list(cols[6]),
            "created_day": list(cols[3]),
            "source": ["user_message"] * len(TINY_ROWS),
            "confidence": [0.9] * len(TINY_ROWS),
            "superseded_by": list(cols[7]),
            "tokens": [len(b.split()) for b in cols[5]],
            "entity_ids": [list(e) for e in cols[8]],
        },
        schema_overrides={
            "turn_no": pl.Int32,
            "created_day": pl.Int32,
            "seq": pl.Int64,
            "tokens": pl.Int32,
        },
    )
    ids = memories["memory_id"].to_list()
    vecs = np.stack([fake_vector(b) for b in memories["body"].to_list()])
    return Corpus(memories=memories), Embeddings(ids=ids, matrix=vecs)


def make_tiny_with_adr() -> tuple[Corpus, Embeddings]:
    """Tiny plus M7 mentioning ADR-297 (and a near-miss M8 with ADR-298)."""
    corpus, vectors = make_tiny()
    extra = pl.DataFrame(
        {
            "memory_id": ["M7", "M8"],
            "session_id": ["S4", "S4"],
            "turn_no": [0, 1],
            "seq": [6, 7],
            "kind": ["semantic", "semantic"],
            "body": [
                "ADR-297 decided: memories live in SQLite with WAL.",
                "ADR-298 is about logging.",
            ],
            "fact_id": ["F4", "F5"],
            "created_day": [400, 401],
            "source": ["user_message"] * 2,
            "confidence": [0.9] * 2,
            "superseded_by": [None, None],
            "tokens": [8, 4],
            "entity_ids": [["ADR-297"], ["ADR-298"]],
        },
        schema=corpus.memories.schema,
    )
    corpus.memories = pl.concat([corpus.memories, extra])
    ids = corpus.memories["memory_id"].to_list()
    mat = np.stack([fake_vector(b) for b in corpus.memories["body"].to_list()])
    return corpus, Embeddings(ids=ids, matrix=mat)
