"""Wall-clock bounds for the timings an arm reports about itself."""

from __future__ import annotations

import time
from pathlib import Path

from agentmem.arms.base import Arm, BuildStats, Corpus, Embeddings


def build_timed(
    arm: Arm, corpus: Corpus, vectors: Embeddings | None, store: Path
) -> tuple[BuildStats, float]:
    """``arm.build(corpus, vectors, store)`` and the wall time of that call in ms.

    The arm's ``ingest_ms + index_ms`` time parts of the call, so they cannot exceed it.
    """
    t0 = time.perf_counter()
    stats = arm.build(corpus, vectors, store)
    return stats, (time.perf_counter() - t0) * 1e3
