"""Ingest throughput: an arm's build against its raw bulk path on the same rows."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agentmem.arms.base import Arm, Corpus, Embeddings, RawIngest
from agentmem.bench.errors import BenchError
from agentmem.bench.harness import INGEST_HOOKS, no_hooks_reason
from agentmem.bench.raw import describe_raw, raw_ingest_ms
from agentmem.bench.targets import INGEST_MIN_RATIO, target_met
from agentmem.bench.timing import gc_paused, throughput_stats


def wipe_dir(path: Path) -> None:
    """Remove ``path`` (a directory tree) if it exists, then create it empty."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)


def ingest_benchmark(
    arm_name: str,
    params: dict[str, Any] | None,
    corpus: Corpus,
    vectors: Embeddings,
    store_dir: Path,
    scratch: Path,
    rounds: int = 5,
    progress: bool = True,
) -> tuple[dict, Arm]:
    """Build ``arm_name`` ``rounds`` times, each followed by one raw bulk write of its rows.

    ``store_dir`` is wiped once; each round builds a fresh arm instance in it (an arm's ``build``
    replaces its store: files are recreated, the PostgreSQL database dropped and created again) and
    then times the arm's raw path (its :meth:`~agentmem.arms.base.BenchHooks.raw_ingest`) on the
    same rows. For arms with PostgreSQL tables one extra handle keeps the embedded server up across
    rounds, so no round pays for a server restart. Both sides run with the garbage collector paused.
    The last build is left open and returned, for :func:`~agentmem.bench.harness.harness_overhead`.

    Returns:
        ``(record, open arm)``; the record has :func:`~agentmem.bench.timing.throughput_stats`, the
        per-round times, the basis and the target (``ratio`` is ``None`` when the raw path failed).

    Raises:
        BenchError: when the arm declares no raw bulk-load path
            (:func:`~agentmem.bench.harness.no_hooks_reason`).
        agentmem.arms.base.ArmError: when a build fails (the arm is closed first).
    """
    from agentmem.arms.factory import make_arm
    from agentmem.pg import PgError, connect_store, drop_store

    arm: Arm | None = make_arm(arm_name, params)
    reason = no_hooks_reason(arm, INGEST_HOOKS)
    if reason is not None:
        arm.close()
        raise BenchError(reason)
    spec: RawIngest = arm.raw_ingest()  # type: ignore[attr-defined]
    arm_ms: list[float] = []
    raw_ms: list[float] = []
    build_ms: list[dict[str, float]] = []
    raw_error: str | None = None
    keeper = None
    keep_name = f"{arm_name}-keep"
    wipe_dir(store_dir)
    try:
        bar = tqdm(range(rounds), desc=f"{arm_name}: ingest", disable=not progress, leave=False)
        for r in bar:
            if arm is None:
                arm = make_arm(arm_name, params)
            try:
                with gc_paused():
                    stats = arm.build(corpus, vectors, store_dir)
            except BaseException:
                arm.close()
                raise
            if keeper is None and spec.pg_tables and rounds > 1:
                with contextlib.suppress(PgError):
                    keeper = connect_store(store_dir, keep_name, create=True)
            build_ms.append(
                {"ingest_ms": round(stats.ingest_ms, 3), "index_ms": round(stats.index_ms, 3)}
            )
            both = spec.basis == "ingest+index"
            arm_ms.append(stats.ingest_ms + (stats.index_ms if both else 0.0))
            if raw_error is None:
                try:
                    with gc_paused():
                        raw_ms.append(
                            raw_ingest_ms(spec, arm, corpus, vectors, store_dir, scratch / f"r{r}")
                        )
                except Exception as exc:  # report, never crash the run
                    raw_error = f"{type(exc).__name__}: {exc}"
            shutil.rmtree(scratch / f"r{r}", ignore_errors=True)
            if r < rounds - 1:
                arm.close()
                arm = None
    finally:
        if keeper is not None:
            keeper.close()
            with contextlib.suppress(PgError):
                drop_store(store_dir, keep_name)
    assert arm is not None
    n = corpus.memories.height
    rec: dict[str, Any] = {"memories": n, "rounds": rounds}
    rec["basis"] = spec.basis
    rec["raw_path"] = describe_raw(spec)
    rec["beyond_raw"] = spec.beyond
    rec.update(throughput_stats(n, arm_ms, raw_ms if raw_error is None else []))
    if raw_error is not None:
        rec["ratio"] = None
        rec["raw_error"] = raw_error
    rec["target"] = f">= {INGEST_MIN_RATIO}"
    rec["met"] = target_met(rec["ratio"], ">=", INGEST_MIN_RATIO)
    rec["arm_ms"] = [round(x, 3) for x in arm_ms]
    rec["raw_ms"] = [round(x, 3) for x in raw_ms]
    rec["builds"] = build_ms
    return rec, arm
