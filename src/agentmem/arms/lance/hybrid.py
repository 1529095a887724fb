"""``lancedb-hybrid``: the ``lancedb`` table plus LanceDB's native full-text index and hybrid query.

The body column gets LanceDB's native BM25 inverted index (``create_index("body",
config=FTS())``, default tokenizer); ``query`` runs LanceDB's hybrid search, which fuses the
cosine list and the BM25 list (``candidates`` rows each) with its default reranker,
``RRFReranker(K=60)``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.lance.arm import LanceDbArm, query_filter
from agentmem.errors import ArmError

__all__ = ["FTS_COLUMN", "LanceDbHybridArm"]

#: the column the full-text index covers
FTS_COLUMN = "body"

_log = logging.getLogger(__name__)


class LanceDbHybridArm(LanceDbArm):
    """``lancedb`` plus LanceDB's native BM25 index on ``body`` and its hybrid query.

    ``query`` runs ``table.search(query_type="hybrid").vector(vec).text(q.text)
    .distance_type("cosine").where(filter, prefilter=True).limit(n)`` with ``n = max(k,
    candidates)``: LanceDB asks the flat cosine search and the BM25 search for ``n`` rows
    each (both pre-filtered), fuses them with its default ``RRFReranker(K=60)`` and keeps
    ``n``; the arm returns the first ``k``. Beyond ``candidates`` the legs deepen with
    ``k`` and BM25 ties at a leg's cut come back in varying order, so the answer at ``k``
    is not always a prefix of the answer at a larger ``k``. Text that is empty or only
    whitespace runs the ``lancedb`` vector search alone (LanceDB refuses a hybrid query
    without text). Text LanceDB's full-text search refuses, e.g. ``""`` or ``"two words"``
    (a phrase query, which the default index without positions cannot answer), falls
    back to the vector search for that query (:attr:`fts_fallbacks` counts them). Counts
    and writes are ``lancedb``'s; rows added since the index was built are found by
    LanceDB's flat search of unindexed rows until ``table.optimize()`` folds them in.
    Memories with exactly equal vectors come out of the vector leg in row-id order
    (oldest first), and RRF treats those tie positions as ranks (docs/arms/lancedb-hybrid.md).

    Scope: in-search (pre-filter) on both legs. The hybrid builder hands its one
    ``where`` (scope AND predicate, :func:`~agentmem.arms.lance.arm.query_filter`) to the
    vector query and to the full-text query alike, each pre-filtered, so BM25 never
    brings in a memory of another scope; the vector fallback uses the same filter.

    Args:
        candidates: rows each leg of the hybrid query fetches (at least ``k``), as
            ``sqlite-hybrid``'s ``branch_k``.
        optimize_every: as :class:`~agentmem.arms.lance.arm.LanceDbArm`.

    Raises:
        ValueError: when ``candidates`` < 1 or ``optimize_every`` < 0.
    """

    name: ClassVar[str] = "lancedb-hybrid"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("candidates", "query", (), "candidates per branch before fusion"),
    )
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.vector_database(
        vector_access="brute-force", text_access="lance-fts-bm25"
    )
    prefix_stable: ClassVar[bool] = False
    # each query runs LanceDB's two searches and its Python fusion: ~20 ms of CPU on
    # LoCoMo turns, 4-5x a built-in arm's query there
    query_cost: ClassVar[float] = 4.0

    def __init__(self, candidates: int = 50, optimize_every: int = 20) -> None:
        super().__init__(optimize_every=optimize_every)
        if candidates < 1:
            raise ValueError(f"{self.name}: candidates must be >= 1, got {candidates}")
        self.candidates = int(candidates)
        #: queries whose text LanceDB's full-text search refused (answered by vector only)
        self.fts_fallbacks = 0

    def _build_indexes(self, table: Any) -> None:
        """Create LanceDB's native full-text (BM25 inverted) index on ``body``, defaults."""
        from lancedb.index import FTS

        table.create_index(FTS_COLUMN, config=FTS())

    def _check_indexes(self, table: Any, store_dir: Path) -> None:
        """Refuse a store whose table has no full-text index on ``body``."""
        indices = self._lance("list_indices", table.list_indices)
        if not any(i.index_type == "FTS" and FTS_COLUMN in i.columns for i in indices):
            raise ArmError(
                f"{self.name}: the LanceDB table under {store_dir} has no full-text index "
                f"on {FTS_COLUMN!r} (built by another arm?)"
            )

    def _hybrid_search(self, table: Any, q: base.Query, vec: np.ndarray, k: int) -> Any:
        """The hybrid query builder: cosine + BM25 on ``q.text``, pre-filtered, RRF.

        Each leg and the fused list are ``max(k, candidates)`` long. Both legs read
        ``memory_id`` alone (the scores and row ids LanceDB adds itself): the same ranking
        as all columns, for about a fifth less CPU per query (docs/arms/lancedb-hybrid.md).
        """
        builder = (
            table.search(query_type="hybrid")
            .vector(vec)
            .text(q.text)
            .distance_type("cosine")
            .select(["memory_id"])
            .limit(max(k, self.candidates))
        )
        where = query_filter(q)
        if where is not None:
            builder = builder.where(where, prefilter=True)
        return builder

    def _ranked(
        self, table: Any, q: base.Query, vec: np.ndarray, k: int, where: str | None
    ) -> list:
        """Hybrid RRF ids, or the vector search's for blank text or text FTS refuses."""
        if not q.text.strip():
            return super()._ranked(table, q, vec, k, where)
        try:
            out = self._hybrid_search(table, q, vec, k).to_arrow()
        except Exception as exc:  # noqa: BLE001 - the product's refusal of the text
            self.fts_fallbacks += 1
            _log.debug("%s: hybrid query %r fell back to vector: %s", self.name, q.query_id, exc)
            return super()._ranked(table, q, vec, k, where)
        return out.column("memory_id").to_pylist()[:k]

    def prefix_stable_to(self, k: int) -> bool:
        """True up to ``candidates``: every ``k`` up to it runs the same search of ``candidates``.

        Each leg and the fused list are ``max(k, candidates)`` long, so for ``k <=
        candidates`` the call is the same and the answer is its first ``k``.
        """
        return k <= self.candidates

    def query_many(self, queries: Sequence[base.Query], k: int) -> list[base.Result]:
        """One :meth:`query` per query: LanceDB's hybrid search takes one vector and text.

        Raises:
            ArmError: as :meth:`query`.
        """
        return [self.query(q, k) for q in queries]

    def _explain(self, table: Any, q: base.Query, vec: np.ndarray, k: int) -> str:
        """LanceDB's hybrid plan (reranker, vector plan, FTS plan), or the vector one."""
        if not q.text.strip():
            return "text is blank: vector search only\n" + super()._explain(table, q, vec, k)
        where = query_filter(q)
        builder = self._hybrid_search(table, q, vec, k)
        plan = self._lance("explain_plan", lambda: builder.explain_plan(verbose=True))
        n = max(k, self.candidates)
        call = (
            "table.search(query_type='hybrid').vector(vector).text(text)"
            f".distance_type('cosine').limit({n})"
        )
        if where is not None:
            call += f".where({where!r}, prefilter=True)"
        lines = [
            f"{call}; each leg fetches {n} rows, fused by the default reranker, first {k} "
            "kept (text LanceDB's FTS refuses falls back to the vector search)",
            plan.rstrip(),
            self._count_line(q),
        ]
        return "\n".join(line for line in lines if line)
