"""Which labels belong to which scope: the map the vector arms filter a scoped query by.

Rebuilt from the metadata's ``scope_id`` column when a store is opened and extended by
``remember``; nothing of it is saved apart from that column (docs/arms/vector.md, Scope).
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from agentmem.arms import base


class ScopeLabels:
    """``scope_id`` -> the set of HNSW labels of the memories in that scope.

    A memory with a null ``scope_id`` is in no scope. A scope string is only a dictionary
    key here, never parsed, so no value (quotes, SQL, a filter expression) widens a filter.
    """

    def __init__(self) -> None:
        self._by_scope: dict[str, set[int]] = {}

    def add(self, start: int, scopes: Iterable[str | None]) -> None:
        """Record labels ``start, start + 1, ...`` as members of the given scopes (None: none)."""
        for label, scope in enumerate(scopes, start=start):
            if scope is not None:
                self._by_scope.setdefault(scope, set()).add(label)

    def labels(self, scope: str | None) -> set[int] | None:
        """The labels in ``scope`` (empty for an unknown scope); ``None`` when ``scope`` is None.

        The set is the map's own: callers must not change it.
        """
        if scope is None:
            return None
        return self._by_scope.get(scope, set())


def with_filter_columns(meta: pl.DataFrame) -> pl.DataFrame:
    """Return ``meta`` with every :data:`PREDICATE_FIELDS` column, adding missing ones as null.

    A corpus frame may lack an optional column (``scope_id`` of a corpus without scopes),
    and a store saved before ``scope_id`` was a memory column has none: such memories
    belong to no scope, which is what a null ``scope_id`` means.
    """
    missing = [c for c in base.PREDICATE_FIELDS if c not in meta.columns]
    return meta.with_columns(pl.lit(None, dtype=base.MEMORY_SCHEMA[c]).alias(c) for c in missing)
