"""The statement scaffold of the SQL arms: ``query``, ``raw_query_call`` and ``raw_ids``.

An arm that answers a query with labelled SQL statements (the ranking, then the exact
count when ``q.wants_count``) subclasses :class:`StatementQueries` and declares where its
statements come from; the query loop, the harness's bare call and the error that names
arm, query and store are written once, here, for the SQLite, PostgreSQL and graph arms
alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agentmem.arms import base

Statement = tuple[Any, Any]
"""One statement and its bindings: ``(sql, params)``; ``sql`` is text or a psycopg
``Composable``."""

COUNT = "count"
"""The label of the exact-count statement; every other label ranks."""


class StatementQueries(base.ArmBase):
    """``query``, ``raw_query_call`` and ``raw_ids`` over an arm's labelled statements.

    The arm provides :meth:`_ranking`, :meth:`_count_sql`, :meth:`_query_connection`,
    :meth:`_store_location` and :attr:`driver_errors`; an arm whose statements are
    psycopg ``Composable`` objects also overrides :meth:`_statement_text`. An
    :class:`~agentmem.arms.base.ArmBase`, so these methods hold the instance's lock and
    keep the exception contract as every arm method does.
    """

    name: str
    #: the driver's error class(es), turned into :class:`ArmError` by :meth:`query`
    driver_errors: type[Exception] | tuple[type[Exception], ...] = ()
    #: the ranking statement's label (in ``explain``)
    ranking_label: str = "ranking"

    def _ranking(self, q: base.Query, k: int) -> Statement | None:
        """The ranking statement for ``q`` at ``k >= 1``, or None when none runs."""
        raise NotImplementedError

    def _count_sql(self, q: base.Query) -> Statement:
        """The exact-count statement for ``q`` (its filters; the text plays no part)."""
        raise NotImplementedError

    def _query_statements(self, q: base.Query, k: int) -> list[tuple[str, Statement | None]]:
        """``[(label, (sql, params) | None), ...]`` in the order :meth:`query` runs them.

        The ranking (:meth:`_ranking`; None when ``k <= 0`` or it does not run, e.g. no
        search terms), then ``("count", ...)`` (:meth:`_count_sql`) when
        ``q.wants_count``.
        """
        out = [(self.ranking_label, self._ranking(q, k) if k > 0 else None)]
        if q.wants_count:
            out.append((COUNT, self._count_sql(q)))
        return out

    def _query_connection(self) -> Any:
        """The open connection queries run on (``execute(sql, params).fetchall()``).

        Raises:
            ArmError: when the store is not open.
        """
        raise NotImplementedError

    def _store_location(self) -> str:
        """Where the store is, for error messages (a file, a server and database)."""
        raise NotImplementedError

    @contextmanager
    def _driver_failure(self, action: str) -> Iterator[None]:
        """Turn a driver error inside the block into an :class:`ArmError`.

        The message reads ``"{arm}: {action} {store location} failed: {error}"``, e.g.
        ``action="fetch from"``; the driver's error is its cause.

        Raises:
            ArmError: on any of :attr:`driver_errors` raised inside the block.
        """
        try:
            yield
        except self.driver_errors as exc:
            raise self._driver_error(action, exc) from exc

    def _driver_error(self, action: str, exc: Exception) -> base.ArmError:
        """The :class:`ArmError` :meth:`_driver_failure` raises for ``exc`` during ``action``."""
        return base.ArmError(f"{self.name}: {action} {self._store_location()} failed: {exc}")

    def _statement_text(self, conn: Any, sql: Any) -> Any:
        """``sql`` as the driver is sent it, rendered once for :meth:`raw_query_call`."""
        return sql

    def query(self, q: base.Query, k: int) -> base.Result:
        """Return at most ``k`` memory ids best first, plus the exact count if wanted.

        Runs :meth:`_query_statements` in order: a ranking statement's first column gives
        the ids, the count statement's single value ``Result.count``. A statement that
        does not run (None) contributes nothing, so hostile text never raises.

        Raises:
            ArmError: when the store is not open, or on a driver error (naming the arm,
                the query and the store).
        """
        conn = self._query_connection()
        ids: list[str] = []
        count: int | None = None
        # try/except inline, not _driver_failure: the message is built only on failure
        try:
            for label, stmt in self._query_statements(q, k):
                if stmt is None:
                    continue
                rows = conn.execute(*stmt).fetchall()
                if label == COUNT:
                    count = int(rows[0][0])
                else:
                    ids = [r[0] for r in rows]
        except self.driver_errors as exc:
            raise self._driver_error(f"query {q.query_id!r} on", exc) from exc
        return base.Result(memory_ids=ids[:k], count=count)

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], list[list[Any]]]:
        """Return a zero-argument function making exactly the driver calls :meth:`query` makes.

        The statements are built (and rendered to the text the driver sends) here, once;
        each call of the returned function only runs ``conn.execute(sql, params)`` for each
        and fetches every row, with no result handling. The harness-overhead benchmark
        (:mod:`agentmem.bench`) times it against :meth:`query`.

        Returns:
            A function returning one list of rows per statement: the ranking's rows first
            (``[]`` when no ranking statement runs), then the count's when ``q.wants_count``.

        Raises:
            ArmError: when the store is not open.
        """
        conn = self._query_connection()
        stmts = [
            None if s is None else (self._statement_text(conn, s[0]), s[1])
            for _, s in self._query_statements(q, k)
        ]

        def call() -> list[list[Any]]:
            return [conn.execute(*s).fetchall() if s is not None else [] for s in stmts]

        return call

    def raw_ids(self, raw: list[list[Any]], k: int) -> list[str]:
        """Return the ids :meth:`query` makes of ``raw`` (:meth:`raw_query_call`'s output).

        The ranking rows' first column, cut to ``k``.
        """
        return [r[0] for r in raw[0]][: max(k, 0)] if raw else []
