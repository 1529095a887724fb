"""Generated corpora with real all-MiniLM-L6-v2 embeddings, for tests that need more than tiny."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus
from agentmem.embeddings import embed_corpus

#: the size :func:`small_corpus` generates: 80 facts, 4 queries per class
SMALL = SizeConfig(facts=80, queries_per_class=4)


def build_corpus(
    d: Path, size: SizeConfig, corpus: CorpusConfig | None = None
) -> tuple[Path, Path]:
    """Write a corpus to ``d/corpus`` and embed it into ``d/emb.parquet`` (cache ``d/cache``).

    Returns:
        ``(corpus_dir, embeddings_path)``.
    """
    write_corpus(d / "corpus", size, corpus or CorpusConfig())
    embed_corpus(d / "corpus", d / "emb.parquet", d / "cache", progress=False)
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
