"""The embed function handed to LangGraph's ``PostgresStore``: our cached vectors, by text.

``PostgresStore`` embeds text itself: a put embeds each item's ``body`` field, a search
embeds its ``query`` string, both through ``index["embed"]`` called with a list of
strings. :class:`CachedVectors` is that function. Before each ``store.batch`` /
``store.search`` the arm *stages* the vectors it wants used (a memory's cached MiniLM
vector under its body, a query's embedding under its text); the call pops them back in
the order the store asks, so two memories with the same body keep their own vectors.
Nothing is computed: a text that was not staged is an error, never an embedding.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

import numpy as np

from agentmem.errors import ArmError


class CachedVectors:
    """A callable ``texts -> vectors`` for ``PostgresStore(index={"embed": ...})``.

    Returns float32 numpy arrays of shape ``(384,)``: the store binds them as statement
    parameters, and the store's connection has pgvector's psycopg adapters registered,
    so they travel as binary ``vector`` values (a Python list would be sent as
    ``float8[]`` and cast, about nine times slower at build).
    """

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._pending: dict[str, deque[np.ndarray]] = {}

    def stage(self, texts: Iterable[str], vectors: Sequence[np.ndarray] | np.ndarray) -> None:
        """Queue ``vectors[i]`` to be returned when the store embeds ``texts[i]``.

        Args:
            texts: the strings the store will embed (bodies, or one query text).
            vectors: one float32 ``(384,)`` row per text, in the same order.
        """
        for text, vec in zip(texts, vectors, strict=True):
            self._pending.setdefault(text, deque()).append(vec)

    def clear(self) -> None:
        """Drop every staged vector (after a call, whether it succeeded or not)."""
        self._pending.clear()

    def __call__(self, texts: list[str]) -> list[np.ndarray]:
        """Return the staged vector of each text, first staged first.

        Raises:
            ArmError: when the store asks for a text no vector was staged for (the arm
                never lets the product compute an embedding).
        """
        out: list[np.ndarray] = []
        for text in texts:
            queue = self._pending.get(text)
            if not queue:
                raise ArmError(
                    f"{self._owner}: PostgresStore asked to embed a text with no cached "
                    f"vector: {text[:60]!r}"
                )
            out.append(queue.popleft())
        return out
