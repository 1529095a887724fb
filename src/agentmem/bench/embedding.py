"""Embedding throughput: the cached ``embed_texts`` path against bare ``encode``."""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from agentmem.bench.errors import BenchError
from agentmem.bench.targets import EMBEDDING_MIN_RATIO, target_met
from agentmem.bench.timing import gc_paused, median, round_json, safe_ratio


def embedding_benchmark(
    texts: Sequence[str],
    work_dir: Path,
    rounds: int = 1,
    chunk: int = 250,
    batch_size: int = 64,
    progress: bool = True,
) -> dict:
    """Time :func:`~agentmem.embeddings.embed_texts` (empty cache) against bare ``encode``.

    The model is loaded and warmed up first (outside the timing). The texts are cut into
    chunks of ``chunk``; for each chunk (and each of ``rounds`` passes) the bare
    ``SentenceTransformer.encode(chunk, batch_size, normalize_embeddings=True)`` and the
    cache path (``embed_texts`` into a new, empty cache directory) run back to back, the
    order alternating from chunk to chunk, so a change of machine speed (other load on
    the two cores) hits both sides alike.

    Args:
        texts: the texts (duplicates are removed first, so both sides encode all of them).
        work_dir: directory for the caches and outputs (created).
        rounds: passes over all chunks.
        chunk: texts per timed call.
        batch_size: encoder batch size (the config's ``embedding.batch_size``).
        progress: show a tqdm bar.

    Returns:
        ``texts``, per-call seconds of each side, ``bare_per_s`` / ``cache_per_s`` (all
        texts over the summed seconds), ``ratio`` = median over chunks of the paired
        throughput ratio (cache / bare, i.e. bare seconds / cache seconds),
        ``ratio_total`` (summed seconds, bare / cache) and the target.

    Raises:
        BenchError: when the cache path did not encode every text of a chunk.
    """
    from agentmem.embeddings import embed_texts, load_model

    uniq = list(dict.fromkeys(texts))
    work_dir.mkdir(parents=True, exist_ok=True)
    model = load_model()
    model.encode(uniq[:batch_size], batch_size=batch_size, normalize_embeddings=True)
    chunks = [uniq[i : i + chunk] for i in range(0, len(uniq), max(chunk, 1))]
    bare_s: list[float] = []
    cache_s: list[float] = []
    jobs = [(r, c) for r in range(rounds) for c in range(len(chunks))]
    for j, (r, c) in enumerate(tqdm(jobs, desc="embedding", disable=not progress, leave=False)):
        part = chunks[c]
        cache_dir = work_dir / f"cache-{r}-{c}"
        shutil.rmtree(cache_dir, ignore_errors=True)

        def bare(part: list[str] = part) -> None:
            model.encode(
                part,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )

        def cached(part: list[str] = part, cache_dir: Path = cache_dir) -> None:
            ids = [f"t{i}" for i in range(len(part))]
            out = work_dir / "out.parquet"
            stats = embed_texts(ids, part, out, cache_dir, batch_size, progress=False)
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
        "torch_threads": _torch_threads(),
        "bare_s": [round(x, 3) for x in bare_s],
        "cache_s": [round(x, 3) for x in cache_s],
        "bare_per_s": round_json(safe_ratio(n, sum(bare_s)), 1),
        "cache_per_s": round_json(safe_ratio(n, sum(cache_s)), 1),
        "ratio": round_json(ratio),
        "ratio_total": round_json(safe_ratio(sum(bare_s), sum(cache_s))),
        "target": f">= {EMBEDDING_MIN_RATIO}",
        "met": target_met(ratio, ">=", EMBEDDING_MIN_RATIO),
    }


def _torch_threads() -> int | None:
    """Intra-op threads torch uses (``None`` when torch is not importable)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - install problem
        return None
    return int(torch.get_num_threads())
