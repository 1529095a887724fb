"""The pgvector HNSW arms: ``pg-hnsw`` (filtered ANN) and ``pg-hnsw-iterative`` (iterative scan)."""

from __future__ import annotations

from typing import Any, ClassVar

from psycopg import sql

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.postgres.base import PgArm, check_hnsw_build, check_positive
from agentmem.sql.postgres.queries import predicate_sql


class PgHnswArm(PgArm):
    """``pg-hnsw``: pgvector HNSW (cosine) with the predicate in ``WHERE``.

    ``SELECT memory_id FROM memories WHERE <predicate> ORDER BY embedding <=> $q LIMIT k``.
    pgvector's HNSW index scan yields at most about ``hnsw.ef_search`` rows (default 40;
    iterative scans off), and the ``WHERE`` and ``LIMIT`` act on those. So:

    * a filtered query examines only ~40 nearest candidates and then filters them, so it
      can return fewer than ``k`` ids ("underfill") — the behaviour this arm exists to
      show;
    * ``k`` above ``ef_search`` returns at most about ``ef_search`` ids, filtered or not:
      an unfiltered ``k = 50`` over 2,037 memories returned 40-43 ids on every query
      (docs/arms/postgres.md).

    :class:`PgHnswIterativeArm` fills both. The planner may skip the HNSW index and sort
    exact distances instead — for a very selective predicate or scope, or a ``LIMIT`` large
    against the table (``k = 200`` of 2,037 memories) — and then fills; EXPLAIN shows
    which. Where it shows: ``fill_at_k`` / ``short_at_k`` of the budget sweep,
    ``fill_at_10`` / ``short_at_10`` of the by-class table, ``fill_at_50`` /
    ``short_at_50`` of an external dataset's scores (its unscoped R@50 is over ~40 ids,
    marked † in the report), and one warning in the run log.
    Aggregates: ``SELECT count(*) ... WHERE <predicate>``.

    Scope: where pgvector applies the predicate — ``scope_id = $s`` AND-ed into the same
    ``WHERE``, which filters the rows the HNSW index scan yields (a post-filter of the
    index's ~``ef_search`` candidates). So a selective scope can return fewer than ``k``
    ids at the default ``ef_search`` (all of them from the scope, never another's) when
    the planner takes the HNSW path; when it estimates the scope small enough it reads
    the partial index ``memories_scope_id_idx`` and sorts exact distances instead, and
    fills. :class:`PgHnswIterativeArm` fixes the underfill on the HNSW path.

    Args:
        m: HNSW ``m`` (max neighbours per layer; pgvector default 16).
        ef_construction: HNSW build candidate list size (pgvector default 64).
        ef_search: ``hnsw.ef_search`` for queries (pgvector default 40).

    Raises:
        ValueError: for a parameter that is not a positive integer, or an ``m`` /
            ``ef_construction`` pair pgvector refuses (:func:`check_hnsw_build`).
    """

    name: ClassVar[str] = "pg-hnsw"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob(
            "ef_search",
            "query",
            (10, 20, 80, 120, 160, 240, 320),
            "hnsw.ef_search: HNSW search breadth",
        ),
        Knob("m", "build", (32,), "HNSW links per node"),
        Knob("ef_construction", "build", (), "HNSW build breadth"),
    )
    prefix_stable: ClassVar[bool] = False
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="hnsw-filtered", text_access="none"
    )

    def __init__(self, *, m: int = 16, ef_construction: int = 64, ef_search: int = 40) -> None:
        super().__init__()
        check_positive(m=m, ef_construction=ef_construction, ef_search=ef_search)
        check_hnsw_build(m, ef_construction)
        self.m = m
        self.ef_construction = ef_construction
        self.ef_search = ef_search

    def _session_settings(self) -> dict[str, str]:
        return {"hnsw.ef_search": str(self.ef_search), "hnsw.iterative_scan": "off"}

    def _ranking(self, q: base.Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        cond, params = predicate_sql(q.filters)
        stmt = sql.SQL(
            "SELECT memory_id FROM memories WHERE {} ORDER BY embedding <=> %(qv)s LIMIT %(k)s"
        ).format(cond)
        return stmt, {**params, "qv": self._query_vector(q), "k": int(k)}


class PgHnswIterativeArm(PgHnswArm):
    """``pg-hnsw-iterative``: pg-hnsw with pgvector 0.8 iterative index scans.

    Session settings ``hnsw.iterative_scan = relaxed_order`` and ``hnsw.max_scan_tuples``
    let an HNSW scan continue past ``ef_search`` candidates until ``k`` rows pass the
    predicate (or ``max_scan_tuples`` tuples were visited), so filtered queries fill their
    ``k`` slots, and so does any ``k`` above ``ef_search`` (unfiltered ``k = 50``: 50 ids,
    where :class:`PgHnswArm` returns ~40). Relaxed order may return slightly out-of-order
    rows, so the ``k`` results are re-sorted by distance in a materialized CTE, as
    pgvector's README recommends (``ORDER BY distance + 0``)::

        WITH relaxed AS MATERIALIZED (SELECT memory_id, embedding <=> $q AS distance
            FROM memories WHERE <predicate> ORDER BY distance LIMIT k)
        SELECT memory_id FROM relaxed ORDER BY distance + 0

    Scope: as in :class:`PgHnswArm` (AND-ed into the same ``WHERE``), but the iterative
    scan keeps walking the graph until ``k`` rows of the scope pass (or the tuple budget
    is spent), so a selective scope fills its ``k`` slots.

    Args:
        m: HNSW ``m`` (default 16).
        ef_construction: HNSW build list size (default 64).
        ef_search: ``hnsw.ef_search`` (default 40).
        max_scan_tuples: ``hnsw.max_scan_tuples``, the iterative scan's tuple budget
            (pgvector default 20000).
    """

    name: ClassVar[str] = "pg-hnsw-iterative"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("ef_search", "query", (20, 80), "hnsw.ef_search: HNSW search breadth"),
        Knob("max_scan_tuples", "query", (2000, 80000), "hnsw.max_scan_tuples: scan limit"),
        Knob("m", "build", (), "HNSW links per node"),
    )
    prefix_stable: ClassVar[bool] = False
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="hnsw-iterative", text_access="none"
    )

    def __init__(
        self,
        *,
        m: int = 16,
        ef_construction: int = 64,
        ef_search: int = 40,
        max_scan_tuples: int = 20000,
    ) -> None:
        super().__init__(m=m, ef_construction=ef_construction, ef_search=ef_search)
        check_positive(max_scan_tuples=max_scan_tuples)
        self.max_scan_tuples = max_scan_tuples

    def _session_settings(self) -> dict[str, str]:
        return {
            "hnsw.ef_search": str(self.ef_search),
            "hnsw.iterative_scan": "relaxed_order",
            "hnsw.max_scan_tuples": str(self.max_scan_tuples),
        }

    def _ranking(self, q: base.Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        cond, params = predicate_sql(q.filters)
        stmt = sql.SQL(
            "WITH relaxed AS MATERIALIZED ("
            "SELECT memory_id, embedding <=> %(qv)s AS distance FROM memories "
            "WHERE {} ORDER BY distance LIMIT %(k)s) "
            "SELECT memory_id FROM relaxed ORDER BY distance + 0"
        ).format(cond)
        return stmt, {**params, "qv": self._query_vector(q), "k": int(k)}
