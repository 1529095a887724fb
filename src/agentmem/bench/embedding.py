"""Embedding throughput: the cached ``embed_texts`` path against bare ``encode``; torch vs ONNX."""

from __future__ import annotations

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
    """Torch against ONNX Runtime on the same chunks of texts, alternating which goes first.

    Args:
        chunks: the texts, in timed calls.
        onnx_model: the exported ONNX model.
        batch_size: encoder batch size.
        progress: show a tqdm bar.

    Returns:
        ``torch_s`` / ``onnx_s`` and ``torch_cpu_s`` / ``onnx_cpu_s`` (wall and CPU seconds
        per call), ``torch_per_s`` / ``onnx_per_s`` (texts per wall second),
        ``onnx_speedup`` (onnx / torch texts per second), ``cpu_ratio`` (torch CPU seconds /
        ONNX CPU seconds, the figure that holds on a loaded machine), ``min_cosine`` and
        ``mean_cosine`` of each text's two vectors, and ``onnx_threads``.
    """
    from agentmem.embeddings import encoder_for

    encoders = {"torch": encoder_for("torch"), "onnx": encoder_for("onnx", onnx_model)}
    for enc in encoders.values():
        enc.encode(list(chunks[0][:batch_size]) if chunks else ["warm-up"], batch_size)
    wall: dict[str, list[float]] = {"torch": [], "onnx": []}
    cpu: dict[str, list[float]] = {"torch": [], "onnx": []}
    cosines: list[np.ndarray] = []
    for j, part in enumerate(tqdm(chunks, desc="torch vs onnx", disable=not progress, leave=False)):
        vecs: dict[str, np.ndarray] = {}
        names = ("torch", "onnx") if j % 2 == 0 else ("onnx", "torch")
        for name in names:
            with gc_paused():
                c0, t0 = time.process_time(), time.perf_counter()
                vecs[name] = encoders[name].encode(part, batch_size=batch_size)
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
        cosines.append((vecs["torch"] * vecs["onnx"]).sum(axis=1))
    n = sum(len(p) for p in chunks)
    cos = np.concatenate(cosines) if cosines else np.zeros(0, np.float32)
    torch_per_s = safe_ratio(n, sum(wall["torch"]))
    onnx_per_s = safe_ratio(n, sum(wall["onnx"]))
    return {
        "texts": n,
        "onnx_threads": getattr(encoders["onnx"], "threads", None),
        "torch_s": [round(x, 3) for x in wall["torch"]],
        "onnx_s": [round(x, 3) for x in wall["onnx"]],
        "torch_cpu_s": [round(x, 3) for x in cpu["torch"]],
        "onnx_cpu_s": [round(x, 3) for x in cpu["onnx"]],
        "torch_per_s": round_json(torch_per_s, 1),
        "onnx_per_s": round_json(onnx_per_s, 1),
        "onnx_speedup": round_json(safe_ratio(onnx_per_s, torch_per_s)),
        "cpu_ratio": round_json(safe_ratio(sum(cpu["torch"]), sum(cpu["onnx"]))),
        "min_cosine": round_json(float(cos.min()), 7) if cos.size else None,
        "mean_cosine": round_json(float(cos.mean()), 7) if cos.size else None,
    }


def _torch_threads() -> int | None:
    """Intra-op threads torch uses (``None`` when torch is not importable)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - install problem
        return None
    return int(torch.get_num_threads())
