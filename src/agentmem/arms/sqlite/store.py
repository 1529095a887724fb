"""The shared machinery of the SQLite arms: connection, build, open, fetch, query, storage.

:class:`SqliteArm` holds one apsw connection to ``memory.db`` (WAL mode). Each arm
subclass supplies its ranking statement (:meth:`SqliteArm._ranking`); the rows written
are in :mod:`agentmem.arms.sqlite.rows`. Durability of ``build`` and ``remember``:
docs/arms/sqlite.md.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import apsw
import polars as pl

from agentmem.arms import base
from agentmem.arms.rows import fetch_ids
from agentmem.arms.sqlite.rows import (
    FLOAT32_VECTORS,
    VectorLayout,
    bulk_load,
    entity_rows,
    memory_rows,
    read_memories,
    write_remembered,
)
from agentmem.arms.statements import COUNT, StatementQueries
from agentmem.sql.sqlite.connection import (
    INTEGRITY_CHECK,
    connect,
    fresh_database,
    integrity_problems,
    object_sizes,
)
from agentmem.sql.sqlite.schema import DB_NAME, MEMORY_COLUMNS
from agentmem.sql.sqlite.statements import explain_statement, predicate_sql


def _family_arms() -> dict[str, type[SqliteArm]]:
    """The arms of this family by name: every named subclass of :class:`SqliteArm`.

    Plug-in arms built on :class:`SqliteArm` are among them once imported.
    """
    out: dict[str, type[SqliteArm]] = {}
    todo = list(SqliteArm.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if isinstance(cls.__dict__.get("name"), str):
            out[cls.name] = cls
    return out


class SqliteArm(StatementQueries):
    """Shared machinery of the SQLite arms: schema, build, open, count, explain, storage.

    Subclasses set the class variables and implement :meth:`_ranking` (the ranking
    statement and its bindings for a query, or ``None`` when no statement runs);
    ``query`` and the bench hooks are :class:`~agentmem.arms.statements.StatementQueries`'.

    Scope: in the search. ``scope_id`` is a column of ``memories`` (partial B-tree index
    ``memories_scope_id_idx``); a query's scope is AND-ed with its predicate in the
    ``WHERE`` of every statement it runs (each branch of the hybrid, and the count).
    """

    name: ClassVar[str]
    family: ClassVar[str] = "sqlite"
    capabilities: ClassVar[base.Capabilities]

    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "execute + fetchall of the prepared ranking (and count) statements",
        "building the SQL text and bindings per call; the id list",
    )

    #: How the store keeps its embeddings (arms with ``capabilities.vector_access``).
    vector_layout: ClassVar[VectorLayout] = FLOAT32_VECTORS

    @property
    def _uses_vectors(self) -> bool:
        """The store keeps an embedding per memory (``capabilities.vector_access``)."""
        return self.capabilities.vector_access != "none"

    @property
    def _uses_fts(self) -> bool:
        """The store keeps a full-text index (``capabilities.text_access``)."""
        return self.capabilities.text_access == "fts5-bm25"

    def __init__(self) -> None:
        self._conn: apsw.Connection | None = None
        self._path: Path | None = None

    def _db(self) -> apsw.Connection:
        """Return the open connection.

        Raises:
            ArmError: when the arm was never built/opened or has been closed.
        """
        if self._conn is None:
            raise base.ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._conn

    # ---------------------------------------------------------------------- build
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
        """Create ``store_dir/memory.db`` from scratch and leave it open.

        Rows are written in one transaction with ``executemany`` (``ingest_ms``); then the
        B-tree indexes, the FTS5 index and/or the vector table are built in a second
        transaction (``index_ms``).

        Args:
            corpus: the memories (columns of :class:`~agentmem.arms.base.Corpus`).
            vectors: float32 ``(n, 384)`` embeddings keyed by memory id (only the hybrid
                arm reads them).
            store_dir: directory for ``memory.db``; created if missing; an existing
                ``memory.db`` (and its ``-wal``/``-shm``) is replaced.

        Returns:
            Build timings in milliseconds.

        Raises:
            ArmError: on missing columns, missing embeddings or an SQLite error.
        """
        self.close()
        path = fresh_database(Path(store_dir), DB_NAME)

        mem = base.build_memories(corpus.memories, (*MEMORY_COLUMNS, "entity_ids"), self.name, path)
        rows = memory_rows(mem, 1)
        ent_rows = entity_rows(mem["memory_id"].to_list(), mem["entity_ids"].to_list())
        vec_rows: list[tuple[Any, ...]] = []
        if self._uses_vectors:
            mat = base.embedding_matrix(vectors, mem["memory_id"].to_list(), self.name, path)
            vec_rows = self.vector_layout.rows(mat, 1)

        conn = connect(path, create=True, sqlite_vec=self._uses_vectors, arm=self.name)
        self._conn, self._path = conn, path
        try:
            ingest_ms, index_ms = bulk_load(
                conn,
                rows,
                ent_rows,
                vec_rows if self._uses_vectors else None,
                application_id=self._application_id(),
                fts=self._uses_fts,
                vectors=self.vector_layout,
            )
            conn.execute("PRAGMA synchronous=FULL")  # remember: durable on return
        except apsw.Error as exc:
            self.close()
            raise base.ArmError(f"{self.name}: build of {path} failed: {exc}") from exc
        return base.BuildStats(ingest_ms=ingest_ms, index_ms=index_ms)

    # ----------------------------------------------------------------------- open
    def open(self, store_dir: Path) -> None:
        """Reopen ``store_dir/memory.db`` (read-write, never created).

        Raises:
            ArmError: naming the path when the file is missing, is not an SQLite database,
                lacks a table this arm needs, or was built by another SQLite arm (its
                ``PRAGMA application_id``, set by :meth:`build`; the message names it).
        """
        self.close()
        path = Path(store_dir) / DB_NAME
        if not path.is_file():
            raise base.ArmError(f"{self.name}: no SQLite store at {path}")
        conn = connect(path, create=False, sqlite_vec=self._uses_vectors, arm=self.name)
        need = {"memories", "memory_entities"}
        if self._uses_fts:
            need.add("memories_fts")
        if self._uses_vectors:
            need.add("memory_vectors")
        try:
            have = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema")}
        except apsw.Error as exc:
            conn.close()
            raise base.ArmError(
                f"{self.name}: {path} is not a readable SQLite database: {exc}"
            ) from exc
        built_by = conn.execute("PRAGMA application_id").fetchall()[0][0]
        if built_by not in (0, self._application_id()):
            conn.close()
            other = next(
                (n for n, c in _family_arms().items() if c._application_id() == built_by),
                f"another arm (application_id {built_by})",
            )
            raise base.ArmError(
                f"{self.name}: {path} was built by {other}; open it with that arm (writing "
                f"through {self.name} would leave that arm's indexes out of step)"
            )
        if need - have:
            conn.close()
            raise base.ArmError(f"{self.name}: {path} lacks tables {sorted(need - have)}")
        cols = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
        if set(MEMORY_COLUMNS) - cols:
            conn.close()
            raise base.ArmError(
                f"{self.name}: {path} lacks memories columns {sorted(set(MEMORY_COLUMNS) - cols)}"
                " (built by an older layout); rebuild the store"
            )
        conn.execute("PRAGMA synchronous=FULL")  # remember: durable on return
        self._conn, self._path = conn, path

    @classmethod
    def _application_id(cls) -> int:
        """The ``PRAGMA application_id`` this arm writes into its file (CRC-32 of its name)."""
        return zlib.crc32(cls.name.encode()) & 0x7FFFFFFF

    # ------------------------------------------------------------------- remember
    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Append ``memories`` (and the supersessions they make) in one durable transaction.

        The batch is validated by :func:`~agentmem.arms.base.prepare_memories`, then
        written inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``synchronous=FULL``: on disk
        when this returns): each memory gets the next integer ``id``; its
        ``memory_entities`` rows (entity ids de-duplicated, as ``build``), its FTS5 row
        and its vector row follow as the arm's layout needs; then ``superseded_by`` of
        every id in a row's ``supersedes`` list becomes that row's id (in row order, so
        the last correction of an id wins). Every value is a bound parameter; bodies
        are stored verbatim (NUL characters included).

        Args:
            memories: rows with at least ``memory_id``, ``body``, ``created_day``.
            vectors: embeddings of every new ``memory_id`` (read only by sqlite-hybrid).

        Raises:
            ArmError: naming the arm and the id when the store is not open, the batch
                is invalid, a ``memory_id`` is already stored, a superseded id is not
                stored, or SQLite fails; the transaction is rolled back then, so nothing
                of the batch is written.
        """
        conn = self._db()
        batch = base.prepare_memories(memories, vectors, self.name)
        if batch.memories.height == 0:
            return
        with self._driver_failure("remember into"):
            conn.execute("BEGIN IMMEDIATE")
            try:
                write_remembered(
                    conn,
                    batch,
                    arm=self.name,
                    path=self._path,
                    fts=self._uses_fts,
                    vectors=self.vector_layout if self._uses_vectors else None,
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the stored rows of ``memory_ids``: ``MEMORY_SCHEMA`` columns and dtypes.

        Rows come in the order asked, each id once; ids not stored are left out.
        ``entity_ids`` comes from ``memory_entities`` in insertion order (de-duplicated,
        as stored); ``form`` is not stored and is null.

        Raises:
            ValueError: when ``memory_ids`` is a single string or holds a non-string.
            ArmError: when the store is not open or SQLite fails.
        """
        conn = self._db()
        want = fetch_ids(memory_ids)
        with self._driver_failure("fetch from"):
            return read_memories(conn, want)

    # ---------------------------------------------------------------------- query
    def _ranking(self, q: base.Query, k: int) -> tuple[str, dict[str, Any]] | None:
        """Return the ranking statement and bindings for ``q``, or ``None`` (empty result)."""
        raise NotImplementedError

    def _count_sql(self, q: base.Query) -> tuple[str, dict[str, Any]]:
        """Return the exact-count statement: memories in the scope matching the predicate.

        The text plays no part; without a scope or a predicate every memory counts.
        """
        cond, params = predicate_sql(q.filters)
        return f"SELECT count(*) FROM memories AS m WHERE {cond}", params

    driver_errors = apsw.Error

    def _query_connection(self) -> apsw.Connection:
        return self._db()

    def _store_location(self) -> str:
        return str(self._path)

    def raw_ingest(self) -> base.RawIngest:
        """The raw bulk path: the memory tables read back and written in one transaction."""
        return base.RawIngest(
            "tables",
            "memory.db",
            ("memories", "memory_entities"),
            beyond="turning polars rows into tuples is outside both timings; nothing else",
        )

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Return EXPLAIN QUERY PLAN of the exact statements :meth:`query` runs for ``q``.

        Args:
            q: the query.
            k: the result size bound into ``LIMIT`` (does not change the plan shape).

        Returns:
            One block per statement (:meth:`_plan_statements`: the ranking; then the count
            when ``q.wants_count``), each an indented plan tree; a note instead when a
            statement does not run.
        """
        conn = self._db()
        parts: list[str] = []
        stmts = self._plan_statements(q, k)
        if q.wants_count:
            stmts.append((COUNT, self._count_sql(q)))
        for label, stmt in stmts:
            if stmt is None:
                parts.append(f"-- {label}: no statement runs (the text has no search terms)")
                continue
            with self._driver_failure("explain on"):
                parts.append(explain_statement(conn, label, *stmt))
        return "\n".join(parts)

    def _plan_statements(
        self, q: base.Query, k: int
    ) -> list[tuple[str, tuple[str, dict[str, Any]] | None]]:
        """The labelled statements :meth:`explain` shows before the count (``None``: none runs)."""
        return [("ranking", self._ranking(q, max(k, 1)))]

    # -------------------------------------------------------------------- storage
    def storage(self) -> base.StorageStats:
        """Return bytes per SQLite object from ``dbstat`` (after a WAL checkpoint).

        Objects are tables, indexes and FTS5 shadow tables (``sum(pgsize)`` per name);
        a non-empty ``memory.db-wal`` left after the checkpoint is added as its own entry.

        Raises:
            ArmError: when the store is not open or ``dbstat`` fails.
        """
        conn = self._db()
        with self._driver_failure("dbstat on"):
            objects = object_sizes(conn, self._path)
        return base.StorageStats(
            total_bytes=sum(objects.values()), objects=objects, source="dbstat"
        )

    def integrity_check(self) -> tuple[str, list[str]]:
        """SQLite's ``PRAGMA integrity_check`` and FTS5's ``integrity-check`` on the file.

        Raises:
            ArmError: when the store is not open or a check cannot run.
        """
        with self._driver_failure("integrity check of"):
            return INTEGRITY_CHECK, integrity_problems(self._db())

    def close(self) -> None:
        """Close the connection; safe to call twice."""
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
