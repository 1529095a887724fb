"""SQLite arms (family ``sqlite``): B-tree + LIKE, FTS5 bm25, and FTS5 + vector hybrid.

All three store one database file ``memory.db`` (WAL mode) under the store directory,
written through `apsw <https://rogerbinns.github.io/apsw/>`_ (a current SQLite with FTS5,
``dbstat`` and extension loading; the stdlib module here cannot load sqlite-vec).

Schema (shared by the three arms; each builds only the extra objects it needs)::

    memories(id INTEGER PRIMARY KEY, memory_id TEXT UNIQUE, session_id, turn_no, seq,
             kind, body, fact_id, created_day, source, confidence, superseded_by, tokens)
    memory_entities(memory_id, entity_id)          -- the "join" capability
    B-tree indexes on session_id, created_day, fact_id, superseded_by, entity_id
    memories_fts   FTS5(body) external content over memories, porter unicode61
                   (sqlite-fts, sqlite-hybrid)
    memory_vectors(id INTEGER PRIMARY KEY, embedding BLOB)  -- float32[384] (sqlite-hybrid)

Predicates are always applied inside the SQL statement (``WHERE``), and every value —
free text, match expression, LIKE pattern, predicate value, query vector — is a bound
parameter. Free text becomes search terms via :mod:`agentmem.text`.

``build`` bulk-loads with ``synchronous=NORMAL``; afterwards (and after ``open``) the
connection runs with ``synchronous=FULL``, so a ``remember`` transaction is on disk
(WAL synced) when it returns. ``remember`` writes the same rows ``build`` writes — the
memory row with the next integer ``id``, its entity rows, its FTS5 row (the external
content index is kept in step with ``INSERT INTO memories_fts(rowid, body)``) and its
vector row — and sets ``superseded_by`` of the memories it corrects, in one
``BEGIN IMMEDIATE`` transaction.

The hybrid's vector branch is a full scan of ``vec_distance_cosine`` with the predicate in
``WHERE`` rather than a ``vec0`` table: vec0 metadata columns reject NULL values and
``IS NULL`` constraints in KNN queries (sqlite-vec 0.1.9), so ``superseded_by IS NULL``
could not be pushed into it; vec0 is brute force anyway.
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import apsw
import numpy as np
import polars as pl

from agentmem.arms.base import (
    MEMORY_SCHEMA,
    VECTOR_DIM,
    ArmBase,
    ArmError,
    BareCall,
    BuildStats,
    Capabilities,
    Corpus,
    Embeddings,
    Predicate,
    Query,
    RawIngest,
    Remembered,
    Result,
    StorageStats,
    checked_vector,
    prepare_memories,
)
from agentmem.arms.rows import fetch_ids
from agentmem.schema import sqlite_ddl
from agentmem.text import fts5_match, like_pattern, query_terms

DB_NAME = "memory.db"

_MEMORY_COLUMNS = (
    "memory_id",
    "session_id",
    "turn_no",
    "seq",
    "kind",
    "body",
    "fact_id",
    "created_day",
    "source",
    "confidence",
    "superseded_by",
    "tokens",
)

# memories + memory_entities and their B-tree indexes come from the one schema declaration
# (agentmem.schema); ``id`` is the integer rowid alias FTS5 external content needs.
_TABLES, _INDEXES = sqlite_ddl(("memories", "memory_entities"), rowid_alias={"memories": "id"})
_SCHEMA = ";\n".join(_TABLES) + ";"
_BTREE_INDEXES = ";\n".join(_INDEXES) + ";"

_FTS_SCHEMA = """
CREATE VIRTUAL TABLE memories_fts USING fts5(
    body, content='memories', content_rowid='id', tokenize='porter unicode61'
);
INSERT INTO memories_fts(memories_fts) VALUES('rebuild');
"""

#: Milliseconds a writer waits for another connection's write lock (other processes).
BUSY_TIMEOUT_MS = 10_000
#: Ids bound per ``IN (...)`` list in :meth:`_SqliteArm.fetch`.
_FETCH_CHUNK = 500

_VEC_SCHEMA = """
CREATE TABLE memory_vectors(
    id INTEGER PRIMARY KEY REFERENCES memories(id),
    embedding BLOB NOT NULL
);
"""

#: Predicate (field, op) -> SQL on alias ``m``; the value, if any, is bound as ``:pv``.
_PREDICATE_SQL: dict[tuple[str, str], str] = {
    ("created_day", "<="): "m.created_day <= :pv",
    ("created_day", "="): "m.created_day = :pv",
    ("session_id", "="): "m.session_id = :pv",
    ("fact_id", "="): "m.fact_id = :pv",
    ("superseded_by", "="): "m.superseded_by = :pv",
    ("created_day", "is_null"): "m.created_day IS NULL",
    ("session_id", "is_null"): "m.session_id IS NULL",
    ("fact_id", "is_null"): "m.fact_id IS NULL",
    ("superseded_by", "is_null"): "m.superseded_by IS NULL",
}


def predicate_sql(pred: Predicate | None) -> tuple[str, dict[str, Any]]:
    """Translate a predicate into a SQL condition on alias ``m`` plus its bindings.

    Args:
        pred: the structured filter, or ``None``.

    Returns:
        ``(condition, params)``; ``("1", {})`` when ``pred`` is ``None``. The value is
        bound as ``:pv``, never spliced; column names come from a fixed table.

    Raises:
        ArmError: for a (field, op) pair outside :data:`_PREDICATE_SQL`.
    """
    if pred is None:
        return "1", {}
    try:
        cond = _PREDICATE_SQL[(pred.field, pred.op)]
    except KeyError:
        raise ArmError(f"unsupported predicate {pred.field} {pred.op}") from None
    return cond, ({} if pred.op == "is_null" else {"pv": pred.value})


def format_plan(rows: list[tuple[Any, ...]]) -> str:
    """Render EXPLAIN QUERY PLAN rows ``(id, parent, notused, detail)`` as an indented tree."""
    depth: dict[int, int] = {0: -1}
    lines = ["QUERY PLAN"]
    for node_id, parent, _notused, detail in rows:
        d = depth.get(parent, -1) + 1
        depth[node_id] = d
        lines.append("   " * d + "|--" + str(detail))
    return "\n".join(lines)


def _registered_sqlite_arms() -> dict[str, type[_SqliteArm]]:
    """The registered arms of this family, by name (imported late: the registry imports us)."""
    from agentmem.arms import ARMS

    return {n: c for n, c in ARMS.items() if isinstance(c, type) and issubclass(c, _SqliteArm)}


class _SqliteArm(ArmBase):
    """Shared machinery of the SQLite arms: schema, build, open, count, explain, storage.

    Subclasses set the class variables and implement :meth:`_ranking` (the ranking
    statement and its bindings for a query, or ``None`` when no statement runs).
    """

    name: ClassVar[str]
    family: ClassVar[str] = "sqlite"
    capabilities: ClassVar[Capabilities]

    bare_call: ClassVar[BareCall] = BareCall(
        "execute + fetchall of the prepared ranking (and count) statements",
        "building the SQL text and bindings per call; the id list",
    )

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

    # ----------------------------------------------------------------- connection
    def _connect(self, path: Path, *, create: bool) -> apsw.Connection:
        """Open ``path`` read-write and load sqlite-vec if this arm needs it.

        With ``create`` the file is created and switched to WAL (``journal_mode`` is
        persistent in the file, so reopening does not write it again). The connection
        starts with ``synchronous=NORMAL`` (the bulk build) and waits up to
        :data:`BUSY_TIMEOUT_MS` for another writer's lock.

        Raises:
            ArmError: naming ``path`` when SQLite cannot open it or sqlite-vec cannot load.
        """
        flags = apsw.SQLITE_OPEN_READWRITE
        if create:
            flags |= apsw.SQLITE_OPEN_CREATE
        conn: apsw.Connection | None = None
        try:
            conn = apsw.Connection(str(path), flags=flags)
            if create:
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            if self._uses_vectors:
                import sqlite_vec

                conn.enable_load_extension(True)
                conn.load_extension(sqlite_vec.loadable_path())
                conn.enable_load_extension(False)
        except apsw.Error as exc:
            if conn is not None:
                conn.close()
            raise ArmError(f"{self.name}: cannot open SQLite store {path}: {exc}") from exc
        return conn

    def _db(self) -> apsw.Connection:
        """Return the open connection.

        Raises:
            ArmError: when the arm was never built/opened or has been closed.
        """
        if self._conn is None:
            raise ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._conn

    # ---------------------------------------------------------------------- build
    def build(self, corpus: Corpus, vectors: Embeddings, store_dir: Path) -> BuildStats:
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
        store_dir = Path(store_dir)
        store_dir.mkdir(parents=True, exist_ok=True)
        path = store_dir / DB_NAME
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)

        mem = corpus.memories
        missing = [c for c in (*_MEMORY_COLUMNS, "entity_ids") if c not in mem.columns]
        if missing:
            raise ArmError(f"{self.name}: corpus memories lack columns {missing} ({path})")
        rows = [(i + 1, *r) for i, r in enumerate(mem.select(_MEMORY_COLUMNS).iter_rows())]
        ent_rows = [
            (mid, str(e))
            for mid, ents in zip(
                mem["memory_id"].to_list(), mem["entity_ids"].to_list(), strict=True
            )
            for e in dict.fromkeys(str(x) for x in (ents or []))
        ]
        vec_rows: list[tuple[int, bytes]] = []
        if self._uses_vectors:
            ids = mem["memory_id"].to_list()
            try:
                mat = np.ascontiguousarray(vectors.get(ids), dtype=np.float32)
            except KeyError as exc:
                raise ArmError(f"{self.name}: {exc.args[0]} ({path})") from None
            if mat.ndim != 2 or mat.shape[1] != VECTOR_DIM:
                raise ArmError(
                    f"{self.name}: embeddings have shape {mat.shape}, need (n, {VECTOR_DIM})"
                )
            vec_rows = [(i + 1, mat[i].tobytes()) for i in range(len(ids))]

        conn = self._connect(path, create=True)
        self._conn, self._path = conn, path
        placeholders = ", ".join("?" * (len(_MEMORY_COLUMNS) + 1))
        try:
            t0 = time.perf_counter()
            with conn:
                conn.execute(_SCHEMA)
                conn.execute(f"PRAGMA application_id = {self._application_id()}")
                conn.executemany(
                    f"INSERT INTO memories(id, {', '.join(_MEMORY_COLUMNS)}) "
                    f"VALUES ({placeholders})",
                    rows,
                )
                conn.executemany(
                    "INSERT INTO memory_entities(memory_id, entity_id) VALUES (?, ?)", ent_rows
                )
            t1 = time.perf_counter()
            with conn:
                conn.execute(_BTREE_INDEXES)
                if self._uses_fts:
                    conn.execute(_FTS_SCHEMA)
                if self._uses_vectors:
                    conn.execute(_VEC_SCHEMA)
                    conn.executemany(
                        "INSERT INTO memory_vectors(id, embedding) VALUES (?, ?)", vec_rows
                    )
                conn.execute("ANALYZE")
            t2 = time.perf_counter()
            conn.execute("PRAGMA synchronous=FULL")  # remember: durable on return
        except apsw.Error as exc:
            self.close()
            raise ArmError(f"{self.name}: build of {path} failed: {exc}") from exc
        return BuildStats(ingest_ms=(t1 - t0) * 1e3, index_ms=(t2 - t1) * 1e3)

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
            raise ArmError(f"{self.name}: no SQLite store at {path}")
        conn = self._connect(path, create=False)
        need = {"memories", "memory_entities"}
        if self._uses_fts:
            need.add("memories_fts")
        if self._uses_vectors:
            need.add("memory_vectors")
        try:
            have = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema")}
        except apsw.Error as exc:
            conn.close()
            raise ArmError(f"{self.name}: {path} is not a readable SQLite database: {exc}") from exc
        if need - have:
            conn.close()
            raise ArmError(f"{self.name}: {path} lacks tables {sorted(need - have)}")
        built_by = conn.execute("PRAGMA application_id").fetchall()[0][0]
        if built_by not in (0, self._application_id()):
            conn.close()
            other = next(
                (
                    n
                    for n, c in _registered_sqlite_arms().items()
                    if c._application_id() == built_by
                ),
                f"another arm (application_id {built_by})",
            )
            raise ArmError(
                f"{self.name}: {path} was built by {other}; open it with that arm (writing "
                f"through {self.name} would leave that arm's indexes out of step)"
            )
        conn.execute("PRAGMA synchronous=FULL")  # remember: durable on return
        self._conn, self._path = conn, path

    @classmethod
    def _application_id(cls) -> int:
        """The ``PRAGMA application_id`` this arm writes into its file (CRC-32 of its name)."""
        return zlib.crc32(cls.name.encode()) & 0x7FFFFFFF

    # ------------------------------------------------------------------- remember
    def remember(self, memories: pl.DataFrame, vectors: Embeddings) -> None:
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
        batch = prepare_memories(memories, vectors, self.name)
        if batch.memories.height == 0:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._write(conn, batch)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except apsw.Error as exc:
            raise ArmError(f"{self.name}: remember into {self._path} failed: {exc}") from exc

    def _write(self, conn: apsw.Connection, batch: Remembered) -> None:
        """Write ``batch`` inside the open transaction (see :meth:`remember`).

        Raises:
            ArmError: when a new id is already stored or a superseded id is not.
        """
        ids = batch.ids
        for mid in ids:
            if conn.execute("SELECT 1 FROM memories WHERE memory_id = ?", (mid,)).fetchall():
                raise ArmError(
                    f"{self.name}: remember: memory id {mid!r} is already stored ({self._path})"
                )
        base = int(conn.execute("SELECT coalesce(max(id), 0) FROM memories").fetchall()[0][0])
        mem = batch.memories
        rowids = range(base + 1, base + 1 + len(ids))
        rows = mem.select(_MEMORY_COLUMNS).iter_rows()
        placeholders = ", ".join("?" * (len(_MEMORY_COLUMNS) + 1))
        conn.executemany(
            f"INSERT INTO memories(id, {', '.join(_MEMORY_COLUMNS)}) VALUES ({placeholders})",
            [(rid, *r) for rid, r in zip(rowids, rows, strict=True)],
        )
        ent_rows = [
            (mid, str(e))
            for mid, ents in zip(ids, mem["entity_ids"].to_list(), strict=True)
            for e in dict.fromkeys(str(x) for x in ents)
        ]
        if ent_rows:
            conn.executemany(
                "INSERT INTO memory_entities(memory_id, entity_id) VALUES (?, ?)", ent_rows
            )
        if self._uses_fts:
            conn.executemany(
                "INSERT INTO memories_fts(rowid, body) VALUES (?, ?)",
                list(zip(rowids, mem["body"].to_list(), strict=True)),
            )
        if self._uses_vectors:
            conn.executemany(
                "INSERT INTO memory_vectors(id, embedding) VALUES (?, ?)",
                [(rid, batch.vectors[i].tobytes()) for i, rid in enumerate(rowids)],
            )
        for old, new in batch.supersessions:
            conn.execute("UPDATE memories SET superseded_by = ? WHERE memory_id = ?", (new, old))
            if conn.changes() != 1:
                raise ArmError(
                    f"{self.name}: remember: memory {new!r} supersedes {old!r}, "
                    f"which is not stored ({self._path})"
                )

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the stored rows of ``memory_ids``: :data:`MEMORY_SCHEMA` columns and dtypes.

        Rows come in the order asked, each id once; ids not stored are left out.
        ``entity_ids`` comes from ``memory_entities`` in insertion order (de-duplicated,
        as stored); ``form`` is not stored and is null.

        Raises:
            ValueError: when ``memory_ids`` is a single string or holds a non-string.
            ArmError: when the store is not open or SQLite fails.
        """
        conn = self._db()
        want = fetch_ids(memory_ids)
        found: dict[str, tuple[Any, ...]] = {}
        ents: dict[str, list[str]] = {}
        try:
            for i in range(0, len(want), _FETCH_CHUNK):
                chunk = want[i : i + _FETCH_CHUNK]
                marks = ", ".join("?" * len(chunk))
                for r in conn.execute(
                    f"SELECT {', '.join(_MEMORY_COLUMNS)} FROM memories "
                    f"WHERE memory_id IN ({marks})",
                    chunk,
                ):
                    found[r[0]] = r
                for mid, ent in conn.execute(
                    "SELECT memory_id, entity_id FROM memory_entities "
                    f"WHERE memory_id IN ({marks}) ORDER BY rowid",
                    chunk,
                ):
                    ents.setdefault(mid, []).append(ent)
        except apsw.Error as exc:
            raise ArmError(f"{self.name}: fetch from {self._path} failed: {exc}") from exc
        data: dict[str, list[Any]] = {c: [] for c in MEMORY_SCHEMA}
        for mid in want:
            row = found.get(mid)
            if row is None:
                continue
            for col, value in zip(_MEMORY_COLUMNS, row, strict=True):
                data[col].append(value)
            data["entity_ids"].append(ents.get(mid, []))
            data["form"].append(None)
        return pl.DataFrame(data, schema=MEMORY_SCHEMA)

    # ---------------------------------------------------------------------- query
    def _ranking(self, q: Query, k: int) -> tuple[str, dict[str, Any]] | None:
        """Return the ranking statement and bindings for ``q``, or ``None`` (empty result)."""
        raise NotImplementedError

    def _count_sql(self, q: Query) -> tuple[str, dict[str, Any]]:
        """Return the exact-count statement: memories matching the predicate (not the text)."""
        cond, params = predicate_sql(q.predicate)
        return f"SELECT count(*) FROM memories AS m WHERE {cond}", params

    def raw_ingest(self) -> RawIngest:
        """The raw bulk path: the memory tables read back and written in one transaction."""
        return RawIngest(
            "tables",
            "memory.db",
            ("memories", "memory_entities"),
            beyond="turning polars rows into tuples is outside both timings; nothing else",
        )

    def query(self, q: Query, k: int) -> Result:
        """Return at most ``k`` memory ids best first, plus the exact count if wanted.

        ``Result.count`` (when ``q.wants_count``) is ``SELECT count(*)`` of the memories
        matching the predicate (all memories without one), independent of the text.
        Hostile text never raises: text with no search terms gives no ranked ids.

        Raises:
            ArmError: when the store is not open, or on an SQLite error.
        """
        conn = self._db()
        ids: list[str] = []
        count: int | None = None
        try:
            stmt = self._ranking(q, k) if k > 0 else None
            if stmt is not None:
                sql, params = stmt
                ids = [r[0] for r in conn.execute(sql, params)]
            if q.wants_count:
                sql, params = self._count_sql(q)
                count = int(conn.execute(sql, params).fetchall()[0][0])
        except apsw.Error as exc:
            raise ArmError(
                f"{self.name}: query {q.query_id!r} on {self._path} failed: {exc}"
            ) from exc
        return Result(memory_ids=ids[:k], count=count)

    def raw_query_call(self, q: Query, k: int) -> Callable[[], list[list[Any]]]:
        """Return a zero-argument function making exactly the driver calls :meth:`query` makes.

        The statements and bindings are built here, once (:meth:`_ranking`, then
        :meth:`_count_sql` when ``q.wants_count``); each call of the returned function
        only runs ``conn.execute(sql, params)`` for each and fetches every row, with no
        result handling. The harness-overhead benchmark (:mod:`agentmem.bench`) times it
        against :meth:`query`.

        Returns:
            A function returning one list of rows per statement: the ranking's rows
            first (``[]`` when no ranking statement runs), then the count's when
            ``q.wants_count``.

        Raises:
            ArmError: when the store is not open.
        """
        conn = self._db()
        stmts: list[tuple[str, dict[str, Any]] | None] = [self._ranking(q, k) if k > 0 else None]
        if q.wants_count:
            stmts.append(self._count_sql(q))

        def call() -> list[list[Any]]:
            return [conn.execute(*s).fetchall() if s is not None else [] for s in stmts]

        return call

    def raw_ids(self, raw: list[list[Any]], k: int) -> list[str]:
        """Return the ids :meth:`query` makes of ``raw`` (:meth:`raw_query_call`'s output).

        The ranking rows' first column, cut to ``k``.
        """
        return [r[0] for r in raw[0]][: max(k, 0)] if raw else []

    def explain(self, q: Query, k: int = 10) -> str:
        """Return EXPLAIN QUERY PLAN of the exact statements :meth:`query` runs for ``q``.

        Args:
            q: the query.
            k: the result size bound into ``LIMIT`` (does not change the plan shape).

        Returns:
            One block per statement (ranking, then count when ``q.wants_count``), each an
            indented plan tree; a note instead when no ranking statement runs.
        """
        conn = self._db()
        parts: list[str] = []
        stmts: list[tuple[str, tuple[str, dict[str, Any]] | None]] = [
            ("ranking", self._ranking(q, max(k, 1)))
        ]
        if q.wants_count:
            stmts.append(("count", self._count_sql(q)))
        for label, stmt in stmts:
            if stmt is None:
                parts.append(f"-- {label}: no statement runs (the text has no search terms)")
                continue
            sql, params = stmt
            try:
                rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
            except apsw.Error as exc:
                raise ArmError(f"{self.name}: explain on {self._path} failed: {exc}") from exc
            parts.append(f"-- {label}: {' '.join(sql.split())}\n{format_plan(rows)}")
        return "\n".join(parts)

    # -------------------------------------------------------------------- storage
    def storage(self) -> StorageStats:
        """Return bytes per SQLite object from ``dbstat`` (after a WAL checkpoint).

        Objects are tables, indexes and FTS5 shadow tables (``sum(pgsize)`` per name);
        a non-empty ``memory.db-wal`` left after the checkpoint is added as its own entry.

        Raises:
            ArmError: when the store is not open or ``dbstat`` fails.
        """
        conn = self._db()
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            objects = {
                str(n): int(b)
                for n, b in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
            }
        except apsw.Error as exc:
            raise ArmError(f"{self.name}: dbstat on {self._path} failed: {exc}") from exc
        wal = Path(str(self._path) + "-wal")
        if wal.is_file() and os.path.getsize(wal) > 0:
            objects[wal.name] = os.path.getsize(wal)
        return StorageStats(total_bytes=sum(objects.values()), objects=objects, source="dbstat")

    def close(self) -> None:
        """Close the connection; safe to call twice."""
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


class SqliteFtsArm(_SqliteArm):
    """``sqlite-fts``: FTS5 (``porter unicode61``) over memory bodies, ranked by ``bm25()``.

    The match expression is :func:`agentmem.text.fts5_match` (every term quoted,
    OR-ed); the predicate sits in the same statement (``JOIN memories ... WHERE``). Ties
    on bm25 go newest first (larger ``created_day``, then larger ``seq``). Text with no
    terms returns no ids (the count, if wanted, is still returned).
    """

    name: ClassVar[str] = "sqlite-fts"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=True,
        aggregate=True,
        vector_access="none",
        text_access="fts5-bm25",
        transactions=True,
        filter_stage="in-search",
    )

    def _ranking(self, q: Query, k: int) -> tuple[str, dict[str, Any]] | None:
        match = fts5_match(q.text)
        if match is None:
            return None
        cond, params = predicate_sql(q.predicate)
        sql = (
            "SELECT m.memory_id FROM memories_fts JOIN memories AS m "
            "ON m.id = memories_fts.rowid "
            f"WHERE memories_fts MATCH :match AND {cond} "
            "ORDER BY bm25(memories_fts), m.created_day DESC, m.seq DESC LIMIT :k"
        )
        return sql, {**params, "match": match, "k": int(k)}


class SqliteBtreeArm(_SqliteArm):
    r"""``sqlite-btree``: B-tree indexes for predicates, LIKE-term scoring for text.

    score = number of query terms (:func:`agentmem.text.query_terms`) contained in
    the body, each tested with ``body LIKE ? ESCAPE '\'`` (ASCII case-insensitive,
    :func:`agentmem.text.like_pattern`), summed in one statement;
    ``WHERE score > 0 AND predicate ORDER BY score DESC, created_day DESC, seq DESC``.
    """

    name: ClassVar[str] = "sqlite-btree"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=True,
        aggregate=True,
        vector_access="none",
        text_access="b-tree+like",
        transactions=True,
        filter_stage="in-search",
    )

    def _ranking(self, q: Query, k: int) -> tuple[str, dict[str, Any]] | None:
        terms = query_terms(q.text)
        if not terms:
            return None
        cond, params = predicate_sql(q.predicate)
        score = " + ".join(
            f"(CASE WHEN m.body LIKE :t{i} ESCAPE '\\' THEN 1 ELSE 0 END)"
            for i in range(len(terms))
        )
        sql = (
            "SELECT memory_id FROM ("
            f"SELECT m.memory_id, m.created_day, m.seq, ({score}) AS score "
            f"FROM memories AS m WHERE {cond}"
            ") WHERE score > 0 ORDER BY score DESC, created_day DESC, seq DESC LIMIT :k"
        )
        binds = {f"t{i}": like_pattern(t) for i, t in enumerate(terms)}
        return sql, {**params, **binds, "k": int(k)}


class SqliteHybridArm(_SqliteArm):
    """``sqlite-hybrid``: FTS5 bm25 top ``branch_k`` + cosine top ``branch_k``, fused by RRF.

    Both branches carry the predicate in their ``WHERE``. The vector branch is a full scan
    of sqlite-vec's ``vec_distance_cosine`` over the float32 BLOB column (vec0 cannot
    filter on ``IS NULL``). Fusion is Reciprocal Rank Fusion (Cormack, Clarke & Buettcher
    2009): ``score(d) = sum over branches of 1 / (rrf_k + rank_b(d))``, ranks from 1,
    computed in the same SQL statement; ties newest first; cut to ``k``. When the text
    has no terms the vector branch alone answers.

    Args:
        branch_k: candidates taken from each branch (default 50).
        rrf_k: RRF constant (default 60).
    """

    name: ClassVar[str] = "sqlite-hybrid"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=True,
        aggregate=True,
        vector_access="brute-force",
        text_access="fts5-bm25",
        transactions=True,
        filter_stage="in-search",
    )

    def __init__(self, *, branch_k: int = 50, rrf_k: int = 60) -> None:
        super().__init__()
        if branch_k < 1:
            raise ValueError(f"branch_k must be >= 1, got {branch_k}")
        if rrf_k < 0:
            raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")
        self.branch_k = int(branch_k)
        self.rrf_k = int(rrf_k)

    def _query_vector(self, q: Query) -> bytes:
        """Return the query embedding as float32 bytes.

        Raises:
            ArmError: when the embedding is missing or not of size 384.
        """
        v = checked_vector(q.embedding, self.name, f"query {q.query_id!r}", VECTOR_DIM)
        return v.tobytes()

    def _ranking(self, q: Query, k: int) -> tuple[str, dict[str, Any]] | None:
        cond, params = predicate_sql(q.predicate)
        match = fts5_match(q.text)
        branches = [
            "vec AS (SELECT id, row_number() OVER (ORDER BY dist, created_day DESC, seq DESC) "
            "AS rnk FROM (SELECT m.id, m.created_day, m.seq, "
            "vec_distance_cosine(v.embedding, :qvec) AS dist "
            "FROM memory_vectors AS v JOIN memories AS m ON m.id = v.id "
            f"WHERE {cond} ORDER BY dist, m.created_day DESC, m.seq DESC LIMIT :bk))"
        ]
        union = "SELECT id, rnk FROM vec"
        binds: dict[str, Any] = {
            **params,
            "qvec": self._query_vector(q),
            "bk": self.branch_k,
            "rrfk": self.rrf_k,
            "k": int(k),
        }
        if match is not None:
            branches.insert(
                0,
                "fts AS (SELECT id, row_number() OVER (ORDER BY s, created_day DESC, seq DESC) "
                "AS rnk FROM (SELECT m.id, m.created_day, m.seq, bm25(memories_fts) AS s "
                "FROM memories_fts JOIN memories AS m ON m.id = memories_fts.rowid "
                f"WHERE memories_fts MATCH :match AND {cond} "
                "ORDER BY s, m.created_day DESC, m.seq DESC LIMIT :bk))",
            )
            union = "SELECT id, rnk FROM fts UNION ALL " + union
            binds["match"] = match
        sql = (
            f"WITH {', '.join(branches)}, "
            f"fused AS (SELECT id, sum(1.0 / (:rrfk + rnk)) AS score FROM ({union}) GROUP BY id) "
            "SELECT m.memory_id FROM fused JOIN memories AS m ON m.id = fused.id "
            "ORDER BY fused.score DESC, m.created_day DESC, m.seq DESC LIMIT :k"
        )
        return sql, binds
