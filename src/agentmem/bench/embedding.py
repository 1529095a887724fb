"""Embedding throughput and agreement of the encoder backends.

- :func:`embedding_benchmark`: the cached ``embed_texts`` path against bare ``encode``;
  torch vs ONNX vs ONNX int8 (:func:`backend_comparison`), as ``make bench`` records them.
- :func:`encoder_speed` and :func:`cosine_stats`, which :mod:`agentmem.bench.int8` also
  uses to judge the ``onnx-int8`` backend on a finished reproduction.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from agentmem.bench.errors import BenchError
from agentmem.bench.targets import EMBEDDING_MIN_RATIO, target_met
from agentmem.bench.timing import gc_paused, median, round_json, safe_ratio
from agentmem.encoder import Backend

log = logging.getLogger(__name__)


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
