"""The bench driver: corpus, the per-arm measurements, result files and ``summary.md``."""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentmem.arms import ARMS
from agentmem.arms.base import Arm, Corpus, Embeddings, Query
from agentmem.bench.embedding import embedding_benchmark
from agentmem.bench.errors import BenchError
from agentmem.bench.harness import INGEST_HOOKS, QUERY_HOOKS, harness_overhead, no_hooks_reason
from agentmem.bench.ingest import ingest_benchmark, wipe_dir
from agentmem.bench.pipeline import pipeline_benchmark
from agentmem.bench.remember import remember_benchmark
from agentmem.bench.summary import pipeline_job_tables, render_summary, summary_rows
from agentmem.config import Config, ConfigError, SizeConfig, load_config
from agentmem.encoder import ONNX_BACKENDS
from agentmem.io import write_json, write_text

log = logging.getLogger(__name__)


#: Fallback corpus sizes when the config file has none of the requested name.
DEFAULT_SIZES = {"s": SizeConfig(facts=600, queries_per_class=12)}
RESULT_FILES = ("harness", "ingest", "remember", "embedding", "pipeline")


def _environment() -> dict[str, Any]:
    """Machine facts recorded with every result file."""
    return {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def _load_cfg(config_file: Path) -> Config:
    """The validated config, or the built-in defaults when the file is missing."""
    try:
        return load_config(config_file)
    except ConfigError as exc:
        if not config_file.exists():
            log.warning("%s; using built-in defaults", exc)
            return Config()
        raise


def prepare_corpus(
    size: str, cfg: Config, out_dir: Path, progress: bool = True
) -> tuple[Path, Path]:
    """Generate corpus ``size`` in ``out_dir/corpus/<size>``; embed it (cache ``out_dir/cache``).

    The encoder is the config's ``embedding.backend``; for ``onnx`` and ``onnx-int8`` the
    model is exported to :func:`onnx_model_path` first (reused when it exists; the int8
    graph is derived beside it).

    Returns:
        ``(corpus_dir, embeddings_path)``.

    Raises:
        BenchError: on a size that neither the config nor :data:`DEFAULT_SIZES` defines.
    """
    from agentmem.corpus import write_corpus
    from agentmem.embeddings import embed_corpus

    sizes = {**DEFAULT_SIZES, **cfg.sizes}
    if size not in sizes:
        raise BenchError(f"unknown size {size!r}; known: {sorted(sizes)}")
    corpus_dir = out_dir / "corpus" / size
    emb = out_dir / "embeddings" / f"{size}.parquet"
    write_corpus(corpus_dir, sizes[size], cfg.corpus)
    backend = cfg.embedding.backend
    onnx_model = None
    if backend in ONNX_BACKENDS:
        from agentmem.encoder import export_onnx

        onnx_model = export_onnx(onnx_model_path(out_dir, cfg))
    embed_corpus(
        corpus_dir,
        emb,
        out_dir / "cache",
        batch_size=cfg.embedding.batch_size,
        progress=progress,
        backend=backend,
        onnx_model=onnx_model,
    )
    return corpus_dir, emb


def onnx_model_path(out_dir: Path, cfg: Config) -> Path:
    """Where the bench keeps its exported ONNX encoder: ``out_dir/cache/encoder/<model>.onnx``."""
    return out_dir / "cache" / "encoder" / f"{cfg.embedding.model}.onnx"


def bench_arms(
    arm_names: Sequence[str],
    arm_params: dict[str, dict[str, Any]],
    corpus: Corpus,
    vectors: Embeddings,
    queries: Sequence[Query],
    work_dir: Path,
    k: int = 10,
    rounds: int = 5,
    ingest_rounds: int = 5,
    remember_n: int = 200,
    progress: bool = True,
) -> tuple[dict[str, dict], dict[str, dict], dict[str, dict]]:
    """Run the ingest, harness-overhead and remember measurements for each arm in turn.

    Per arm: :func:`~agentmem.bench.ingest.ingest_benchmark` when it has a raw bulk path
    (it leaves the last build open; else the arm is built once and its ingest record is
    ``{"not_run": reason}``, as for a product), then
    :func:`~agentmem.bench.harness.harness_overhead` on that build when it has a bare driver
    call (else ``{"not_run": reason}``, e.g. a plug-in), then
    :func:`~agentmem.bench.remember.remember_benchmark` on the same store. Then the arm is
    closed and its store removed.
    A failure is recorded as ``{"error": ...}`` for that arm and the next arm runs.

    Args:
        arm_names: the arms, in order.
        arm_params: constructor parameters by arm name (config ``arm_params``).
        corpus: the bench corpus.
        vectors: its embeddings (memories and queries).
        queries: the harness queries.
        work_dir: scratch directory for the stores and raw copies (removed per arm).
        k: result size.
        rounds: harness rounds per query and side.
        ingest_rounds: builds per arm.
        remember_n: timed remembers per arm; 0 skips the remember measure.
        progress: show progress bars.

    Returns:
        ``(harness records by arm, ingest records by arm, remember records by arm)``.
    """
    from agentmem.arms.factory import make_arm

    harness: dict[str, dict] = {}
    ingest: dict[str, dict] = {}
    remember: dict[str, dict] = {}
    for name in arm_names:
        store = work_dir / "stores" / name
        scratch = work_dir / "raw" / name
        arm: Arm | None = None
        try:
            arm = make_arm(name, arm_params.get(name))
            no_ingest = no_hooks_reason(arm, INGEST_HOOKS)
            no_query = no_hooks_reason(arm, QUERY_HOOKS)
            if no_query is not None:
                log.info("%s", no_query)
                harness[name] = {"not_run": no_query}
            if no_ingest is None:
                arm.close()
                arm = None
                log.info("%s: ingest (%d builds) ...", name, ingest_rounds)
                ingest[name], arm = ingest_benchmark(
                    name,
                    arm_params.get(name),
                    corpus,
                    vectors,
                    store,
                    scratch,
                    ingest_rounds,
                    progress,
                )
            else:
                log.info("%s", no_ingest)
                ingest[name] = {"not_run": no_ingest}
                if remember_n or no_query is None:  # one build for the measures on a store
                    wipe_dir(store)
                    arm.build(corpus, vectors, store)
        except Exception as exc:  # report, never crash the run
            msg = f"cannot build: {type(exc).__name__}: {exc}"
            ingest[name] = harness[name] = remember[name] = {"error": msg}
            log.error("%s: %s", name, msg)
            if arm is not None:
                arm.close()
                arm = None
        if arm is not None:
            try:
                if name not in harness:
                    log.info(
                        "%s: harness overhead (%d queries x %d rounds) ...",
                        name,
                        len(queries),
                        rounds,
                    )
                    try:
                        harness[name] = harness_overhead(arm, queries, k, rounds, progress=progress)
                    except Exception as exc:  # report, never crash the run
                        harness[name] = {"error": f"{type(exc).__name__}: {exc}"}
                        log.error("%s: %s", name, harness[name]["error"])
                if remember_n:
                    log.info("%s: remember (%d single-memory calls) ...", name, remember_n)
                    try:
                        remember[name] = remember_benchmark(
                            arm, corpus, vectors, remember_n, progress=progress
                        )
                    except Exception as exc:  # report, never crash the run
                        remember[name] = {"error": f"{type(exc).__name__}: {exc}"}
                        log.error("%s: %s", name, remember[name]["error"])
            finally:
                arm.close()
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return harness, ingest, remember


def _read_result(path: Path) -> dict | None:
    """A result JSON written earlier, or ``None``."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_bench(
    size: str = "s",
    out_dir: Path = Path("results/bench"),
    config_file: Path = Path("config/config.yaml"),
    arms: Sequence[str] | None = None,
    rounds: int = 5,
    ingest_rounds: int = 5,
    remember_n: int = 200,
    embedding: bool = True,
    embed_rounds: int = 1,
    embed_texts_n: int = 2000,
    pipeline: bool = False,
    pipeline_cores: int = 16,
    repo: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run the benchmarks; write one JSON per section (:data:`RESULT_FILES`) and ``summary.md``.

    The summary also shows results of sections not run this time if their JSON file is
    already in ``out_dir`` (each carries ``measured_at``), so ``--pipeline`` can be run
    on its own later.

    Args:
        size: corpus size name (from the config's ``sizes``; default ``s``).
        out_dir: output directory (corpus, embedding cache and scratch stores go under it).
        config_file: the configuration (sizes, corpus options, arm parameters, ``run.k``).
        arms: arm names (default: every registered arm); an empty list skips sections 1-3
            (the sections of ``docs/BENCHMARKS.md``).
        rounds: timed calls per side and query (harness).
        ingest_rounds: builds per arm (ingest).
        remember_n: timed single-memory remembers per arm (section 3); 0 skips it.
        embedding: run section 4.
        embed_rounds: passes over the texts in section 4.
        embed_texts_n: number of texts embedded in section 4.
        pipeline: run section 5 (slow).
        pipeline_cores: ``snakemake --cores`` in section 5 (default 16, as ``make reproduce``).
        repo: the repository root (default: the current directory).
        progress: show progress bars.

    Returns:
        ``{"harness", "ingest", "remember", "embedding", "pipeline", "rows"}``.

    Raises:
        BenchError: on an unknown arm or size.
    """
    from agentmem.corpus.io import load_corpus, load_queries
    from agentmem.embeddings import load_embeddings

    repo = (repo or Path.cwd()).resolve()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = _load_cfg(Path(config_file))
    arm_names = list(ARMS) if arms is None else list(arms)
    unknown = [a for a in arm_names if a not in ARMS]
    if unknown:
        raise BenchError(f"unknown arms {unknown}; known: {sorted(ARMS)}")
    results: dict[str, Any] = {}
    work = out_dir / "work"
    if arm_names or embedding:
        corpus_dir, emb_path = prepare_corpus(size, cfg, out_dir, progress)
        corpus = load_corpus(corpus_dir)
        vectors = load_embeddings(emb_path)
    if arm_names:
        queries = load_queries(corpus_dir, vectors)
        env = _environment()
        harness, ingest, remember = bench_arms(
            arm_names,
            dict(cfg.arm_params),
            corpus,
            vectors,
            queries,
            work,
            k=cfg.run.k,
            rounds=rounds,
            ingest_rounds=ingest_rounds,
            remember_n=remember_n,
            progress=progress,
        )
        common = {"size": size, "memories": corpus.memories.height, **env}
        results["harness"] = {**common, "queries": len(queries), "arms": harness}
        results["ingest"] = {**common, "arms": ingest}
        write_json(out_dir / "harness.json", results["harness"])
        write_json(out_dir / "ingest.json", results["ingest"])
        if remember_n:
            results["remember"] = {**common, "remembers": remember_n, "arms": remember}
            write_json(out_dir / "remember.json", results["remember"])
    if embedding:
        pool = corpus.memories["body"].to_list() + [
            q.text for q in load_queries(corpus_dir, vectors)
        ]
        texts = list(dict.fromkeys(pool))[:embed_texts_n]
        log.info("embedding: %d texts, %d round(s) ...", len(texts), embed_rounds)
        env = _environment()
        try:
            rec = embedding_benchmark(
                texts,
                work / "embedding",
                rounds=embed_rounds,
                batch_size=cfg.embedding.batch_size,
                progress=progress,
                backend=cfg.embedding.backend,
                onnx_model=onnx_model_path(out_dir, cfg),
            )
        except Exception as exc:  # report, never crash the run
            rec = {"error": f"{type(exc).__name__}: {exc}"}
        results["embedding"] = {"size": size, **env, **rec}
        write_json(out_dir / "embedding.json", results["embedding"])
    if pipeline:
        env = _environment()
        try:
            rec = pipeline_benchmark(repo, Path(config_file), out_dir, cores=pipeline_cores)
        except Exception as exc:  # report, never crash the run
            rec = {"error": f"{type(exc).__name__}: {exc}", "phases": {}}
        results["pipeline"] = {**env, **rec}
        write_json(out_dir / "pipeline.json", results["pipeline"])
    shutil.rmtree(work, ignore_errors=True)
    for name in RESULT_FILES:
        if name not in results:
            results[name] = _read_result(out_dir / f"{name}.json")
    rows = summary_rows(results)
    stamps = [f"{n}: {results[n].get('measured_at', '?')}" for n in RESULT_FILES if results.get(n)]
    loads = [
        f"{n} {results[n]['load_avg_1m']}"
        for n in RESULT_FILES
        if results.get(n) and "load_avg_1m" in results[n]
    ]
    header = (
        f"Measured on {platform.node() or 'this machine'} ({os.cpu_count()} CPUs; "
        f"1-minute load average at the start: {', '.join(loads) or 'n/a'}). "
        f"Result files in `{out_dir}` ({'; '.join(stamps)})."
    )
    tables = pipeline_job_tables(results.get("pipeline"))
    write_text(out_dir / "summary.md", render_summary(rows, header, tables))
    results["rows"] = rows
    return results
