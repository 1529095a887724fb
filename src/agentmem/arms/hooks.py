"""Optional hooks an arm offers ``make bench``: its bare driver call and raw bulk-load path.

Arms without them still run everywhere else; the bench names and skips them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from agentmem.types import Query

__all__ = ["BareCall", "BenchHooks", "IngestHooks", "QueryHooks", "RawIngest"]


@dataclass(frozen=True)
class BareCall:
    """What an arm's bare driver call does, for the harness-overhead benchmark's table.

    Attributes:
        does: what the function :meth:`BenchHooks.raw_query_call` returns does.
        beyond: what :meth:`Arm.query` does beyond it (what bounds a ratio above target).
    """

    does: str
    beyond: str


@dataclass(frozen=True)
class RawIngest:
    """An arm's raw bulk-load path, which the ingest benchmark times against ``build``.

    Attributes:
        kind: ``"jsonl"`` (one write of every serialised line), ``"hnsw"`` (metadata
            Parquet + one batch ``add_items`` + save) or ``"tables"`` (the arm's ingest
            tables read back from its store and written raw: one ``executemany``
            transaction for SQLite, ``COPY ... (FORMAT BINARY)`` for PostgreSQL).
        sqlite_file: for ``tables``, the SQLite file inside the store directory.
        sqlite_tables: for ``tables``, the SQLite tables to copy, in order.
        pg_tables: for ``tables``, the PostgreSQL tables to copy, in order.
        basis: ``"ingest"`` (compared with ``BuildStats.ingest_ms``) or
            ``"ingest+index"`` (with ``ingest_ms + index_ms``).
        beyond: what ``build`` does beyond the raw path.
        hnsw: for ``hnsw``, the arm's index parameters (``M``, ``ef_construction``,
            ``random_seed``, ``num_threads``).
    """

    kind: Literal["jsonl", "hnsw", "tables"]
    sqlite_file: str | None = None
    sqlite_tables: tuple[str, ...] = ()
    pg_tables: tuple[str, ...] = ()
    basis: Literal["ingest", "ingest+index"] = "ingest"
    beyond: str = ""
    hnsw: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class QueryHooks(Protocol):
    """An arm's bare driver call, which the harness-overhead benchmark times against ``query``.

    ``bare_call`` describes :meth:`raw_query_call`; :meth:`raw_ids` turns its output into
    the answer. Every built-in arm and every product arm has them.
    """

    bare_call: ClassVar[BareCall]

    def raw_query_call(self, q: Query, k: int) -> Callable[[], Any]:
        """Return a zero-argument function making exactly the driver calls ``query`` makes."""
        ...

    def raw_ids(self, raw: Any, k: int) -> list[str]:
        """Return the ids :meth:`Arm.query` makes of ``raw`` (the bare call's output).

        This is the post-processing ``query`` adds to the driver call (label mapping,
        post-filter, fusion, cut to ``k``): ``raw_ids(raw_query_call(q, k)(), k) ==
        query(q, k).memory_ids``, which the conformance suite checks.
        """
        ...


@runtime_checkable
class IngestHooks(Protocol):
    """An arm's raw bulk-load path, which the ingest benchmark times against ``build``.

    The arms built on files, hnswlib, SQLite or PostgreSQL tables have it; a product's
    bulk path is its own API, so the product arms do not.
    """

    def raw_ingest(self) -> RawIngest:
        """Return this arm's raw bulk-load path (parameters of this instance included)."""
        ...


@runtime_checkable
class BenchHooks(QueryHooks, IngestHooks, Protocol):
    """Every bench hook: :class:`QueryHooks` and :class:`IngestHooks`."""
