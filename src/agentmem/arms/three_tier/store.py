"""The stores behind the three-tier arm: SQLite (L1, L2) and PostgreSQL (L3) connections.

:class:`TierStore` is the base of :class:`~agentmem.arms.three_tier.ThreeTierArm` and of
its mixins: opening and creating both engines' stores, the L1 totals and L3 inserts the
write paths share, and the accounting (:meth:`TierStore.tier_stats`,
:meth:`TierStore.storage`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, ClassVar

import apsw
import numpy as np
import psycopg
from psycopg import sql

from agentmem.arms import base
from agentmem.arms.three_tier.schema import (
    DB_NAME,
    L3_NAMES,
    LAYOUT_VERSION,
    SQLITE_SCHEMA,
    pg_index_ddl,
    pg_table_ddl,
)
from agentmem.pg import PgError, PgHandle, open_store
from agentmem.sql.postgres.catalog import consistency_problems, relation_sizes
from agentmem.sql.sqlite.connection import fresh_database, integrity_problems
from agentmem.summarise import Summariser, make_summariser


class TierStore(base.ArmBase):
    """Connections and accounting shared by :class:`~agentmem.arms.three_tier.ThreeTierArm`.

    The arm class sets the parameters (its constructor documents them) and the state
    below; subclassing :class:`~agentmem.arms.base.ArmBase` here gives the mixins'
    public methods the same lock and exception contract as the arm's own.
    """

    name: ClassVar[str]
    l1_max_tokens: int
    compact_fraction: float
    summary_tokens: int
    summariser: str
    recent_k: int
    branch_k: int
    l2_search_nodes: int
    l2_context_nodes: int
    rrf_k: int
    m: int
    ef_construction: int
    ef_search: int
    _summariser: Summariser | None
    _db: apsw.Connection | None
    _h: PgHandle | None
    _store_dir: Path | None

    # ------------------------------------------------------------------ properties
    @property
    def l1_target_tokens(self) -> int:
        """Tokens L1 is compacted down to: ``floor((1 - compact_fraction) * l1_max_tokens)``."""
        return math.floor((1.0 - self.compact_fraction) * self.l1_max_tokens + 1e-9)

    def _summ(self) -> Summariser:
        """Return the summariser, constructing it on first use (``openai`` reads env here)."""
        if self._summariser is None:
            self._summariser = make_summariser(self.summariser)
        return self._summariser

    def _layout(self) -> dict[str, str]:
        """Return the layout parameters as stored in ``meta``."""
        return {
            "layout_version": LAYOUT_VERSION,
            "l1_max_tokens": str(self.l1_max_tokens),
            "compact_fraction": repr(self.compact_fraction),
            "summary_tokens": str(self.summary_tokens),
            "summariser": self.summariser,
        }

    # ------------------------------------------------------------------ connections
    def _sqlite(self) -> apsw.Connection:
        """Return the open SQLite connection.

        Raises:
            ArmError: when the store was never built/created/opened or is closed.
        """
        if self._db is None:
            raise base.ArmError(
                f"{self.name}: store is not open (call build(), create() or open())"
            )
        return self._db

    def _pg(self) -> psycopg.Connection:
        """Return the open PostgreSQL connection.

        Raises:
            ArmError: when the store was never built/created/opened or is closed.
        """
        if self._h is None or self._h.closed:
            raise base.ArmError(
                f"{self.name}: store is not open (call build(), create() or open())"
            )
        return self._h.conn

    def _where(self) -> str:
        """Name the store in messages."""
        db = f", database {self._h.database}" if self._h is not None else ""
        return f"{self._store_dir}{db}"

    def _connect_sqlite(self, path: Path, *, create: bool) -> apsw.Connection:
        """Open ``path`` read-write (WAL, ``synchronous=NORMAL``); create it with ``create``.

        Raises:
            ArmError: naming ``path`` when SQLite cannot open it.
        """
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
        conn: apsw.Connection | None = None
        try:
            conn = apsw.Connection(str(path), flags=flags)
            if create:
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("PRAGMA synchronous=NORMAL")
        except apsw.Error as exc:
            if conn is not None:
                conn.close()
            raise base.ArmError(f"{self.name}: cannot open SQLite store {path}: {exc}") from exc
        return conn

    def _apply_pg_settings(self, conn: psycopg.Connection) -> None:
        """Load pgvector (its GUCs) and set ``hnsw.ef_search``; iterative scans off."""
        conn.execute("SELECT '[1]'::vector")
        conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(self.ef_search),))
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'off', false)")

    # ------------------------------------------------------------------ create
    def _create_stores(self, store_dir: Path, *, pg_indexes: bool) -> None:
        """Create fresh, empty L1/L2 (SQLite) and L3 (PostgreSQL) stores and open them.

        Args:
            store_dir: the store directory (created); an existing ``tiers.db`` and this
                arm's database are replaced.
            pg_indexes: create L3's indexes now (``create``) or after a bulk load (``build``).

        Raises:
            ArmError: naming the store on any SQLite or PostgreSQL failure.
        """
        self.close()
        store_dir = Path(store_dir)
        self._store_dir = store_dir
        path = fresh_database(store_dir, DB_NAME)
        db = self._connect_sqlite(path, create=True)
        self._db = db
        try:
            with db:
                db.execute(SQLITE_SCHEMA)
                db.executemany(
                    "INSERT INTO meta(key, value) VALUES (?, ?)", list(self._layout().items())
                )
        except apsw.Error as exc:
            self.close()
            raise base.ArmError(f"{self.name}: cannot create {path}: {exc}") from exc
        try:
            self._h = open_store(store_dir, self.name, create=True, what="L3 store")
        except PgError:
            self.close()
            raise
        conn = self._h.conn
        try:
            conn.execute(pg_table_ddl())
            if pg_indexes:
                for stmt in pg_index_ddl(self.m, self.ef_construction):
                    conn.execute(stmt)
            self._apply_pg_settings(conn)
        except psycopg.Error as exc:
            where = self._where()
            self.close()
            raise base.ArmError(f"{self.name}: cannot create L3 table in {where}: {exc}") from exc

    def _vector(self, vec: Any, what: str) -> np.ndarray:
        """Return ``vec`` as contiguous float32 ``(384,)``.

        Raises:
            ArmError: when it is missing, not 384 values, or not finite.
        """
        v = base.checked_vector(vec, self.name, what, base.VECTOR_DIM)
        if not np.all(np.isfinite(v)):
            raise base.ArmError(f"{self.name}: {what} embedding has non-finite values")
        return v

    def _l3_insert(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert evicted rows into L3 in one transaction (``ON CONFLICT DO NOTHING``).

        Raises:
            ArmError: on a PostgreSQL error.
        """
        if not rows:
            return
        conn = self._pg()
        stmt = sql.SQL(
            "INSERT INTO l3_memories ({}) VALUES ({}) ON CONFLICT (memory_id) DO NOTHING"
        ).format(
            sql.SQL(", ").join(map(sql.Identifier, L3_NAMES)),
            sql.SQL(", ").join(sql.Placeholder() * len(L3_NAMES)),
        )
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(stmt, rows)
        except psycopg.Error as exc:
            raise base.ArmError(
                f"{self.name}: L3 insert into {self._where()} failed: {exc}"
            ) from exc

    def _l1_totals(self) -> tuple[int, int]:
        """Return ``(tokens, turns)`` currently in L1."""
        row = (
            self._sqlite()
            .execute("SELECT coalesce(sum(body_tokens), 0), count(*) FROM l1_turns")
            .fetchall()[0]
        )
        return int(row[0]), int(row[1])

    # ------------------------------------------------------------------ accounting
    def tier_stats(self) -> dict[str, int]:
        """Return what each tier holds now.

        Returns:
            ``{"l1_turns", "l1_tokens", "l2_nodes", "l2_covered", "l2_summary_tokens",
            "l3_rows"}``.

        Raises:
            ArmError: when the store is not open or a statement fails.
        """
        db, conn = self._sqlite(), self._pg()
        try:
            tokens, turns = self._l1_totals()
            nodes, stoks = db.execute(
                "SELECT count(*), coalesce(sum(summary_tokens), 0) FROM l2_nodes"
            ).fetchall()[0]
            covered = db.execute("SELECT count(*) FROM l2_covers").fetchall()[0][0]
            l3 = conn.execute("SELECT count(*) FROM l3_memories").fetchone()[0]  # type: ignore[index]
        except (apsw.Error, psycopg.Error) as exc:
            raise base.ArmError(
                f"{self.name}: tier stats of {self._where()} failed: {exc}"
            ) from exc
        return {
            "l1_turns": turns,
            "l1_tokens": tokens,
            "l2_nodes": int(nodes),
            "l2_covered": int(covered),
            "l2_summary_tokens": int(stoks),
            "l3_rows": int(l3),
        }

    def integrity_check(self) -> tuple[str, list[str]]:
        """Both engines' checks: SQLite's and FTS5's on L1/L2, distinct ids in L3.

        SQLite's ``PRAGMA integrity_check`` and FTS5's ``integrity-check``; in L3
        (PostgreSQL) distinct ids only: L3 has no unique key (no heap-vs-index count), and a
        correction superseding an L3 memory may live in L1 (no link check).

        Raises:
            ArmError: when the store is not open or a check cannot run.
        """
        path = Path(self._store_dir or ".") / DB_NAME
        try:
            problems = [f"sqlite: {p}" for p in integrity_problems(self._sqlite())]
        except apsw.Error as exc:
            raise base.ArmError(f"{self.name}: integrity check of {path} failed: {exc}") from exc
        try:
            problems += consistency_problems(self._pg(), "l3_memories", indexed=False, links=False)
        except psycopg.Error as exc:
            raise base.ArmError(f"{self.name}: integrity check of L3 failed: {exc}") from exc
        return "SQLite integrity_check + FTS5; L3 distinct ids", problems

    def storage(self) -> base.StorageStats:
        """Return bytes per object of both engines, from their own accounting.

        SQLite (after a WAL checkpoint): ``dbstat`` ``sum(pgsize)`` per table, index and
        FTS5 shadow table, named ``sqlite:<name>`` (plus ``sqlite:tiers.db-wal`` if a
        non-empty WAL remains). PostgreSQL: per relation of the store's schema, the heap
        (``pg_table_size`` minus TOAST), TOAST (``pg:<table> (toast)``) and each index
        (``pg_total_relation_size``), named ``pg:<name>``.

        Raises:
            ArmError: when the store is not open or the accounting queries fail.
        """
        db, conn = self._sqlite(), self._pg()
        objects: dict[str, int] = {}
        path = Path(self._store_dir or ".") / DB_NAME
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            for n, b in db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
                objects[f"sqlite:{n}"] = int(b)
        except apsw.Error as exc:
            raise base.ArmError(f"{self.name}: dbstat on {path} failed: {exc}") from exc
        wal = Path(str(path) + "-wal")
        if wal.is_file() and os.path.getsize(wal) > 0:
            objects[f"sqlite:{wal.name}"] = os.path.getsize(wal)
        try:
            objects.update({f"pg:{n}": b for n, b in relation_sizes(conn).items()})
        except psycopg.Error as exc:
            raise base.ArmError(
                f"{self.name}: storage query on {self._where()} failed: {exc}"
            ) from exc
        return base.StorageStats(
            total_bytes=sum(objects.values()),
            objects=objects,
            source="dbstat + pg_total_relation_size",
        )

    def close(self) -> None:
        """Close SQLite and PostgreSQL; stop the embedded server if this was its last user.

        Safe to call twice.
        """
        db, self._db = self._db, None
        h, self._h = self._h, None
        try:
            if db is not None:
                db.close()
        finally:
            if h is not None:
                h.close()
