"""Remember of one memory: ``Arm.remember`` of one-row frames on a built store."""

from __future__ import annotations

import time

import numpy as np
import polars as pl
from tqdm import tqdm

from agentmem.arms.base import MEMORY_SCHEMA, Arm, Corpus, Embeddings
from agentmem.bench.errors import BenchError
from agentmem.bench.targets import REMEMBER_MAX_P50_MS, target_met
from agentmem.bench.timing import gc_paused

#: Corpus columns a remembered copy keeps: all but the id, the order, the supersession,
#: the token count (new for the copy) and the scope (the copies are unscoped).
REMEMBER_COLUMNS = tuple(
    c for c in MEMORY_SCHEMA if c not in {"memory_id", "seq", "superseded_by", "tokens", "scope_id"}
)


def remember_rows(
    corpus: Corpus, vectors: Embeddings, n: int, prefix: str = "bench-remember"
) -> tuple[pl.DataFrame, Embeddings]:
    """``n`` new memories for single-row remembers: corpus rows under fresh ids.

    Row ``i`` copies corpus memory ``i mod N`` (in ``seq`` order; ``N`` = corpus size):
    body, session, kind, fact, day, source, confidence, entities and form, with
    ``memory_id = f"{prefix}-{i:06d}"``, no ``seq`` (``remember`` gives one after every
    stored memory), no ``superseded_by`` and no ``tokens`` (counted by ``remember``).
    Its vector is that corpus memory's cached vector.

    Args:
        corpus: the bench corpus (at least one memory).
        vectors: its embeddings.
        n: rows wanted (>= 0).
        prefix: id prefix (must not clash with corpus ids).

    Returns:
        ``(frame, embeddings of the new ids)``.

    Raises:
        BenchError: on an empty corpus or ``n < 0``.
    """
    mem = corpus.memories.sort("seq")
    if mem.height == 0 or n < 0:
        raise BenchError(f"need a non-empty corpus and n >= 0 (corpus {mem.height}, n {n})")
    src = mem[[i % mem.height for i in range(n)]]
    ids = [f"{prefix}-{i:06d}" for i in range(n)]
    keep = [c for c in REMEMBER_COLUMNS if c in src.columns]
    frame = src.select(keep).with_columns(memory_id=pl.Series(ids, dtype=pl.String))
    mat = vectors.get(src["memory_id"].to_list()) if n else np.zeros((0, vectors.dim), np.float32)
    return frame.select("memory_id", *keep), Embeddings(ids, np.ascontiguousarray(mat))


def remember_benchmark(
    arm: Arm,
    corpus: Corpus,
    vectors: Embeddings,
    n: int = 200,
    warmup: int = 3,
    progress: bool = True,
) -> dict:
    """Time ``arm.remember`` of one memory, ``n`` times, on an open store.

    ``warmup`` untimed single-row remembers first, then ``n`` timed ones, each a one-row
    frame of :func:`remember_rows` (fresh ids, the corpus's cached vectors), with the
    garbage collector paused; the frames are cut before the clock starts. Afterwards
    ``arm.fetch`` of the timed ids checks that every one was stored.

    Args:
        arm: an open arm whose store holds ``corpus``.
        corpus: the memories it was built from.
        vectors: their embeddings.
        n: timed remembers (>= 1).
        warmup: untimed remembers first.
        progress: show a tqdm bar.

    Returns:
        ``family``, ``store_memories`` (before the first remember), ``remembers`` (n), ``warmup``,
        ``p50_ms``, ``p95_ms``, ``mean_ms``, ``max_ms`` (milliseconds per call), ``stored`` (timed
        ids that ``fetch`` returns), ``target`` (``"<= X ms"`` for a family of
        :data:`~agentmem.bench.targets.REMEMBER_MAX_P50_MS`, else ``None``) and ``met`` (``False``
        whenever a timed memory was not stored; ``None`` without a target).

    Raises:
        BenchError: when ``n < 1``.
        agentmem.arms.base.ArmError: when a remember or the fetch fails.
    """
    if n < 1:
        raise BenchError(f"remember benchmark needs n >= 1, got {n}")
    rows, vecs = remember_rows(corpus, vectors, warmup + n)
    frames = [rows.slice(i, 1) for i in range(rows.height)]
    for f in frames[:warmup]:
        arm.remember(f, vecs)
    times: list[int] = []
    clock = time.perf_counter_ns
    bar = tqdm(frames[warmup:], desc=f"{arm.name}: remember", disable=not progress, leave=False)
    with gc_paused():
        for f in bar:
            t0 = clock()
            arm.remember(f, vecs)
            times.append(clock() - t0)
    timed_ids = rows["memory_id"].to_list()[warmup:]
    stored = arm.fetch(timed_ids).height
    ms = np.asarray(times, dtype=np.float64) / 1e6
    family = str(type(arm).family)
    limit = REMEMBER_MAX_P50_MS.get(family)
    p50 = float(np.percentile(ms, 50))
    met = None if limit is None else target_met(p50, "<=", limit)
    return {
        "family": family,
        "store_memories": corpus.memories.height,
        "remembers": n,
        "warmup": warmup,
        "p50_ms": round(p50, 4),
        "p95_ms": round(float(np.percentile(ms, 95)), 4),
        "mean_ms": round(float(ms.mean()), 4),
        "max_ms": round(float(ms.max()), 4),
        "stored": stored,
        "target": None if limit is None else f"<= {limit:g} ms",
        "met": False if stored < n else met,
    }
