"""One operating point timed and scored, and its workflow job."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.sweeps.pareto.grid import Point


def run_point(
    point: Point,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    store_dir: str | Path | None,
    build_record: Mapping[str, Any] | None,
    k: int = 10,
    warmup: int = 1,
    repeats: int = 3,
    min_time_ms: float = 0.0,
    scratch: str | Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Time and score every query of the corpus at one operating point.

    A query-time point opens ``store_dir`` with ``point.params``; its build time and
    storage are the headline build's (``build_record``, the run's build JSON). A
    build-time point builds a store in a temporary directory under ``scratch`` (removed
    afterwards) and measures its own.

    Returns:
        The point's record: :class:`Point`'s fields, ``build_ms``, ``bytes_per_memory``,
        ``queries``, ``throughput_qps`` (single thread: queries per second of the
        summed per-query median latencies) and ``by_class`` (the rows of
        :func:`agentmem.report.tables.by_class_frame`: nDCG@10, recall@10, p50/p95 ms,
        fill per class and ``all``).

    Raises:
        ``agentmem.arms.base.ArmError``: the store does not open or the engine fails;
        ValueError: a query-time point without ``store_dir``/``build_record``.
    """
    from tqdm import tqdm

    from agentmem.arms.factory import make_arm
    from agentmem.corpus.io import load_corpus, load_queries
    from agentmem.embeddings import load_embeddings
    from agentmem.report.tables import by_class_frame, score_run
    from agentmem.runner import RUN_SCHEMA, opened, run_rows, time_query

    corpus_dir = Path(corpus_dir)
    vectors = load_embeddings(embeddings_path)
    queries = load_queries(corpus_dir, vectors)
    rows: list[dict] = []
    medians: list[float] = []

    def ask(arm: Any) -> None:
        bar = tqdm(
            queries,
            desc=f"{point.arm} {point.point}",
            unit="q",
            disable=not progress,
            mininterval=2.0,
        )
        for q in bar:
            res, ms = time_query(arm, q, k, warmup, repeats, min_time_ms)
            medians.append(ms)
            rows.extend(run_rows(q.query_id, res, ms, k))

    corpus = load_corpus(corpus_dir)
    n = corpus.memories.height
    if point.stage == "query":
        if store_dir is None or build_record is None:
            raise ValueError(f"{point.arm} {point.point}: a query-time point needs the store")
        with opened(point.arm, point.params, store_dir) as arm:
            ask(arm)
        build_ms = float(build_record["build_wall_ms"])
        bytes_per_memory = build_record.get("bytes_per_memory")
    else:
        root = Path(scratch) if scratch is not None else None
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{point.arm}-", dir=root))
        arm = make_arm(point.arm, point.params)
        try:
            t0 = time.perf_counter()
            arm.build(corpus, vectors, work / "store")
            build_ms = (time.perf_counter() - t0) * 1e3
            total = arm.storage().total_bytes
            bytes_per_memory = round(total / n, 1) if n else None
            ask(arm)
        finally:
            arm.close()
            shutil.rmtree(work, ignore_errors=True)
    scores = score_run(
        pl.DataFrame(rows, schema=RUN_SCHEMA),
        pl.read_parquet(corpus_dir / "qrels.parquet"),
        pl.read_parquet(corpus_dir / "queries.parquet"),
        k,
        corpus.memories,
    )
    total_s = sum(medians) / 1e3
    return {
        "arm": point.arm,
        "point": point.point,
        "knob": point.knob,
        "stage": point.stage,
        "params": point.params,
        "build_ms": round(build_ms, 3),
        "bytes_per_memory": bytes_per_memory,
        "queries": len(queries),
        "throughput_qps": round(len(medians) / total_s, 3) if total_s > 0 else None,
        "by_class": by_class_frame(point.arm, scores).to_dicts(),
    }


def point_job(input: Any, output: Any, params: Any) -> None:
    """Workflow entry: one operating point -> ``output.point`` (JSON of :func:`run_point`).

    ``params``: ``arm``, ``point`` (its id), ``setting`` (the point's ``knob``, ``stage``
    and constructor ``params``), ``k``, ``warmup``, ``repeats``, ``min_time_ms``,
    ``scratch``; ``input``: the corpus files, ``embeddings``, and for a query-time point
    ``store`` and ``build``.
    """
    from agentmem.io import write_json
    from agentmem.jobs import CORPUS_TABLES, corpus_dir

    setting = params.setting
    point = Point(
        params.arm, params.point, setting["knob"], setting["stage"], dict(setting["params"])
    )
    query_stage = point.stage == "query"
    record = run_point(
        point,
        corpus_dir(input, *CORPUS_TABLES, "queries", "qrels"),
        input.embeddings,
        input.store if query_stage else None,
        json.loads(Path(input.build).read_text()) if query_stage else None,
        k=params.k,
        warmup=params.warmup,
        repeats=params.repeats,
        min_time_ms=params.min_time_ms,
        scratch=params.scratch,
    )
    write_json(output.point, record)
