"""Generated corpora with real all-MiniLM-L6-v2 embeddings, for tests that need more than tiny.

Every helper here embeds through one embedding cache per test session
(:func:`embedding_cache`), shared by the test processes of ``make test`` and the
``agentmem check-arm`` processes they start: a text is encoded once per session. With
``$AGENTMEM_TEST_ONNX`` set (``make test`` exports the encoder once) they encode with the
ONNX backend, which never imports torch; otherwise with torch. The tests that compare the
two backends (tests/test_encoder.py) choose their own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus
from agentmem.embeddings import embed_corpus

from .workflow import ONNX_ENV

#: the size :func:`small_corpus` generates: 80 facts, 4 queries per class
SMALL = SizeConfig(facts=80, queries_per_class=4)

#: the embedding cache every test process of a session shares (``make test`` sets it;
#: conftest.py points it under the session's base temp directory when it is unset)
CACHE_ENV = "AGENTMEM_TEST_EMBEDDINGS"


def embedding_cache() -> Path:
    """The session's embedding cache directory (``$AGENTMEM_TEST_EMBEDDINGS``).

    Raises:
        RuntimeError: when the variable is unset (conftest.py sets it at session start).
    """
    d = os.environ.get(CACHE_ENV)
    if not d:
        raise RuntimeError(f"${CACHE_ENV} is unset; conftest.py sets it for the session")
    return Path(d)


def encoder_options() -> dict[str, str]:
    """Keyword arguments selecting the tests' encoder backend for the embedding functions.

    ONNX with the session's export when ``$AGENTMEM_TEST_ONNX`` names one, else torch.
    """
    onnx = os.environ.get(ONNX_ENV)
    return {"backend": "onnx", "onnx_model": onnx} if onnx else {"backend": "torch"}


def build_corpus(
    d: Path, size: SizeConfig, corpus: CorpusConfig | None = None
) -> tuple[Path, Path]:
    """Write a corpus to ``d/corpus`` and embed it into ``d/emb.parquet`` (the session cache).

    Returns:
        ``(corpus_dir, embeddings_path)``.
    """
    write_corpus(d / "corpus", size, corpus or CorpusConfig())
    embed_corpus(
        d / "corpus", d / "emb.parquet", embedding_cache(), progress=False, **encoder_options()
    )
    return d / "corpus", d / "emb.parquet"


def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The :data:`SMALL` corpus and its embeddings, built once per session and shared.

    Returns:
        ``(corpus_dir, embeddings_path)`` under the session's base temp directory.
    """
    d = tmp_path_factory.getbasetemp() / "small_corpus"
    if not (d / "emb.parquet").is_file():
        return build_corpus(d, SMALL)
    return d / "corpus", d / "emb.parquet"
