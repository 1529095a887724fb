"""Shared machinery of the Postgres arms (:class:`PgArm`): connection, build, open, query.

Each arm owns one database (:mod:`agentmem.pg`: an embedded PostgreSQL 18.3 + pgvector
0.8.2 server per store directory by default, or the external server named by
``AGENTMEM_PG_DSN``), opened through :func:`agentmem.pg.open_store` with the arm's
name. The tables are in :mod:`agentmem.sql.postgres.schema`, the bulk load in
:mod:`.ingest`, the write path in :mod:`.remember`, plans and sizes in
:mod:`agentmem.sql.postgres.catalog`; each arm class gives its
ranking statement and session settings.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
import psycopg
from psycopg import sql

from agentmem.arms import base
from agentmem.arms.postgres.ingest import bulk_load, copy_rows
from agentmem.arms.postgres.remember import fetch_rows, nul_value, write_batch
from agentmem.arms.statements import StatementQueries
from agentmem.pg import PgHandle, open_store
from agentmem.sql.postgres.catalog import (
    CONSISTENCY_CHECK,
    consistency_problems,
    explain_statements,
    relation_sizes,
)
from agentmem.sql.postgres.queries import predicate_sql
from agentmem.sql.postgres.schema import MEMORY_NAMES, index_ddl, table_ddl


def check_positive(**params: int) -> None:
    """Raise ``ValueError`` naming the first parameter that is not a positive int."""
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")


def check_hnsw_build(m: int, ef_construction: int) -> None:
    """Raise ``ValueError`` for HNSW build parameters pgvector refuses.

    pgvector's limits (its ``hnsw`` index options): ``m`` 2–100, ``ef_construction``
    4–1000 and at least ``2 * m``. Checked when the arm is made, so a configuration
    naming such a pair stops before any job runs instead of failing at build.
    """
    if not 2 <= m <= 100:
        raise ValueError(f"m must be between 2 and 100 (pgvector's limits), got {m}")
    if not 4 <= ef_construction <= 1000:
        raise ValueError(
            f"ef_construction must be between 4 and 1000 (pgvector's limits), got {ef_construction}"
        )
    if ef_construction < 2 * m:
        raise ValueError(
            f"ef_construction ({ef_construction}) must be at least 2 * m ({2 * m}), as pgvector "
            "requires"
        )


class PgArm(StatementQueries):
    """Shared machinery of the Postgres arms: schema, build, open, count, explain, storage.

    Subclasses set the class variables, :meth:`_session_settings` and :meth:`_ranking`
    (the ranking statement and its parameters, or ``None`` when no statement runs).

    Scope: ``scope_id`` is a column of ``memories`` (partial B-tree index
    ``memories_scope_id_idx``); a query's scope is AND-ed with its predicate in the
    ``WHERE`` of every statement (each branch of the hybrid, and the count). Where that
    ``WHERE`` acts follows the access path: inside the B-tree / GIN search, or after the
    HNSW index scan (pgvector post-filters; see :class:`~agentmem.arms.postgres.hnsw.PgHnswArm`).
    """

    name: ClassVar[str]
    family: ClassVar[str] = "postgres"
    capabilities: ClassVar[base.Capabilities]

    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "execute + fetchall of the statements, SQL text rendered once",
        "composing the SQL with psycopg.sql on every call; the id list",
    )

    @property
    def _uses_vectors(self) -> bool:
        """The store keeps an embedding per memory (``capabilities.vector_access``)."""
        return self.capabilities.vector_access != "none"

    @property
    def _uses_fts(self) -> bool:
        """The store keeps a full-text index (``capabilities.text_access``)."""
        return self.capabilities.text_access == "gin-tsvector"

    def __init__(self) -> None:
        self._h: PgHandle | None = None
        self._store_dir: Path | None = None

    # ----------------------------------------------------------------- connection
    def _session_settings(self) -> dict[str, str]:
        """Return session GUCs this arm sets on every connection (name -> value)."""
        return {}

    def _apply_settings(self, conn: psycopg.Connection) -> None:
        """Load pgvector (so its GUCs exist) and apply :meth:`_session_settings`, bound."""
        settings = self._session_settings()
        if any(k.startswith("hnsw.") for k in settings):
            conn.execute("SELECT '[1]'::vector")  # loads the vector library -> hnsw.* GUCs
        for key, value in settings.items():
            conn.execute("SELECT set_config(%s, %s, false)", (key, value))

    def _conn(self) -> psycopg.Connection:
        """Return the open connection.

        Raises:
            ArmError: when the arm was never built/opened or has been closed.
        """
        if self._h is None or self._h.closed:
            raise base.ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._h.conn

    def _where(self) -> str:
        """Name the store in messages: database and store directory."""
        if self._h is None:
            return str(self._store_dir)
        return f"database {self._h.database} ({self._store_dir})"

    # ---------------------------------------------------------------------- build
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
        """Create this arm's database for ``store_dir`` from scratch and leave it open.

        ``ingest_ms``: CREATE TABLE + binary COPY of ``memories`` and ``memory_entities``
        in one transaction (the ``tsv`` column, when present, is computed during COPY).
        ``index_ms``: the B-tree, GIN and HNSW indexes plus ``VACUUM (ANALYZE)`` (planner
        statistics, visibility map and hint bits, so the first timed query does not pay
        for them).

        Args:
            corpus: the memories (columns of :class:`~agentmem.arms.base.Corpus`).
            vectors: float32 ``(n, 384)`` embeddings keyed by memory id (read only by
                arms with a vector column).
            store_dir: the store directory (embedded data lives in ``store_dir/pgdata``);
                an existing database of this arm is dropped first.

        Returns:
            Build timings in milliseconds.

        Raises:
            ArmError: on missing columns or embeddings, or any PostgreSQL error (the
                message names the database and store directory).
        """
        self.close()
        store_dir = Path(store_dir)
        self._store_dir = store_dir
        mem = base.build_memories(corpus.memories, MEMORY_NAMES, self.name, store_dir)
        mat: np.ndarray | None = None
        if self._uses_vectors:
            ids = mem["memory_id"].to_list()
            mat = base.embedding_matrix(vectors, ids, self.name, store_dir)

        self._h = open_store(store_dir, self.name, create=True)
        conn = self._h.conn
        rows = copy_rows(mem, mat)
        layout = {"vectors": self._uses_vectors, "fts": self._uses_fts}
        indexes = index_ddl(
            **layout,
            m=int(getattr(self, "m", 16)),
            ef_construction=int(getattr(self, "ef_construction", 64)),
        )
        try:
            ingest_ms, index_ms = bulk_load(conn, table_ddl(**layout), rows, indexes)
            self._apply_settings(conn)
        except psycopg.Error as exc:
            where = self._where()
            self.close()
            raise base.ArmError(f"{self.name}: build of {where} failed: {exc}") from exc
        return base.BuildStats(ingest_ms=ingest_ms, index_ms=index_ms)

    # ----------------------------------------------------------------------- open
    def open(self, store_dir: Path) -> None:
        """Reopen this arm's database built earlier under ``store_dir`` (server restarted).

        Raises:
            ArmError: naming the store when it is missing, unreachable, or lacks a column
                this arm needs (e.g. a pg-btree store opened as pg-hnsw).
        """
        self.close()
        store_dir = Path(store_dir)
        self._store_dir = store_dir
        h = open_store(store_dir, self.name, create=False)
        need = set(MEMORY_NAMES)
        if self._uses_vectors:
            need.add("embedding")
        if self._uses_fts:
            need.add("tsv")
        try:
            have = {
                r[0]
                for r in h.conn.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = 'memories'"
                )
            }
            self._apply_settings(h.conn)
        except psycopg.Error as exc:
            h.close()
            raise base.ArmError(
                f"{self.name}: cannot read {h.database} ({store_dir}): {exc}"
            ) from exc
        if need - have:
            h.close()
            raise base.ArmError(
                f"{self.name}: database {h.database} ({store_dir}) lacks memories columns "
                f"{sorted(need - have)}"
            )
        self._h = h

    # ------------------------------------------------------------------- remember
    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Append ``memories`` (and the supersessions they make) in one committed transaction.

        The batch is validated by :func:`~agentmem.arms.base.prepare_memories`; then, in
        one transaction: ``INSERT`` of the memory rows (with the ``embedding`` column for
        the vector arms; ``tsv`` is generated; ``ON CONFLICT DO NOTHING RETURNING`` tells
        which ids were stored already), ``INSERT ... SELECT FROM unnest(...)`` of their
        ``memory_entities`` rows (entity ids de-duplicated, as ``build``), and one
        ``UPDATE ... FROM unnest(...)`` setting ``superseded_by`` of
        every id in a row's ``supersedes`` list to that row's id (the last correction of
        an id wins). ``COMMIT`` returns once the server has flushed the WAL (its
        ``synchronous_commit``), so the batch is durable on return and visible to every
        connection. Every value is a bound parameter.

        Args:
            memories: rows with at least ``memory_id``, ``body``, ``created_day``.
            vectors: embeddings of every new ``memory_id`` (read by the vector arms).

        Raises:
            ArmError: naming the arm and the memory when the store is not open, the batch
                is invalid, a text value holds a NUL character (PostgreSQL ``text``
                cannot), a ``memory_id`` is already stored, a superseded id is not
                stored, or PostgreSQL fails; the transaction is rolled back then, so
                nothing of the batch is written.
        """
        conn = self._conn()
        batch = base.prepare_memories(memories, vectors, self.name)
        if batch.memories.height == 0:
            return
        nul = nul_value(batch)
        if nul is not None:
            raise base.ArmError(
                f"{self.name}: remember: memory {nul[0]!r}: column {nul[1]!r} holds a NUL "
                "character, which PostgreSQL text cannot store"
            )
        with self._driver_failure("remember into"):
            with conn.transaction(), conn.cursor() as cur:
                write_batch(
                    cur,
                    batch,
                    with_vectors=self._uses_vectors,
                    name=self.name,
                    where=self._where(),
                )

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the stored rows of ``memory_ids``: :data:`MEMORY_SCHEMA` columns and dtypes.

        One ``SELECT ... WHERE memory_id = ANY(%s)``; rows come in the order asked, each
        id once; ids not stored (or holding NUL, which no stored id can) are left out.
        ``entity_ids`` is the stored array; ``form`` is not stored and is null.

        Raises:
            ValueError: when ``memory_ids`` is a single string or holds a non-string.
            ArmError: when the store is not open or PostgreSQL fails.
        """
        conn = self._conn()
        with self._driver_failure("fetch from"):
            return fetch_rows(conn, memory_ids)

    # ---------------------------------------------------------------------- query
    def _ranking(self, q: base.Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        """Return the ranking statement and parameters for ``q``, or ``None`` (no ids)."""
        raise NotImplementedError

    def _count_sql(self, q: base.Query) -> tuple[sql.Composable, dict[str, Any]]:
        """Return the exact-count statement: memories in the scope matching the predicate.

        The text plays no part; without a scope or a predicate every memory counts.
        """
        cond, params = predicate_sql(q.filters)
        return sql.SQL("SELECT count(*) FROM memories WHERE {}").format(cond), params

    def _query_vector(self, q: base.Query) -> np.ndarray:
        """Return the query embedding as float32 ``(384,)``.

        Raises:
            ArmError: when the embedding is missing or not of size 384.
        """
        v = base.checked_vector(q.embedding, self.name, f"query {q.query_id!r}", base.VECTOR_DIM)
        return v

    driver_errors = psycopg.Error

    def _query_connection(self) -> psycopg.Connection:
        return self._conn()

    def _store_location(self) -> str:
        return self._where()

    def _statement_text(self, conn: psycopg.Connection, stmt: sql.Composable) -> str:
        """The SQL text psycopg sends for ``stmt`` (``Composable.as_string``)."""
        return stmt.as_string(conn)

    def raw_ingest(self) -> base.RawIngest:
        """The raw bulk path: the memory tables read back and ``COPY``-ed in binary."""
        return base.RawIngest(
            "tables",
            pg_tables=("memories", "memory_entities"),
            beyond="nothing: rows leave polars before the clock starts, as in the raw path",
        )

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Return ``EXPLAIN (FORMAT JSON, SETTINGS)`` of the statements :meth:`query` runs.

        Args:
            q: the query.
            k: the result size bound into ``LIMIT``.

        Returns:
            JSON text: a list with one object per statement (ranking, then count when
            ``q.wants_count``). Each is PostgreSQL's own EXPLAIN object (``"Plan"``, ...)
            plus ``"Statement"`` (label), ``"Query Text"`` (the SQL with placeholders) and
            ``"Session Settings"`` (the arm's GUCs, e.g. ``hnsw.ef_search``); a ranking
            statement that does not run (no search terms) appears as a ``"Note"``.

        Raises:
            ArmError: when the store is not open or EXPLAIN fails.
        """
        conn = self._conn()
        with self._driver_failure("explain on"):
            plans = explain_statements(
                conn, self._query_statements(q, max(k, 1)), self._session_settings()
            )
        return json.dumps(plans, indent=2)

    # -------------------------------------------------------------------- storage
    def storage(self) -> base.StorageStats:
        """Return bytes per relation of this store from PostgreSQL's own accounting.

        Objects: each table's heap (``pg_table_size`` minus its TOAST), its TOAST table
        with the TOAST index (``"<table> (toast)"``, ``pg_total_relation_size`` of
        ``reltoastrelid``) and each index (``pg_total_relation_size``), found in
        ``pg_class`` / ``pg_index`` for the tables of the current schema. The total equals
        the sum of ``pg_total_relation_size`` over the tables.

        Raises:
            ArmError: when the store is not open or the catalog query fails.
        """
        conn = self._conn()
        with self._driver_failure("storage query on"):
            objects = relation_sizes(conn)
        return base.StorageStats(
            total_bytes=sum(objects.values()), objects=objects, source="pg_total_relation_size"
        )

    def integrity_check(self) -> tuple[str, list[str]]:
        """Heap and B-tree agree, ids are distinct, supersession links resolve.

        Raises:
            ArmError: when the store is not open or a check query fails.
        """
        with self._driver_failure("integrity check of"):
            return CONSISTENCY_CHECK, consistency_problems(self._conn())

    def close(self) -> None:
        """Close the connection and stop the embedded server if this was its last user.

        Safe to call twice.
        """
        h, self._h = self._h, None
        if h is not None:
            h.close()
