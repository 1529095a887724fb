"""Retrieval of the three-tier arm: one statement per tier list, RRF fusion, counts, plans.

The lists each tier contributes are described on
:class:`~agentmem.arms.three_tier.ThreeTierArm`; :func:`rrf_fuse` fuses them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import apsw
import psycopg
from psycopg import sql

from agentmem.arms import base
from agentmem.arms.context import TIERS
from agentmem.arms.three_tier.records import elapsed_ms
from agentmem.arms.three_tier.store import TierStore
from agentmem.sql.postgres.queries import PredicateShape, condition_sql, predicate_parts, rendered
from agentmem.sql.sqlite.statements import format_plan, predicate_sql as sqlite_predicate_sql
from agentmem.text import fts5_match, is_utf8, query_terms


@dataclass(frozen=True)
class _Stmt:
    """One statement a query runs: tier, label, engine, SQL text, bindings."""

    tier: str
    label: str
    engine: str  # "sqlite" | "postgres"
    text: Any  # str for SQLite, sql.Composable for PostgreSQL
    params: dict[str, Any]


def _newest_key(day: Any, seq: Any) -> tuple[float, float]:
    """Sort key component for "newest first" that tolerates ``None``."""
    return (
        -(float(day) if day is not None else -math.inf),
        -(float(seq) if seq is not None else -math.inf),
    )


def rrf_fuse(lists: Iterable[list[tuple[str, Any, Any]]], rrf_k: int) -> list[tuple[str, float]]:
    """Fuse ranked lists by Reciprocal Rank Fusion (Cormack, Clarke & Buettcher 2009).

    ``score(d) = sum over lists containing d of 1 / (rrf_k + rank(d))``, ranks from 1.
    A list naming an id twice counts its first (best) rank only.

    Args:
        lists: ranked lists of ``(memory_id, created_day, seq)``, best first.
        rrf_k: the RRF constant (60 in the paper).

    Returns:
        ``(memory_id, score)`` best first; ties newest first (larger ``created_day``,
        then larger ``seq``), then by id.
    """
    score: dict[str, float] = {}
    when: dict[str, tuple[Any, Any]] = {}
    for ranked in lists:
        seen: set[str] = set()
        for rank, (mid, day, seq) in enumerate(ranked, start=1):
            if mid in seen:
                continue
            seen.add(mid)
            score[mid] = score.get(mid, 0.0) + 1.0 / (rrf_k + rank)
            when.setdefault(mid, (day, seq))
    order = sorted(score, key=lambda m: (-score[m], *_newest_key(*when[m]), m))
    return [(m, score[m]) for m in order]


@lru_cache(maxsize=256)
def _l3_ranking_sql(shape: PredicateShape) -> sql.SQL:
    """The L3 vector tier's ranking statement for a filter shape, rendered once."""
    return rendered(
        sql.SQL(
            "SELECT memory_id, created_day, seq FROM l3_memories WHERE {} "
            "ORDER BY embedding <=> %(qv)s LIMIT %(bk)s"
        ).format(condition_sql(shape))
    )


@lru_cache(maxsize=256)
def _l3_count_sql(shape: PredicateShape) -> sql.SQL:
    """The L1 ∪ L3 count statement for a filter shape, rendered once."""
    return rendered(
        sql.SQL(
            "SELECT count(*) FROM (SELECT memory_id FROM l3_memories WHERE {} "
            "UNION SELECT unnest(%(l1)s::text[])) AS u"
        ).format(condition_sql(shape))
    )


class RetrievalMixin(TierStore):
    """``query``, bench hooks, ``explain`` of :class:`~agentmem.arms.three_tier.ThreeTierArm`.

    Subclasses :class:`~agentmem.arms.three_tier.store.TierStore`, whose state it uses.
    """

    def _statements(self, q: base.Query, k: int) -> list[_Stmt]:
        """Return the ranking statements :meth:`query` runs (keyword ones only with terms)."""
        cond, params = sqlite_predicate_sql(q.filters)
        pshape, pparams = predicate_parts(q.filters)
        match = fts5_match(q.text)
        bk = max(int(self.branch_k), 1)
        out: list[_Stmt] = []
        if match is not None:
            out.append(
                _Stmt(
                    "L1",
                    "L1 keyword",
                    "sqlite",
                    "SELECT m.memory_id, m.created_day, m.seq FROM l1_fts "
                    "JOIN l1_turns AS m ON m.id = l1_fts.rowid "
                    f"WHERE l1_fts MATCH :match AND {cond} "
                    "ORDER BY bm25(l1_fts), m.created_day DESC, m.seq DESC LIMIT :bk",
                    {**params, "match": match, "bk": bk},
                )
            )
        if self.recent_k > 0:
            out.append(
                _Stmt(
                    "L1",
                    "L1 recency",
                    "sqlite",
                    f"SELECT m.memory_id, m.created_day, m.seq FROM l1_turns AS m WHERE {cond} "
                    "ORDER BY m.created_day DESC, m.seq DESC LIMIT :rk",
                    {**params, "rk": int(self.recent_k)},
                )
            )
        if match is not None:
            terms = query_terms(q.text)
            hits = " + ".join(f"(instr(lower(m.excerpt), :t{i}) > 0)" for i in range(len(terms)))
            scoped, sparams = "", {}
            if q.scope is not None:  # search the scope's summaries only
                # a join, not "rowid IN (subquery)": FTS5 would rerun the MATCH per rowid
                scoped = (
                    " JOIN l2_nodes AS n ON n.node_id = l2_fts.rowid "
                    "WHERE l2_fts MATCH :match AND n.scope_id = :scope"
                )
                # a scope that is not UTF-8 is no node's (bound as NULL, as the filters bind it)
                sparams = {"scope": q.scope if is_utf8(q.scope) else None}
            out.append(
                _Stmt(
                    "L2",
                    "L2 summaries",
                    "sqlite",
                    "WITH nodes AS (SELECT l2_fts.rowid AS node_id, bm25(l2_fts) AS score "
                    f"FROM l2_fts{scoped or ' WHERE l2_fts MATCH :match'} "
                    "ORDER BY score, l2_fts.rowid DESC LIMIT :nk) "
                    "SELECT m.memory_id, m.created_day, m.seq FROM nodes "
                    "JOIN l2_covers AS m ON m.node_id = nodes.node_id "
                    f"WHERE {cond} "
                    f"ORDER BY ({hits}) DESC, nodes.score, nodes.node_id DESC, "
                    "m.created_day DESC, m.seq DESC LIMIT :bk",
                    {
                        **params,
                        **sparams,
                        **{f"t{i}": t for i, t in enumerate(terms)},
                        "match": match,
                        "nk": int(self.l2_search_nodes),
                        "bk": bk,
                    },
                )
            )
        out.append(
            _Stmt(
                "L3",
                "L3 vector",
                "postgres",
                _l3_ranking_sql(pshape),
                {**pparams, "qv": self._vector(q.embedding, f"query {q.query_id!r}"), "bk": bk},
            )
        )
        return out

    def _count_statements(self, q: base.Query) -> tuple[_Stmt, Callable[[list[str]], _Stmt]]:
        """Return the L1 id statement and a builder of the L1 ∪ L3 count statement."""
        cond, params = sqlite_predicate_sql(q.filters)
        pshape, pparams = predicate_parts(q.filters)
        l1 = _Stmt(
            "L1",
            "count: L1 ids",
            "sqlite",
            f"SELECT m.memory_id FROM l1_turns AS m WHERE {cond}",
            params,
        )

        def union(l1_ids: list[str]) -> _Stmt:
            return _Stmt(
                "L3",
                "count: L1 ∪ L3",
                "postgres",
                _l3_count_sql(pshape),
                {**pparams, "l1": l1_ids},
            )

        return l1, union

    def _run(self, st: _Stmt) -> list[tuple[Any, ...]]:
        """Execute one statement on its engine and return all rows."""
        if st.engine == "sqlite":
            return self._sqlite().execute(st.text, st.params).fetchall()
        return self._pg().execute(st.text, st.params).fetchall()

    def query(self, q: base.Query, k: int) -> base.Result:
        """Return at most ``k`` memory ids fused over the three tiers, plus the count if wanted.

        See the class docstring for the lists and the fusion. Per-tier wall time of this
        call is left in :attr:`last_latency_ms` (``"L1"``, ``"L2"``, ``"L3"``, ``"fuse"``,
        and ``"count"`` when counting).

        Raises:
            ArmError: when the store is not open, the query embedding is bad, or an engine
                fails; hostile text itself never raises.
        """
        self._sqlite()
        self._pg()
        lat = {t: 0.0 for t in TIERS}
        ids: list[str] = []
        count: int | None = None
        try:
            if k > 0:
                lists: list[list[tuple[str, Any, Any]]] = []
                for st in self._statements(q, k):
                    t0 = time.perf_counter()
                    lists.append(self._run(st))  # rows (memory_id, created_day, seq)
                    lat[st.tier] += elapsed_ms(t0)
                t0 = time.perf_counter()
                ids = [m for m, _ in rrf_fuse(lists, self.rrf_k)[:k]]
                lat["fuse"] = elapsed_ms(t0)
            if q.wants_count:
                t0 = time.perf_counter()
                l1, union = self._count_statements(q)
                l1_ids = [r[0] for r in self._run(l1)]
                count = int(self._run(union(l1_ids))[0][0])
                lat["count"] = elapsed_ms(t0)
        except (apsw.Error, psycopg.Error) as exc:
            raise base.ArmError(
                f"{self.name}: query {q.query_id!r} on {self._where()} failed: {exc}"
            ) from exc
        self.last_latency_ms = lat
        return base.Result(memory_ids=ids[:k], count=count)

    def raw_query_call(
        self, q: base.Query, k: int
    ) -> Callable[[], tuple[list[list[Any]], list[list[Any]]]]:
        """Return a zero-argument function making exactly the driver calls :meth:`query` makes.

        The tier statements (:meth:`_statements`) and the count statements are built here,
        once (PostgreSQL ones rendered to their SQL text); each call of the returned
        function only executes them on their engines (SQLite, PostgreSQL) and fetches every
        row, passing the L1 ids read by the count's first statement to its second. No RRF
        fusion (:meth:`raw_ids` does it), no per-tier timing. The harness-overhead
        benchmark (:mod:`agentmem.bench`) times it against :meth:`query`.

        Returns:
            A function returning ``(ranked, counted)``: one list of rows per tier
            statement, then one per count statement (empty unless ``q.wants_count``).

        Raises:
            ArmError: when the store is not open or the query embedding is bad.
        """
        db, conn = self._sqlite(), self._pg()

        def bare(st: _Stmt) -> tuple[bool, Any, dict[str, Any]]:
            pg = st.engine != "sqlite"
            return pg, (st.text.as_string(conn) if pg else st.text), st.params

        stmts = [bare(st) for st in self._statements(q, k)] if k > 0 else []
        count: tuple[Any, Any] | None = None
        if q.wants_count:
            l1, union = self._count_statements(q)
            count = (bare(l1), bare(union([])))

        def call() -> tuple[list[list[Any]], list[list[Any]]]:
            out = [
                (conn if pg else db).execute(text, params).fetchall() for pg, text, params in stmts
            ]
            counted: list[list[Any]] = []
            if count is not None:
                (_, l1_text, l1_params), (_, u_text, u_params) = count
                l1_rows = db.execute(l1_text, l1_params).fetchall()
                counted.append(l1_rows)
                u_rows = conn.execute(u_text, {**u_params, "l1": [r[0] for r in l1_rows]})
                counted.append(u_rows.fetchall())
            return out, counted

        return call

    def raw_ids(self, raw: tuple[list[list[Any]], list[list[Any]]], k: int) -> list[str]:
        """The ids :meth:`query` makes of the bare call's rows: RRF over the tier lists, top ``k``.

        Args:
            raw: ``(ranked, counted)`` from the function :meth:`raw_query_call` returned.
            k: the result length the call was made for.

        Returns:
            At most ``k`` memory ids, best first (:func:`rrf_fuse` with ``rrf_k``).
        """
        if k <= 0:
            return []
        lists = [[(r[0], r[1], r[2]) for r in rows] for rows in raw[0]]
        return [m for m, _ in rrf_fuse(lists, self.rrf_k)[:k]]

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Return the real plans of every statement :meth:`query` runs for ``q``.

        SQLite statements get ``EXPLAIN QUERY PLAN`` (an indented tree); PostgreSQL ones
        ``EXPLAIN (FORMAT JSON, SETTINGS)`` (JSON), preceded by the session's ``hnsw.*``
        settings (``SETTINGS`` lists only non-default ones). The count's
        PostgreSQL statement is explained with the L1 ids the SQLite statement returns.

        Args:
            q: the query.
            k: the result size (does not change the plans).

        Returns:
            One block per statement: ``-- <label> [<engine>]: <SQL>`` then the plan.

        Raises:
            ArmError: when the store is not open or EXPLAIN fails.
        """
        db, conn = self._sqlite(), self._pg()
        stmts = self._statements(q, max(k, 1))
        if fts5_match(q.text) is None:
            note = "-- L1 keyword, L2 summaries: no statement runs (the text has no terms)"
        else:
            note = ""
        parts = [note] if note else []
        try:
            count_l1: _Stmt | None = None
            union: Callable[[list[str]], _Stmt] | None = None
            if q.wants_count:
                count_l1, union = self._count_statements(q)
                stmts.append(count_l1)
            for st in stmts:
                parts.append(self._explain_one(db, conn, st))
            if count_l1 is not None and union is not None:
                l1_ids = [r[0] for r in self._run(count_l1)]
                parts.append(self._explain_one(db, conn, union(l1_ids)))
        except (apsw.Error, psycopg.Error) as exc:
            raise base.ArmError(f"{self.name}: explain on {self._where()} failed: {exc}") from exc
        return "\n\n".join(parts)

    def _explain_one(self, db: apsw.Connection, conn: psycopg.Connection, st: _Stmt) -> str:
        """Return one statement's header line and engine plan."""
        if st.engine == "sqlite":
            rows = db.execute("EXPLAIN QUERY PLAN " + st.text, st.params).fetchall()
            return f"-- {st.label} [sqlite]: {' '.join(st.text.split())}\n{format_plan(rows)}"
        row = conn.execute(
            sql.SQL("EXPLAIN (FORMAT JSON, SETTINGS) ") + st.text, st.params
        ).fetchone()
        doc = row[0] if row is not None else []
        if isinstance(doc, str):
            doc = json.loads(doc)
        text = st.text.as_string(conn)
        settings = {
            key: conn.execute("SELECT current_setting(%s)", (key,)).fetchone()[0]  # type: ignore[index]
            for key in ("hnsw.ef_search", "hnsw.iterative_scan")
        }
        return (
            f"-- {st.label} [postgres]: {' '.join(text.split())}\n"
            f"-- session settings: {json.dumps(settings)}\n{json.dumps(doc, indent=2)}"
        )
