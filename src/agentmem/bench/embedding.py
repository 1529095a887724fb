"""Embedding throughput and agreement of the encoder backends.

- :func:`embedding_benchmark`: the cached ``embed_texts`` path against bare ``encode``;
  torch vs ONNX vs ONNX int8 (:func:`backend_comparison`), as ``make bench`` records them.
- :func:`int8_comparison`: the ``onnx-int8`` backend against ``onnx`` on a finished
  reproduction: speed on one and two threads, cosine of each text's two vectors, and the
  per-class nDCG@10 of every arm that ranks by vector with either's vectors, judged against
  the fp32 value's bootstrap interval (``python -m agentmem.encoder compare-int8``).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
from tqdm import tqdm

from agentmem.bench.errors import BenchError
from agentmem.bench.targets import EMBEDDING_MIN_RATIO, target_met
from agentmem.bench.timing import gc_paused, median, round_json, safe_ratio
from agentmem.encoder import Backend

log = logging.getLogger(__name__)

#: the arms whose ranking reads the vectors, products aside (:func:`int8_comparison`)
VECTOR_ARMS: tuple[str, ...] = (
    "file-vec",
    "file-vec-meta",
    "sqlite-hybrid",
    "sqlite-graph",
    "sqlite-gated",
    "pg-hnsw",
    "pg-hybrid",
    "pg-hnsw-iterative",
    "three-tier",
)


def embedding_benchmark(
    texts: Sequence[str],
    work_dir: Path,
    rounds: int = 1,
    chunk: int = 250,
    batch_size: int = 64,
    progress: bool = True,
    backend: Backend = "torch",
    onnx_model: Path | None = None,
) -> dict:
    """Time ``embed_texts`` (empty cache) against bare ``encode``; then torch against ONNX.

    The encoders are loaded and warmed up first (outside the timing). The texts are cut
    into chunks of ``chunk``; for each chunk (and each of ``rounds`` passes) the bare
    ``encode`` of ``backend`` and the cache path (``embed_texts`` with ``backend`` into a
    new, empty cache directory) run back to back, the order alternating from chunk to
    chunk, so a change of machine speed (other load on the two cores) hits both sides
    alike. The backend comparison does the same with the torch and the ONNX encoder on each
    chunk, recording wall and CPU seconds (``time.process_time``, all threads of this
    process) and the cosine of each text's two vectors.

    Args:
        texts: the texts (duplicates are removed first, so both sides encode all of them).
        work_dir: directory for the caches and outputs (created).
        rounds: passes over all chunks.
        chunk: texts per timed call.
        batch_size: encoder batch size (the config's ``embedding.batch_size``).
        progress: show a tqdm bar.
        backend: the backend of the cache-path comparison (the config's ``embedding.backend``).
        onnx_model: the exported ONNX model; exported into ``work_dir`` when ``None``.

    Returns:
        ``texts``, per-call seconds of each side, ``bare_per_s`` / ``cache_per_s`` (all
        texts over the summed seconds), ``ratio`` = median over chunks of the paired
        throughput ratio (cache / bare, i.e. bare seconds / cache seconds),
        ``ratio_total`` (summed seconds, bare / cache) and the target; ``backends``:
        ``torch_per_s`` / ``onnx_per_s`` (texts per wall second), ``onnx_speedup`` (their
        ratio), ``cpu_ratio`` (torch CPU seconds / ONNX CPU seconds) and ``min_cosine``.

    Raises:
        BenchError: when the cache path did not encode every text of a chunk.
    """
    from agentmem.embeddings import embed_texts, encoder_for
    from agentmem.encoder import export_onnx

    uniq = list(dict.fromkeys(texts))
    work_dir.mkdir(parents=True, exist_ok=True)
    onnx_model = export_onnx(onnx_model or work_dir / "encoder.onnx")
    model = encoder_for(backend, onnx_model)
    model.encode(uniq[:batch_size], batch_size=batch_size)
    chunks = [uniq[i : i + chunk] for i in range(0, len(uniq), max(chunk, 1))]
    bare_s: list[float] = []
    cache_s: list[float] = []
    jobs = [(r, c) for r in range(rounds) for c in range(len(chunks))]
    for j, (r, c) in enumerate(tqdm(jobs, desc="embedding", disable=not progress, leave=False)):
        part = chunks[c]
        cache_dir = work_dir / f"cache-{r}-{c}"
        shutil.rmtree(cache_dir, ignore_errors=True)

        def bare(part: list[str] = part) -> None:
            model.encode(part, batch_size=batch_size)

        def cached(part: list[str] = part, cache_dir: Path = cache_dir) -> None:
            ids = [f"t{i}" for i in range(len(part))]
            out = work_dir / "out.parquet"
            stats = embed_texts(
                ids,
                part,
                out,
                cache_dir,
                batch_size,
                progress=False,
                backend=backend,
                onnx_model=onnx_model,
            )
            if stats["encoded"] != len(part):
                raise BenchError(f"cache path encoded {stats['encoded']} of {len(part)} texts")

        order = ((bare, bare_s), (cached, cache_s))
        for f, sink in order if j % 2 == 0 else order[::-1]:
            with gc_paused():
                t0 = time.perf_counter_ns()
                f()
                sink.append((time.perf_counter_ns() - t0) / 1e9)
        shutil.rmtree(cache_dir, ignore_errors=True)
    n = len(uniq) * rounds
    ratio = median([safe_ratio(b, c) for b, c in zip(bare_s, cache_s, strict=True)])
    return {
        "texts": len(uniq),
        "rounds": rounds,
        "chunk": chunk,
        "batch_size": batch_size,
        "backend": backend,
        "torch_threads": _torch_threads(),
        "bare_s": [round(x, 3) for x in bare_s],
        "cache_s": [round(x, 3) for x in cache_s],
        "bare_per_s": round_json(safe_ratio(n, sum(bare_s)), 1),
        "cache_per_s": round_json(safe_ratio(n, sum(cache_s)), 1),
        "ratio": round_json(ratio),
        "ratio_total": round_json(safe_ratio(sum(bare_s), sum(cache_s))),
        "target": f">= {EMBEDDING_MIN_RATIO}",
        "met": target_met(ratio, ">=", EMBEDDING_MIN_RATIO),
        "backends": backend_comparison(chunks, onnx_model, batch_size, progress),
    }


def backend_comparison(
    chunks: Sequence[Sequence[str]], onnx_model: Path, batch_size: int = 64, progress: bool = True
) -> dict:
    """Torch, ONNX Runtime and its int8 graph on the same chunks of texts, rotating the order.

    Args:
        chunks: the texts, in timed calls.
        onnx_model: the exported fp32 ONNX model; the int8 graph is derived beside it when
            missing (:func:`agentmem.encoder.quantize_onnx`).
        batch_size: encoder batch size.
        progress: show a tqdm bar.

    Returns:
        ``torch_s`` / ``onnx_s`` / ``int8_s`` and ``torch_cpu_s`` / ``onnx_cpu_s`` /
        ``int8_cpu_s`` (wall and CPU seconds per call), ``torch_per_s`` / ``onnx_per_s`` /
        ``int8_per_s`` (texts per wall second), ``onnx_speedup`` (onnx / torch texts per
        second), ``cpu_ratio`` (torch CPU seconds / ONNX CPU seconds, the figure that holds on
        a loaded machine), ``min_cosine`` and ``mean_cosine`` of each text's torch and ONNX
        vectors, ``int8_cpu_ratio`` (ONNX CPU seconds / int8 CPU seconds) and
        ``int8_cosine`` (:func:`cosine_stats` of each text's ONNX and int8 vectors), and
        ``onnx_threads``.
    """
    from agentmem.embeddings import encoder_for

    encoders = {
        "torch": encoder_for("torch"),
        "onnx": encoder_for("onnx", onnx_model),
        "int8": encoder_for("onnx-int8", onnx_model),
    }
    for enc in encoders.values():
        enc.encode(list(chunks[0][:batch_size]) if chunks else ["warm-up"], batch_size)
    wall: dict[str, list[float]] = {name: [] for name in encoders}
    cpu: dict[str, list[float]] = {name: [] for name in encoders}
    cosines: list[np.ndarray] = []
    int8_cosines: list[np.ndarray] = []
    names = list(encoders)
    for j, part in enumerate(
        tqdm(chunks, desc="torch vs onnx vs int8", disable=not progress, leave=False)
    ):
        vecs: dict[str, np.ndarray] = {}
        for name in names[j % 3 :] + names[: j % 3]:
            with gc_paused():
                c0, t0 = time.process_time(), time.perf_counter()
                vecs[name] = encoders[name].encode(part, batch_size=batch_size)
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
        cosines.append((vecs["torch"] * vecs["onnx"]).sum(axis=1))
        int8_cosines.append((vecs["onnx"] * vecs["int8"]).sum(axis=1))
    n = sum(len(p) for p in chunks)
    cos = np.concatenate(cosines) if cosines else np.zeros(0, np.float32)
    per_s = {name: safe_ratio(n, sum(wall[name])) for name in names}
    return {
        "texts": n,
        "onnx_threads": getattr(encoders["onnx"], "threads", None),
        **{f"{name}_s": [round(x, 3) for x in wall[name]] for name in names},
        **{f"{name}_cpu_s": [round(x, 3) for x in cpu[name]] for name in names},
        **{f"{name}_per_s": round_json(per_s[name], 1) for name in names},
        "onnx_speedup": round_json(safe_ratio(per_s["onnx"], per_s["torch"])),
        "cpu_ratio": round_json(safe_ratio(sum(cpu["torch"]), sum(cpu["onnx"]))),
        "min_cosine": round_json(float(cos.min()), 7) if cos.size else None,
        "mean_cosine": round_json(float(cos.mean()), 7) if cos.size else None,
        "int8_cpu_ratio": round_json(safe_ratio(sum(cpu["onnx"]), sum(cpu["int8"]))),
        "int8_cosine": cosine_stats(
            np.concatenate(int8_cosines) if int8_cosines else np.zeros(0, np.float32)
        ),
    }


def cosine_stats(cos: np.ndarray) -> dict:
    """``n``, ``min``, ``p1`` (1st percentile) and ``mean`` of per-text cosines (None if empty)."""
    if not cos.size:
        return {"n": 0, "min": None, "p1": None, "mean": None}
    return {
        "n": int(cos.size),
        "min": round_json(float(cos.min()), 5),
        "p1": round_json(float(np.quantile(cos, 0.01)), 5),
        "mean": round_json(float(cos.mean()), 5),
    }


def encoder_speed(
    texts: Sequence[str],
    onnx_model: Path,
    threads: Sequence[int] = (1, 2),
    chunk: int = 250,
    batch_size: int = 16,
    progress: bool = True,
) -> dict:
    """Throughput of the ``onnx`` and ``onnx-int8`` encoders on each thread count.

    For each thread count, both encoders are loaded and warmed up (outside the timing),
    then encode the same chunks of ``chunk`` texts, the order alternating from chunk to
    chunk so a change of machine load hits both alike.

    Args:
        texts: the texts timed.
        onnx_model: the exported fp32 graph; the int8 graph beside it (derived if missing).
        threads: ONNX Runtime intra-op thread counts (each capped at the usable CPUs).
        chunk: texts per timed call.
        batch_size: encoder batch size (the config's ``embedding.batch_size``).
        progress: show a tqdm bar.

    Returns:
        ``{"texts": n, "threads": {t: {"onnx": {...}, "onnx-int8": {...}, "speedup":
        int8 / onnx texts per wall second, "cpu_ratio": onnx / int8 CPU seconds}}}``,
        each backend's record holding ``wall_s``, ``cpu_s`` (``time.process_time``, all
        threads), ``per_s`` (texts per wall second) and ``per_cpu_s`` (texts per CPU second).
    """
    from agentmem.encoder import Int8OnnxEncoder, OnnxEncoder

    chunks = [list(texts[i : i + chunk]) for i in range(0, len(texts), max(chunk, 1))]
    out: dict = {"texts": len(texts), "chunk": chunk, "batch_size": batch_size, "threads": {}}
    for t in threads:
        encoders = {
            "onnx": OnnxEncoder(onnx_model, threads=t),
            "onnx-int8": Int8OnnxEncoder(onnx_model, threads=t),
        }
        wall = {name: 0.0 for name in encoders}
        cpu = {name: 0.0 for name in encoders}
        for enc in encoders.values():
            enc.encode(chunks[0][:batch_size] if chunks else ["warm-up"], batch_size)
        for j, part in enumerate(
            tqdm(chunks, desc=f"speed, {t} thread(s)", disable=not progress, leave=False)
        ):
            order = list(encoders) if j % 2 == 0 else list(encoders)[::-1]
            for name in order:
                with gc_paused():
                    c0, t0 = time.process_time(), time.perf_counter()
                    encoders[name].encode(part, batch_size=batch_size)
                    wall[name] += time.perf_counter() - t0
                    cpu[name] += time.process_time() - c0
        rec: dict = {
            name: {
                "wall_s": round(wall[name], 2),
                "cpu_s": round(cpu[name], 2),
                "per_s": round_json(safe_ratio(len(texts), wall[name]), 1),
                "per_cpu_s": round_json(safe_ratio(len(texts), cpu[name]), 1),
            }
            for name in encoders
        }
        rec["speedup"] = round_json(safe_ratio(wall["onnx"], wall["onnx-int8"]))
        rec["cpu_ratio"] = round_json(safe_ratio(cpu["onnx"], cpu["onnx-int8"]))
        out["threads"][int(encoders["onnx"].threads)] = rec
    return out


def _torch_threads() -> int | None:
    """Intra-op threads torch uses (``None`` when torch is not importable)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - install problem
        return None
    return int(torch.get_num_threads())


def int8_comparison(
    root: Path,
    out_dir: Path,
    size: str = "m",
    arms: Sequence[str] = VECTOR_ARMS,
    speed_texts: int = 2000,
    control: bool = False,
    progress: bool = True,
) -> dict:
    """The ``onnx-int8`` backend against ``onnx`` on a finished reproduction under ``root``.

    Reads (never writes) ``root``: its config (``config/config.yaml``: ``arm_params``,
    ``embedding.batch_size``, ``report.n_boot``, ``corpus.seed``), the corpus
    ``results/corpus/<size>/``, the fp32 vectors ``results/embeddings/<size>.parquet``,
    the fp32 export ``results/cache/encoder/<model>.onnx`` and the per-query scores
    ``results/metrics/<size>/<arm>.parquet``. Into ``out_dir`` it writes: the int8 graph
    (derived beside a link to the fp32 export), the int8 vectors of every memory and query
    (one encoder thread), the arms' runs on them (untimed: no warm-up, one repeat; an
    embedded PostgreSQL per pg arm) and their scores, then ``int8_by_class.csv`` /
    ``int8_by_class.md`` (:func:`int8_class_table`) and ``int8.json``.

    Args:
        root: a repository copy holding a finished reproduction (``results/``, ``config/``).
        out_dir: the output directory (created).
        size: the corpus size.
        arms: the arms compared (each must have fp32 scores under ``root``).
        speed_texts: texts of the corpus timed by :func:`encoder_speed` (a seeded sample;
            0 times nothing, ``speed`` is then None).
        control: also rerun each arm on the fp32 vectors (column ``fp32_rerun``): a
            difference there is the arm's own run-to-run variation, not the encoder's.
        progress: show progress bars.

    Returns:
        ``speed`` (:func:`encoder_speed`), ``cosine`` (:func:`cosine_stats`: ``all``,
        ``memories``, ``queries``), ``embed`` (texts and CPU seconds of the int8 embedding)
        and ``table`` (path of the CSV); ``inside`` / ``rows``: how many (arm, class) rows
        keep the int8 nDCG@10 inside the fp32 value's interval.

    Raises:
        FileNotFoundError: when an input under ``root`` is missing.
    """
    import os

    from agentmem.config import load_config
    from agentmem.embeddings import embed_corpus, load_embeddings, set_encoder_threads
    from agentmem.encoder import quantize_onnx
    from agentmem.io import write_csv, write_json, write_text
    from agentmem.report.tables import score_run_file
    from agentmem.runner import run_arm

    root, out_dir = Path(root), Path(out_dir)
    cfg = load_config(root / "config" / "config.yaml")
    results = root / "results"
    corpus = results / "corpus" / size
    fp32_vectors = results / "embeddings" / f"{size}.parquet"
    fp32_graph = results / "cache" / "encoder" / f"{cfg.embedding.model}.onnx"
    fp32_metrics = {a: results / "metrics" / size / f"{a}.parquet" for a in arms}
    for f in [corpus / "memories.parquet", fp32_vectors, fp32_graph, *fp32_metrics.values()]:
        if not f.is_file():
            raise FileNotFoundError(f"{f} does not exist (a finished reproduction's file)")
    out_dir.mkdir(parents=True, exist_ok=True)
    # the int8 graph is derived beside the fp32 export: a link to it here keeps root untouched
    graph = out_dir / "encoder" / fp32_graph.name
    graph.parent.mkdir(parents=True, exist_ok=True)
    if not graph.exists():
        graph.symlink_to(fp32_graph.resolve())
    quantize_onnx(graph)

    mem = pl.read_parquet(corpus / "memories.parquet", columns=["body"])["body"].to_list()
    qs = pl.read_parquet(corpus / "queries.parquet", columns=["text"])["text"].to_list()
    pool = list(dict.fromkeys(mem + qs))
    rng = np.random.default_rng(cfg.corpus.seed)
    sample = [pool[i] for i in rng.permutation(len(pool))[:speed_texts]]
    speed = (
        encoder_speed(sample, graph, batch_size=cfg.embedding.batch_size, progress=progress)
        if sample
        else None
    )

    set_encoder_threads(1, "onnx-int8")
    int8_vectors = out_dir / "embeddings" / f"{size}.parquet"
    c0 = time.process_time()
    stats = embed_corpus(
        corpus,
        int8_vectors,
        out_dir / "cache",
        batch_size=cfg.embedding.batch_size,
        progress=progress,
        backend="onnx-int8",
        onnx_model=graph,
    )
    embed = {**stats, "cpu_s": round(time.process_time() - c0, 1)}
    a, b = load_embeddings(fp32_vectors), load_embeddings(int8_vectors)
    cos = (a.matrix * b.get(a.ids)).sum(axis=1)
    is_query = np.isin(a.ids, pl.read_parquet(corpus / "queries.parquet")["query_id"].to_list())
    cosine = {
        "all": cosine_stats(cos),
        "memories": cosine_stats(cos[~is_query]),
        "queries": cosine_stats(cos[is_query]),
    }

    def run(arm: str, vectors: Path, tag: str) -> Path:
        d = out_dir / tag
        run_arm(
            arm,
            dict(cfg.arm_params.get(arm, {})),
            corpus,
            vectors,
            out_dir / "stores" / arm,
            d / "runs" / f"{arm}.parquet",
            d / "builds" / f"{arm}.json",
            d / "plans" / f"{arm}.json",
            k=cfg.run.k,
            warmup=0,
            repeats=1,
            progress=progress,
        )
        scores = d / "metrics" / f"{arm}.parquet"
        score_run_file(
            d / "runs" / f"{arm}.parquet",
            corpus / "queries.parquet",
            corpus / "qrels.parquet",
            scores,
            k=cfg.run.k,
            memories=corpus / "memories.parquet",
        )
        shutil.rmtree(out_dir / "stores" / arm, ignore_errors=True)
        return scores

    int8_metrics: dict[str, Path | str] = {}
    reruns: dict[str, Path | str] = {}
    for arm in arms:
        log.info("%s on the int8 vectors ...", arm)
        int8_metrics[arm] = run(arm, int8_vectors, "int8")
        if control:
            log.info("%s on the fp32 vectors (control) ...", arm)
            reruns[arm] = run(arm, fp32_vectors, "fp32-rerun")
    table = int8_class_table(
        fp32_metrics, int8_metrics, reruns or None, n_boot=cfg.report.n_boot, seed=cfg.corpus.seed
    )
    write_csv(out_dir / "int8_by_class.csv", table)
    write_text(out_dir / "int8_by_class.md", render_int8_table(table))
    inside = table.filter(pl.col("query_class") != "all")["inside"]
    rec = {
        "root": str(root),
        "size": size,
        "arms": list(arms),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "speed": speed,
        "embed": embed,
        "cosine": cosine,
        "inside": int(inside.sum()),
        "rows": int(inside.len()),
        "table": str(out_dir / "int8_by_class.csv"),
    }
    write_json(out_dir / "int8.json", rec)
    return rec


def int8_class_table(
    fp32: dict[str, Path | str],
    int8: dict[str, Path | str],
    rerun: dict[str, Path | str] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> pl.DataFrame:
    """Per (arm, query class) nDCG@10 with fp32 and int8 vectors, judged by the bootstrap.

    The interval is the fp32 value's percentile-bootstrap 95 % interval
    (:func:`agentmem.report.stats.bootstrap_table`, the reproduction's ``bootstrap_ci.csv``
    with the same ``n_boot`` and ``seed``); ``inside`` says whether the int8 value lies in
    it (:func:`agentmem.report.stats.ci_contains`). The paired bootstrap of the per-query
    difference int8 − fp32 (:func:`agentmem.report.stats.paired_bootstrap`) adds
    ``diff_low`` / ``diff_high`` / ``p_value``.

    Args:
        fp32: arm -> per-query scores with the fp32 vectors (``results/metrics/<size>/``).
        int8: arm -> per-query scores with the int8 vectors (same arms).
        rerun: optional arm -> scores of a second fp32 run (column ``fp32_rerun``).
        n_boot: bootstrap resamples.
        seed: the bootstrap's base seed (the workflow uses ``corpus.seed``).

    Returns:
        Columns ``arm, query_class, n, fp32, int8, diff, ci_low, ci_high, inside, diff_low,
        diff_high, p_value`` (and ``fp32_rerun``); classes in study order, then ``all``.
    """
    from agentmem.report.stats import bootstrap_table, ci_contains, paired_bootstrap

    ci = bootstrap_table(fp32, n_boot=n_boot, seed=seed).filter(pl.col("metric") == "ndcg_at_10")
    tagged = {f"{arm}@int8": path for arm, path in int8.items()}
    later = bootstrap_table(tagged, n_boot=1, seed=seed).filter(pl.col("metric") == "ndcg_at_10")
    paired = paired_bootstrap(
        {**fp32, **tagged}, [(f"{arm}@int8", arm) for arm in int8], n_boot=n_boot, seed=seed
    )
    again = {}
    if rerun:
        tab = bootstrap_table(rerun, n_boot=1, seed=seed).filter(pl.col("metric") == "ndcg_at_10")
        again = {(r["arm"], r["query_class"]): r["mean"] for r in tab.iter_rows(named=True)}
    q8 = {
        (r["arm"].removesuffix("@int8"), r["query_class"]): r["mean"]
        for r in later.iter_rows(named=True)
    }
    pd = {(r["arm_b"], r["query_class"]): r for r in paired.iter_rows(named=True)}
    rows = []
    for r in ci.iter_rows(named=True):
        key = (r["arm"], r["query_class"])
        v8 = q8[key]
        row = {
            "arm": r["arm"],
            "query_class": r["query_class"],
            "n": r["n"],
            "fp32": r["mean"],
            "int8": v8,
            "diff": v8 - r["mean"],
            "ci_low": r["ci_low"],
            "ci_high": r["ci_high"],
            "inside": ci_contains(r["ci_low"], r["ci_high"], v8),
            "diff_low": pd[key]["ci_low"],
            "diff_high": pd[key]["ci_high"],
            "p_value": pd[key]["p_value"],
        }
        if rerun:
            row["fp32_rerun"] = again.get(key)
        rows.append(row)
    return pl.DataFrame(rows)


def render_int8_table(table: pl.DataFrame) -> str:
    """Markdown of :func:`int8_class_table`: nDCG@10 to 3 decimals, ``inside`` as yes / **no**."""
    cols = ["arm", "class", "fp32", "int8", "int8 − fp32", "fp32 95 % interval", "inside?"]
    cols += ["paired diff. 95 % interval", "p"]
    rerun = "fp32_rerun" in table.columns
    if rerun:
        cols.append("fp32 rerun")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table.iter_rows(named=True):
        cells = [
            r["arm"],
            r["query_class"],
            f"{r['fp32']:.3f}",
            f"{r['int8']:.3f}",
            f"{r['diff']:+.3f}",
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
            "yes" if r["inside"] else "**no**",
            f"[{r['diff_low']:+.3f}, {r['diff_high']:+.3f}]",
            f"{r['p_value']:.3f}",
        ]
        if rerun:
            cells.append("—" if r["fp32_rerun"] is None else f"{r['fp32_rerun']:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
