"""Benchmarks of the harness itself: is what we time the engines, not us?

``make bench`` (``scripts/bench.py``, :func:`~agentmem.bench.cli.main`) measures harness
overhead (:mod:`~agentmem.bench.harness`), ingest against the raw bulk paths
(:mod:`~agentmem.bench.ingest`, :mod:`~agentmem.bench.raw`), remember of one memory
(:mod:`~agentmem.bench.remember`), embedding (:mod:`~agentmem.bench.embedding`) and, opt-in,
the whole workflow (:mod:`~agentmem.bench.pipeline`, :mod:`~agentmem.bench.jobs`);
:mod:`~agentmem.bench.run` drives them and :mod:`~agentmem.bench.summary` writes
``results/bench/summary.md``. Timers and statistics are in :mod:`~agentmem.bench.timing`, the
limits in :mod:`~agentmem.bench.targets`. What each measure times and against what: see
``docs/BENCHMARKS.md``.
"""

from agentmem.bench.cli import main
from agentmem.bench.embedding import embedding_benchmark
from agentmem.bench.errors import BenchError
from agentmem.bench.harness import harness_overhead, no_hooks_reason
from agentmem.bench.ingest import ingest_benchmark
from agentmem.bench.jobs import (
    JOB_SCHEMA,
    JOB_TSV_COLUMNS,
    read_job_benchmarks,
    summarise_jobs,
    write_job_csv,
)
from agentmem.bench.pipeline import (
    PIPELINE_FIGURE,
    PIPELINE_FIGURE_MODULE,
    pipeline_benchmark,
    run_monitored,
)
from agentmem.bench.raw import HNSW_DEFAULTS, raw_ingest_ms
from agentmem.bench.remember import REMEMBER_COLUMNS, remember_benchmark, remember_rows
from agentmem.bench.run import DEFAULT_SIZES, RESULT_FILES, bench_arms, prepare_corpus, run_bench
from agentmem.bench.summary import pipeline_job_tables, render_summary, summary_rows
from agentmem.bench.targets import (
    EMBEDDING_MIN_RATIO,
    HARNESS_MAX_RATIO,
    INGEST_MIN_RATIO,
    PIPELINE_MAX_S,
    REMEMBER_MAX_P50_MS,
    target_met,
)
from agentmem.bench.timing import (
    gc_paused,
    harness_stats,
    interleaved_times,
    median,
    ratio_of_medians,
    safe_ratio,
    throughput_stats,
)

__all__ = [
    "DEFAULT_SIZES",
    "EMBEDDING_MIN_RATIO",
    "HARNESS_MAX_RATIO",
    "HNSW_DEFAULTS",
    "INGEST_MIN_RATIO",
    "JOB_SCHEMA",
    "JOB_TSV_COLUMNS",
    "PIPELINE_FIGURE",
    "PIPELINE_FIGURE_MODULE",
    "PIPELINE_MAX_S",
    "REMEMBER_COLUMNS",
    "REMEMBER_MAX_P50_MS",
    "RESULT_FILES",
    "BenchError",
    "bench_arms",
    "embedding_benchmark",
    "gc_paused",
    "harness_overhead",
    "harness_stats",
    "ingest_benchmark",
    "interleaved_times",
    "main",
    "median",
    "no_hooks_reason",
    "pipeline_benchmark",
    "pipeline_job_tables",
    "prepare_corpus",
    "raw_ingest_ms",
    "ratio_of_medians",
    "read_job_benchmarks",
    "remember_benchmark",
    "remember_rows",
    "render_summary",
    "run_bench",
    "run_monitored",
    "safe_ratio",
    "summarise_jobs",
    "summary_rows",
    "target_met",
    "throughput_stats",
    "write_job_csv",
]
