"""The synthetic corpus: world, facts, memories, sessions, queries and qrels (docs/CORPUS.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmem.corpus.io import load_corpus, load_qrels, load_queries, write_corpus

__all__ = ["load_corpus", "load_qrels", "load_queries", "write_corpus"]


def __getattr__(name: str) -> Any:
    """The names of :mod:`agentmem.corpus.io`, imported on first use.

    ``import agentmem.corpus.queries`` (for :data:`~agentmem.corpus.queries.QUERY_CLASSES`)
    then does not load the reader and writer of corpus directories.
    """
    if name in __all__:
        from agentmem.corpus import io

        return getattr(io, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
