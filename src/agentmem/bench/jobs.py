"""Snakemake ``benchmark:`` files of a pipeline run: read, summarised, written as CSV."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.bench.errors import BenchError
from agentmem.io import write_csv

#: Columns of a Snakemake ``benchmark:`` TSV that :func:`read_job_benchmarks` needs.
JOB_TSV_COLUMNS = ("s", "max_rss", "cpu_time")
#: Values Snakemake writes when psutil could not measure (``NA``) or had no value (``-``).
_MISSING = frozenset({"", "-", "NA", "na", "nan", "NaN", "None"})
#: Column types of ``pipeline_jobs.csv`` (one row per job of the ``full`` phase).
JOB_SCHEMA = {
    "job": pl.String,
    "rule": pl.String,
    "wall_s": pl.Float64,
    "max_rss_mb": pl.Float64,
    "cpu_s": pl.Float64,
}


def tsv_float(text: str) -> float | None:
    """A TSV cell as a float; ``None`` for ``NA``, ``-``, empty or non-finite values."""
    text = text.strip()
    if text in _MISSING:
        return None
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _tsv_column(rows: Sequence[Sequence[str]], i: int) -> list[float]:
    """The measured values of column ``i`` over ``rows`` (missing cells dropped)."""
    vals = [tsv_float(r[i]) if i < len(r) else None for r in rows]
    return [v for v in vals if v is not None]


def read_job_benchmarks(bench_dir: Path) -> list[dict[str, Any]]:
    """Read every Snakemake ``benchmark:`` file under ``bench_dir`` into one record per job.

    The workflow writes ``results/benchmarks/<rule>/<wildcards...>.tsv`` (or
    ``results/benchmarks/<rule>.tsv`` for a rule without wildcards): a tab-separated
    header ``s  h:m:s  max_rss  max_vms  max_uss  max_pss  io_in  io_out  mean_load
    cpu_time`` and one data row. Snakemake samples the job's whole process tree with
    psutil (every 0.5 s at first, then every 30 s), so a very short job may have ``NA``
    (or ``-``) instead of a memory or CPU figure: those become ``None``. A file with
    several data rows (``repeat()``) gives the mean wall and CPU time and the largest RSS.

    Args:
        bench_dir: the ``results/benchmarks`` directory; missing or empty gives ``[]``.

    Returns:
        Records sorted by ``job``, each with ``job`` (the path below ``bench_dir``
        without ``.tsv``, e.g. ``run_arm/m/file-jsonl``), ``rule`` (the first path
        component, or the file stem at top level), ``wall_s`` (column ``s``: wall-clock
        seconds), ``max_rss_mb`` (column ``max_rss``: peak resident set size in MiB,
        bytes / 2**20 summed over the job's processes) and ``cpu_s`` (column
        ``cpu_time``: user + system CPU seconds of those processes); any of the last
        three may be ``None``.

    Raises:
        BenchError: naming the file when its header lacks ``s``, ``max_rss`` or
            ``cpu_time``, or it has no data row.
    """
    bench_dir = Path(bench_dir)
    if not bench_dir.is_dir():
        return []
    jobs: list[dict[str, Any]] = []
    for path in sorted(bench_dir.rglob("*.tsv")):
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        header = lines[0].split("\t") if lines else []
        missing = [c for c in JOB_TSV_COLUMNS if c not in header]
        if missing:
            raise BenchError(
                f"{path}: not a Snakemake benchmark file (header lacks {', '.join(missing)}; "
                f"got {lines[0][:80]!r})"
                if lines
                else f"{path}: empty benchmark file (no header)"
            )
        if len(lines) < 2:
            raise BenchError(f"{path}: benchmark file has a header but no data row")
        rows = [ln.split("\t") for ln in lines[1:]]
        wall, rss, cpu = (_tsv_column(rows, header.index(c)) for c in JOB_TSV_COLUMNS)
        rel = path.relative_to(bench_dir).with_suffix("")
        jobs.append(
            {
                "job": rel.as_posix(),
                "rule": rel.parts[0],
                "wall_s": round(statistics.fmean(wall), 3) if wall else None,
                "max_rss_mb": max(rss) if rss else None,
                "cpu_s": round(statistics.fmean(cpu), 3) if cpu else None,
            }
        )
    return jobs


def summarise_jobs(jobs: Sequence[dict[str, Any]], top: int = 15) -> dict[str, Any]:
    """Aggregate :func:`read_job_benchmarks` records for the pipeline record.

    Missing values (``None``) count as 0 in sums and are skipped by maxima; jobs
    without a wall time sort last.

    Args:
        jobs: job records (``job``, ``rule``, ``wall_s``, ``max_rss_mb``, ``cpu_s``).
        top: how many of the slowest jobs to keep.

    Returns:
        ``jobs_total`` (count), ``jobs_wall_s_sum`` (seconds, summed over jobs: the
        serial cost, not the wall time of the run), ``slowest_jobs`` (the ``top``
        records by ``wall_s``, descending), ``by_rule`` (per rule ``rule``, ``jobs``,
        ``wall_s_sum``, ``wall_s_max``, ``max_rss_mb_max``; sorted by ``wall_s_sum``
        descending, then rule name) and ``largest_job`` (``job``, ``rule``,
        ``max_rss_mb`` of the job with the largest peak RSS in MiB; ``None`` when no job
        has one).
    """

    def wall(j: dict[str, Any]) -> float:
        return j["wall_s"] if j["wall_s"] is not None else -math.inf

    slowest = sorted(jobs, key=lambda j: (-wall(j), j["job"]))[:top]
    groups: dict[str, list[dict[str, Any]]] = {}
    for j in jobs:
        groups.setdefault(j["rule"], []).append(j)
    by_rule = []
    for rule, js in groups.items():
        walls = [j["wall_s"] for j in js if j["wall_s"] is not None]
        rss = [j["max_rss_mb"] for j in js if j["max_rss_mb"] is not None]
        by_rule.append(
            {
                "rule": rule,
                "jobs": len(js),
                "wall_s_sum": round(sum(walls), 3),
                "wall_s_max": max(walls) if walls else None,
                "max_rss_mb_max": max(rss) if rss else None,
            }
        )
    by_rule.sort(key=lambda r: (-r["wall_s_sum"], r["rule"]))
    with_rss = [j for j in jobs if j["max_rss_mb"] is not None]
    big = max(with_rss, key=lambda j: j["max_rss_mb"], default=None)
    return {
        "jobs_total": len(jobs),
        "jobs_wall_s_sum": round(sum(j["wall_s"] or 0.0 for j in jobs), 3),
        "slowest_jobs": [dict(j) for j in slowest],
        "by_rule": by_rule,
        "largest_job": None
        if big is None
        else {"job": big["job"], "rule": big["rule"], "max_rss_mb": big["max_rss_mb"]},
    }


def write_job_csv(path: Path, jobs: Sequence[dict[str, Any]]) -> None:
    """Atomically write job records as CSV (columns of :data:`JOB_SCHEMA`, empty cell = NA)."""
    write_csv(path, pl.DataFrame(list(jobs), schema=JOB_SCHEMA, orient="row"))
