"""Pipeline benchmark: a full workflow run, a rerun and one figure rebuild, timed."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from agentmem.bench.errors import BenchError
from agentmem.bench.jobs import read_job_benchmarks, summarise_jobs, write_job_csv
from agentmem.bench.targets import PIPELINE_MAX_S, target_met
from agentmem.bench.timeline import build_timeline, latest_log, rule_groups, write_timeline
from agentmem.config import load_config
from agentmem.io import write_text

log = logging.getLogger(__name__)


#: The figure rebuilt in the pipeline benchmark and the module whose mtime is touched.
PIPELINE_FIGURE = "results/figures/crash.svg"
PIPELINE_FIGURE_MODULE = "src/agentmem/report/figures/crash.py"


def run_monitored(cmd: Sequence[str], log_path: Path, poll_s: float = 0.5) -> dict:
    """Run ``cmd``, polling its process tree's memory every ``poll_s`` seconds.

    Returns:
        ``wall_s``, ``returncode``, ``peak_job_rss_mb`` (largest RSS of any single
        descendant process: the largest job), ``peak_job_cmd`` (its command line,
        shortened), ``peak_root_rss_mb`` (the command itself) and ``nothing_to_do``
        (Snakemake said "Nothing to be done").
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    peak_job, peak_cmd, peak_root = 0, "", 0
    with log_path.open("w") as logf:
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen(list(cmd), stdout=logf, stderr=subprocess.STDOUT)
        root = psutil.Process(proc.pid)
        while True:
            try:
                peak_root = max(peak_root, root.memory_info().rss)
                for child in root.children(recursive=True):
                    try:
                        rss = child.memory_info().rss
                        if rss > peak_job:
                            peak_job, peak_cmd = rss, " ".join(child.cmdline())[:300]
                    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                        continue
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                pass
            try:
                proc.wait(timeout=poll_s)
                break
            except subprocess.TimeoutExpired:
                continue
        wall = (time.perf_counter_ns() - t0) / 1e9
    text = log_path.read_text(errors="replace")
    return {
        "wall_s": round(wall, 3),
        "returncode": proc.returncode,
        "nothing_to_do": "Nothing to be done" in text,
        "peak_job_rss_mb": round(peak_job / 2**20, 1),
        "peak_job_cmd": peak_cmd,
        "peak_root_rss_mb": round(peak_root / 2**20, 1),
        "log": str(log_path),
    }


def _snakemake_bin() -> str:
    """The ``snakemake`` beside this interpreter, else the one on ``PATH``.

    Raises:
        BenchError: when there is none.
    """
    here = Path(sys.executable).with_name("snakemake")
    if here.is_file():
        return str(here)
    found = shutil.which("snakemake")
    if found is None:
        raise BenchError("snakemake not found beside the interpreter nor on PATH")
    return found


def _link_locomo(repo: Path, config_file: Path, tmp: Path, tmp_cfg: Path) -> dict[str, Any]:
    """Make the config's LoCoMo file reachable from the temporary working directory.

    ``external.locomo.path`` is read with :func:`~agentmem.config.load_config` (no LoCoMo
    entry: nothing to link); a relative path is taken relative to ``repo`` (where ``make
    reproduce`` runs). When that file exists: a relative path inside the tree gets the
    same relative path under ``tmp`` as a symlink to the resolved file (the data is never
    copied); a relative path leading
    out of the tree (``../...``) cannot be mirrored under ``tmp``, so the temporary copy
    of the config (``tmp_cfg``) gets the resolved absolute path instead; an absolute
    path needs nothing.

    Returns:
        ``locomo`` (whether the LoCoMo targets can run), ``locomo_path`` (the resolved
        file or ``None``) and ``locomo_link`` (the symlink made under ``tmp`` or
        ``None``).
    """
    entry = load_config(config_file).external.get("locomo")
    if entry is None or entry.format != "locomo":
        return {"locomo": False, "locomo_path": None, "locomo_link": None}
    p = Path(entry.path)
    src = p if p.is_absolute() else repo / p
    out: dict[str, Any] = {"locomo": src.is_file(), "locomo_path": None, "locomo_link": None}
    if not out["locomo"]:
        return out
    target = src.resolve()
    out["locomo_path"] = str(target)
    if p.is_absolute():
        return out
    link = Path(os.path.normpath(tmp / p))
    if link.is_relative_to(tmp) and link != tmp:
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
        out["locomo_link"] = str(link)
    else:
        import yaml

        data = yaml.safe_load(tmp_cfg.read_text()) or {}
        data.setdefault("external", {}).setdefault("locomo", {})["path"] = str(target)
        write_text(tmp_cfg, yaml.safe_dump(data, sort_keys=False))
        out["locomo_config_rewritten"] = str(tmp_cfg)
    return out


def pipeline_benchmark(
    repo: Path,
    config_file: Path,
    out_dir: Path,
    cores: int = 16,
    keep: bool = False,
) -> dict:
    """Time a full workflow run, a rerun and one figure rebuild in a temporary directory.

    ``config/`` and ``profiles/`` are copied into a fresh temporary working directory;
    every run is ``snakemake -s <repo>/Snakefile --directory <tmp> --cores <cores>
    --configfile <config>``. Phases: ``full`` (from an empty ``results/``), ``rerun``
    (immediately after: should do nothing), ``touch`` (the mtime of
    :data:`PIPELINE_FIGURE_MODULE` set to now, then :data:`PIPELINE_FIGURE` asked for; the
    module's original times are restored afterwards, even on failure) and ``figure``
    (:data:`PIPELINE_FIGURE` rebuilt with ``--force``). Snakemake 9 reruns a job for a
    newer input only when the input's checksum changed too, so a bare ``touch`` rebuilds
    nothing; ``figure`` is what an edit of the plotting code costs: the DAG plus that
    one job.

    The config's LoCoMo file, when it exists, is linked into the working directory
    (:func:`_link_locomo`), so the LoCoMo targets run as in ``make reproduce``. Right after ``full``
    (before the forced rebuild overwrites a figure's file), the jobs' Snakemake benchmark files
    ``<tmp>/results/benchmarks/**/*.tsv`` are read
    (:func:`~agentmem.bench.jobs.read_job_benchmarks`), summarised
    (:func:`~agentmem.bench.jobs.summarise_jobs`) and written to ``out_dir/pipeline_jobs.csv``,
    and the run's timeline (:mod:`~agentmem.bench.timeline`, from its Snakemake log) is written to
    ``out_dir/timeline.{csv,md,svg}``.

    Args:
        repo: the repository (holds ``Snakefile``, ``config/``, ``profiles/``).
        config_file: the configuration to run.
        out_dir: where the per-phase logs and ``pipeline_jobs.csv`` go.
        cores: ``--cores`` (default 16, as ``make reproduce``).
        keep: keep the temporary working directory (its path is in the record).

    Returns:
        ``config``, ``cores``, ``workdir``, the LoCoMo fields of :func:`_link_locomo`, ``phases``
        (one :func:`run_monitored` record per phase, with its target and whether it was met),
        ``peak_job_rss_mb`` (psutil, MiB), the fields of :func:`~agentmem.bench.jobs.summarise_jobs`
        plus ``jobs_csv`` (or ``jobs_error`` when a benchmark file could not be read), ``timeline``
        (:func:`_collect_timeline`; or ``timeline_error``) and ``error`` when a phase failed.

    Raises:
        BenchError: when the config file does not exist.
    """
    repo = repo.resolve()
    config_file = config_file.resolve()
    if not config_file.is_file():
        raise BenchError(f"config file {config_file} does not exist")
    tmp = Path(tempfile.mkdtemp(prefix="agentmem-bench-pipeline-"))
    shutil.copytree(repo / "config", tmp / "config")
    if (repo / "profiles").is_dir():
        shutil.copytree(repo / "profiles", tmp / "profiles")
    try:
        cfg = tmp / "config" / config_file.relative_to(repo / "config")
    except ValueError:
        cfg = tmp / "config" / f"bench-{config_file.name}"
        shutil.copy2(config_file, cfg)
    base = [_snakemake_bin(), "-s", str(repo / "Snakefile"), "--directory", str(tmp)]
    base += ["--cores", str(cores), "--configfile", str(cfg)]
    module = repo / PIPELINE_FIGURE_MODULE
    rec: dict[str, Any] = {"config": str(config_file), "cores": cores, "workdir": str(tmp)}
    phases: dict[str, dict] = {}
    try:
        rec.update(_link_locomo(repo, config_file, tmp, cfg))
        log.info("pipeline: LoCoMo %s", rec["locomo_path"] or "not found: targets skipped")
        for phase in ("full", "rerun"):
            log.info("pipeline: %s run (--cores %d) ...", phase, cores)
            phases[phase] = run_monitored(base, out_dir / f"pipeline_{phase}.log")
            if phase == "full":
                rec.update(_collect_jobs(tmp / "results" / "benchmarks", out_dir))
                rec.update(_collect_timeline(tmp, out_dir, repo))
            if phases[phase]["returncode"] != 0:
                raise BenchError(f"snakemake {phase} run failed: see {phases[phase]['log']}")
        # the target goes before the options: --configfile takes several values
        target = [base[0], PIPELINE_FIGURE, *base[1:]]
        st = module.stat()
        try:
            os.utime(module)
            log.info("pipeline: touched %s, asking for %s ...", module, PIPELINE_FIGURE)
            phases["touch"] = run_monitored(target, out_dir / "pipeline_touch.log")
        finally:
            os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
        log.info("pipeline: rebuilding %s (--force) ...", PIPELINE_FIGURE)
        phases["figure"] = run_monitored([*target, "--force"], out_dir / "pipeline_figure.log")
    except BenchError as exc:
        rec["error"] = str(exc)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for phase, limit in PIPELINE_MAX_S.items():
        if phase in phases:
            p = phases[phase]
            ok = p["returncode"] == 0
            p["target"] = f"<= {limit:g} s"
            p["met"] = target_met(p["wall_s"], "<=", limit) if ok else False
    if "rerun" in phases:  # a rerun must do nothing
        phases["rerun"]["met"] = bool(phases["rerun"]["met"] and phases["rerun"]["nothing_to_do"])
    if "figure" in phases:  # the forced rebuild must have run the plotting job
        phases["figure"]["met"] = bool(
            phases["figure"]["met"] and not phases["figure"]["nothing_to_do"]
        )
    rec["phases"] = phases
    rec["peak_job_rss_mb"] = max((p["peak_job_rss_mb"] for p in phases.values()), default=None)
    return rec


def _collect_jobs(bench_dir: Path, out_dir: Path) -> dict[str, Any]:
    """Read, summarise and write (``out_dir/pipeline_jobs.csv``) the jobs' benchmark files.

    Returns:
        :func:`~agentmem.bench.jobs.summarise_jobs` plus ``jobs_csv``; ``{"jobs_error": ...}`` when
        a file cannot be read (the pipeline record still gets its timings).
    """
    try:
        jobs = read_job_benchmarks(bench_dir)
    except (BenchError, OSError) as exc:
        log.error("pipeline: %s", exc)
        return {"jobs_error": f"{type(exc).__name__}: {exc}"}
    csv = out_dir / "pipeline_jobs.csv"
    write_job_csv(csv, jobs)
    log.info("pipeline: %d job benchmark files -> %s", len(jobs), csv)
    return {**summarise_jobs(jobs), "jobs_csv": str(csv)}


def _collect_timeline(workdir: Path, out_dir: Path, repo: Path) -> dict[str, Any]:
    """Write the timeline of the newest run in ``workdir`` to ``out_dir/timeline.{csv,md,svg}``.

    Returns:
        ``{"timeline": {...}}``: the three paths (``csv``, ``md``, ``svg``), ``elapsed_s``,
        ``cpu_util``, ``lanes`` (per lane ``busy_s``, ``idle_s``, ``utilisation``) and
        ``critical_path`` (``jobs``: their labels, first to last; ``wall_s``, ``wait_s``);
        ``{"timeline_error": ...}`` when it cannot be made (the pipeline record keeps its
        timings).
    """
    try:
        tl = build_timeline(latest_log(workdir), workdir / "results" / "benchmarks")
        paths = write_timeline(tl, out_dir, rule_groups(repo))
    except (BenchError, OSError, ValueError) as exc:
        log.error("pipeline: timeline: %s", exc)
        return {"timeline_error": f"{type(exc).__name__}: {exc}"}
    log.info("pipeline: timeline of the full run -> %s", paths["md"])
    cp = tl["critical_path"]
    keep = ("busy_s", "idle_s", "utilisation")
    return {
        "timeline": {
            **{k: str(v) for k, v in paths.items()},
            "elapsed_s": tl["totals"]["elapsed_s"],
            "cpu_util": tl["totals"]["cpu_util"],
            "lanes": {n: {k: s[k] for k in keep} for n, s in tl["lanes"].items()},
            "critical_path": {
                "jobs": [s["label"] for s in cp],
                "wall_s": round(sum(s["wall_s"] for s in cp), 3),
                "wait_s": round(sum(s["wait_s"] for s in cp), 3),
            },
        }
    }
