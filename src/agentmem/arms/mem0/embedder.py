"""The embedder mem0 is given: it returns the cached vectors queued for each text."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from agentmem.types import VECTOR_DIM

__all__ = ["cached_embedder"]


def cached_embedder(dims: int = VECTOR_DIM) -> Any:
    """A mem0 embedder (``EmbeddingBase`` subclass) that returns queued cached vectors.

    ``expect(text, vector)`` queues the vector for the next ``embed(text, action)``
    call; ``embed`` pops the oldest entry and raises ``RuntimeError`` when the queue is
    empty or mem0 asks for a different text (so a vector is never given to the wrong
    memory). ``pending()`` is the queue length, ``clear()`` empties it.
    """
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.base import EmbeddingBase

    class CachedEmbedder(EmbeddingBase):
        """Returns the vector queued for the text mem0 asks to embed."""

        def __init__(self) -> None:
            super().__init__(BaseEmbedderConfig(embedding_dims=dims))
            self._queue: deque[tuple[str, list[float]]] = deque()

        def expect(self, text: str, vector: np.ndarray | list[float]) -> None:
            """Queue ``vector`` for the next ``embed(text, ...)``."""
            self._queue.append((text, np.asarray(vector, dtype=np.float32).tolist()))

        def pending(self) -> int:
            """Queued vectors not yet asked for."""
            return len(self._queue)

        def clear(self) -> None:
            """Drop every queued vector."""
            self._queue.clear()

        def embed(self, text: Any, memory_action: Any = None) -> list[float]:
            """Return the queued vector of ``text`` (384 floats)."""
            if not self._queue:
                raise RuntimeError(
                    f"mem0 asked to embed {str(text)[:60]!r} ({memory_action}) "
                    "with no cached vector queued"
                )
            want, vec = self._queue.popleft()
            if want != text:
                raise RuntimeError(
                    f"mem0 asked to embed {str(text)[:60]!r} ({memory_action}), "
                    f"the cached vector queued is for {want[:60]!r}"
                )
            return vec

    return CachedEmbedder()
