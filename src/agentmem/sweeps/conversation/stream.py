"""A simulated conversation: a stream of corpus memories cut into turns.

How the stream is picked (``window`` or ``topics``): docs/experiments/conversation.md.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import polars as pl

from agentmem.arms.base import MEMORY_SCHEMA, SUPERSEDES

#: Ways to pick a conversation's memories (docs/experiments/conversation.md).
SAMPLINGS: tuple[str, ...] = ("window", "topics")


def window_stream(memories: pl.DataFrame, n: int, rng: random.Random) -> pl.DataFrame:
    """Return ``n`` consecutive memories starting at a random session start (seq order)."""
    mem = memories.sort("seq")
    if mem.height < n:
        raise ValueError(f"the corpus has {mem.height} memories; a conversation needs {n}")
    sid = mem["session_id"].to_list()
    starts = [i for i in range(mem.height - n + 1) if i == 0 or sid[i] != sid[i - 1]]
    return mem.slice(rng.choice(starts), n)


def topic_stream(
    memories: pl.DataFrame,
    n: int,
    rng: random.Random,
    probeable: set[str],
    subject_of: Mapping[str, str],
) -> pl.DataFrame:
    """Return the first ``n`` memories (seq order) of randomly chosen facts and their distractors.

    Facts are taken alternately from a shuffled list of probe-able facts and a shuffled
    list of the others; each brings all its memories and the fact-less memories whose
    ``entity_ids`` name its subject; facts are added until ``n`` memories are selected.

    Raises:
        ValueError: when all facts together give fewer than ``n`` memories.
    """
    mem = memories.sort("seq")
    fact = mem["fact_id"].to_list()
    ents = mem["entity_ids"].to_list()
    by_fact: dict[str, list[int]] = {}
    by_entity: dict[str, list[int]] = {}
    for i, (f, es) in enumerate(zip(fact, ents, strict=True)):
        if f is not None:
            by_fact.setdefault(f, []).append(i)
        else:
            for e in es or []:
                by_entity.setdefault(e, []).append(i)
    with_q = sorted(f for f in by_fact if f in probeable)
    without = sorted(f for f in by_fact if f not in probeable)
    rng.shuffle(with_q)
    rng.shuffle(without)
    order: list[str] = []
    for i in range(max(len(with_q), len(without))):
        order += [x[i] for x in (with_q, without) if i < len(x)]
    chosen: set[int] = set()
    for f in order:
        if len(chosen) >= n:
            break
        chosen.update(by_fact[f])
        chosen.update(by_entity.get(subject_of.get(f, ""), []))
    if len(chosen) < n:
        raise ValueError(
            f"the corpus's facts give {len(chosen)} memories; a conversation needs {n}"
        )
    return mem[sorted(chosen)[:n]]


def remember_frame(stream: pl.DataFrame, turn_of: Sequence[int]) -> pl.DataFrame:
    """The stream's rows as :meth:`~agentmem.arms.base.Arm.remember` takes them.

    Keeps the :data:`~agentmem.arms.base.MEMORY_SCHEMA` columns the stream has, clears
    ``superseded_by`` and adds :data:`~agentmem.arms.base.SUPERSEDES`: for a memory that
    the corpus names as the ``superseded_by`` of earlier stream memories, those of them
    stated in an earlier turn (a memory's correction within its own turn is left out),
    else null.

    Args:
        stream: the conversation's memory rows in stream order (corpus columns).
        turn_of: 1-based turn of each row.

    Returns:
        One row per stream row, same order.
    """
    ids = stream["memory_id"].to_list()
    turn_by_id = dict(zip(ids, turn_of, strict=True))
    olds: dict[str, list[str]] = {}
    for old, new in zip(ids, stream["superseded_by"].to_list(), strict=True):
        if new in turn_by_id and turn_by_id[old] < turn_by_id[new]:
            olds.setdefault(new, []).append(old)
    cols = [c for c in MEMORY_SCHEMA if c in stream.columns]
    return stream.select(cols).with_columns(
        superseded_by=pl.lit(None, dtype=pl.String),
        **{SUPERSEDES: pl.Series([olds.get(m) for m in ids], dtype=pl.List(pl.String))},
    )
