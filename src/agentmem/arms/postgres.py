"""PostgreSQL arms (family ``postgres``): ILIKE scoring, GIN tsvector, pgvector HNSW, hybrid.

Each arm owns one database (see :mod:`agentmem.pg`: an embedded PostgreSQL 18.3 +
pgvector 0.8.2 server per store directory by default, or the external server named by
``AGENTMEM_PG_DSN``), opened through :func:`agentmem.pg.connect_store` with the arm's
name. Schema (shared; each arm builds only the columns and indexes it reads, so that
:meth:`storage` measures what the architecture needs)::

    memories(memory_id text PRIMARY KEY, session_id, turn_no, seq, kind, body, fact_id,
             created_day, source, confidence, superseded_by, tokens,
             entity_ids text[],
             embedding vector(384),                         -- pg-hnsw*, pg-hybrid
             tsv tsvector GENERATED ALWAYS AS
                 (to_tsvector('english', body)) STORED)      -- pg-gin, pg-hybrid
    memory_entities(memory_id, entity_id)                   -- the "join" capability
    B-tree indexes on session_id, created_day, fact_id, superseded_by,
        memory_entities(entity_id, memory_id)
    GIN index on tsv; HNSW index on embedding (vector_cosine_ops, m=16, ef_construction=64)

``build`` writes rows with ``COPY ... (FORMAT BINARY)`` (psycopg ``copy`` + ``set_types``)
and builds the indexes afterwards. ``remember`` is the normal write path: ``INSERT`` of
the memory rows (the ``tsv`` column is generated, the HNSW and GIN indexes are updated by
the insert) and their ``memory_entities`` rows, then ``UPDATE ... superseded_by`` of the
memories they correct, in one transaction that is committed (WAL flushed, as the
server's ``fsync``/``synchronous_commit`` settings say) when the call returns. Every
value that comes from a query or a remembered row — free text, LIKE patterns, tsquery
terms, predicate values, vectors, ``k``, bodies — is a bound parameter; SQL text is
composed only from fixed fragments and :class:`psycopg.sql.Identifier`
column names from a fixed table. Free text becomes terms via :mod:`agentmem.text`.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
import psycopg
from psycopg import sql

from agentmem.arms.base import (
    MEMORY_SCHEMA,
    PREDICATE_FIELDS,
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
from agentmem.pg import PgError, PgHandle, connect_store
from agentmem.schema import postgres_ddl
from agentmem.text import like_pattern, query_terms

#: ``maintenance_work_mem`` for index builds, so an HNSW graph of the ``l`` corpus
#: (33k x 384) is built in memory (pgvector warns and slows down past the limit).
BUILD_MAINTENANCE_WORK_MEM = "256MB"
#: Text-search configuration of the stored tsvector and of every tsquery.
TS_CONFIG = "english"
#: ``ts_rank_cd`` normalization flag: 1 divides the rank by 1 + log(document length)
#: (PostgreSQL manual, "Ranking Search Results"), the length normalisation BM25 also has.
#: Without it a short statement of a fact ties with long chatter that merely mentions the
#: identifier, and the newest-first tie-break hands the slot to the chatter.
TS_RANK_NORMALIZATION = 1

#: (column, COPY type, DDL type) of the memory columns, in COPY order.
MEMORY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("memory_id", "text", "text PRIMARY KEY"),
    ("session_id", "text", "text"),
    ("turn_no", "int4", "integer"),
    ("seq", "int8", "bigint"),
    ("kind", "text", "text"),
    ("body", "text", "text NOT NULL"),
    ("fact_id", "text", "text"),
    ("created_day", "int4", "integer"),
    ("source", "text", "text"),
    ("confidence", "float8", "double precision"),
    ("superseded_by", "text", "text"),
    ("tokens", "int4", "integer"),
    ("entity_ids", "text[]", "text[] NOT NULL DEFAULT '{}'"),
)


#: Text columns of a remembered row that PostgreSQL ``text`` must hold (no NUL character).
_TEXT_COLUMNS = tuple(c for c, t, _ in MEMORY_COLUMNS if t in ("text", "text[]"))


#: Memory rows per ``INSERT`` statement of :meth:`_PgArm.remember` (14 parameters each,
#: far below PostgreSQL's 65,535 per statement).
_INSERT_CHUNK = 500


@functools.lru_cache(maxsize=16)
def _insert_memories_sql(n: int, with_embedding: bool) -> str:
    """Return the ``INSERT`` of ``n`` memory rows, skipping ids already stored.

    ``INSERT INTO memories (<MEMORY_COLUMNS>[, embedding]) VALUES (%s, ...), ...
    ON CONFLICT (memory_id) DO NOTHING RETURNING memory_id``: the ids it returns are the
    rows written, so a stored id shows as a missing one (no extra lookup). The column
    names are the constants of :data:`MEMORY_COLUMNS`; every value is a placeholder.
    """
    cols = [c for c, _, _ in MEMORY_COLUMNS] + (["embedding"] if with_embedding else [])
    row = "(" + ", ".join(["%s"] * len(cols)) + ")"
    return (
        f"INSERT INTO memories ({', '.join(cols)}) VALUES {', '.join([row] * n)} "
        "ON CONFLICT (memory_id) DO NOTHING RETURNING memory_id"
    )


def _nul_value(batch: Remembered) -> tuple[str, str] | None:
    """Return ``(memory_id, column)`` of the first text value holding NUL, or ``None``.

    PostgreSQL ``text`` cannot store the NUL character (U+0000); the superseded ids
    are checked too (column ``supersedes``).
    """
    for row in batch.memories.select(_TEXT_COLUMNS).iter_rows(named=True):
        for col in _TEXT_COLUMNS:
            value = row[col]
            values = value if isinstance(value, list) else [value]
            if any(v is not None and "\x00" in v for v in values):
                return row["memory_id"], col
    for old, new in batch.supersessions:
        if "\x00" in old:
            return new, "supersedes"
    return None


def predicate_sql(pred: Predicate | None) -> tuple[sql.Composable, dict[str, Any]]:
    """Translate a predicate into a SQL condition on ``memories`` plus its bound value.

    Args:
        pred: the structured filter, or ``None``.

    Returns:
        ``(condition, params)``: ``TRUE`` when ``pred`` is ``None``; otherwise
        ``<column> <= %(pv)s``, ``<column> = %(pv)s`` or ``<column> IS NULL``, the column
        an :class:`~psycopg.sql.Identifier` from :data:`~agentmem.arms.base.PREDICATE_FIELDS`
        and the value bound as ``pv``, never spliced.

    Raises:
        ArmError: for a field or op outside the supported set.
    """
    if pred is None:
        return sql.SQL("TRUE"), {}
    if pred.field not in PREDICATE_FIELDS:
        raise ArmError(f"unsupported predicate field {pred.field!r}")
    col = sql.Identifier(pred.field)
    if pred.op == "is_null":
        return sql.SQL("{} IS NULL").format(col), {}
    if pred.op == "<=":
        return sql.SQL("{} <= %(pv)s").format(col), {"pv": pred.value}
    if pred.op == "=":
        return sql.SQL("{} = %(pv)s").format(col), {"pv": pred.value}
    raise ArmError(f"unsupported predicate op {pred.op!r}")


def _safe_terms(text: str) -> list[str]:
    """Return :func:`query_terms` of ``text`` without NUL characters (PostgreSQL rejects them)."""
    return [t for t in (x.replace("\x00", "") for x in query_terms(text or "")) if t]


def tsquery_sql(terms: list[str], prefix: str = "t") -> tuple[sql.Composable, dict[str, Any]]:
    """Build an OR-tsquery from ``terms``, server-side and injection-proof.

    Each term becomes ``plainto_tsquery('english', %(t<i>)s)`` and the pieces are joined
    with the tsquery OR operator ``||``. ``plainto_tsquery`` treats its argument as plain
    text (operators ``& | ! : * ( ) '`` are ignored), so no user text can produce a
    tsquery syntax error; ``ADR-297`` is parsed by the same parser as the stored
    ``tsvector`` (``'adr' & '-297'``: both parts must occur, as they do in a body that
    carries the identifier). A term that is only a stopword yields an empty tsquery,
    which ``||`` drops.

    Args:
        terms: non-empty list of search terms.
        prefix: parameter-name prefix.

    Returns:
        ``(expression, params)``.
    """
    parts = [
        sql.SQL("plainto_tsquery({}, {})").format(
            sql.Literal(TS_CONFIG), sql.Placeholder(f"{prefix}{i}")
        )
        for i in range(len(terms))
    ]
    expr = sql.SQL("(") + sql.SQL(" || ").join(parts) + sql.SQL(")")
    return expr, {f"{prefix}{i}": t for i, t in enumerate(terms)}


class _PgArm(ArmBase):
    """Shared machinery of the Postgres arms: schema, build, open, count, explain, storage.

    Subclasses set the class variables, :meth:`_session_settings` and :meth:`_ranking`
    (the ranking statement and its parameters, or ``None`` when no statement runs).
    """

    name: ClassVar[str]
    family: ClassVar[str] = "postgres"
    capabilities: ClassVar[Capabilities]

    bare_call: ClassVar[BareCall] = BareCall(
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
            raise ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._h.conn

    def _where(self) -> str:
        """Name the store in messages: database and store directory."""
        if self._h is None:
            return str(self._store_dir)
        return f"database {self._h.database} ({self._store_dir})"

    # ---------------------------------------------------------------------- build
    def _ddl(self) -> list[sql.Composable]:
        """Return CREATE TABLE statements: the schema declaration plus this arm's access path.

        ``memories`` and ``memory_entities`` come from :func:`agentmem.schema.postgres_ddl`;
        the arm adds the denormalised ``entity_ids`` array, and by layout the ``embedding``
        column and the generated English ``tsvector`` (constants, never user input).
        """
        extra = ["entity_ids text[] NOT NULL DEFAULT '{}'"]
        if self._uses_vectors:
            extra.append(f"embedding vector({int(VECTOR_DIM)}) NOT NULL")
        if self._uses_fts:
            extra.append(
                f"tsv tsvector GENERATED ALWAYS AS (to_tsvector('{TS_CONFIG}', body)) STORED"
            )
        creates, _ = postgres_ddl(
            ("memories", "memory_entities"), extra_columns={"memories": extra}
        )
        return [sql.SQL(c) for c in creates]  # type: ignore[arg-type]

    def _index_ddl(self) -> list[sql.Composable]:
        """Return CREATE INDEX statements: the schema's B-tree indexes; GIN and HNSW by layout."""
        _, indexes = postgres_ddl(("memories", "memory_entities"))
        out: list[sql.Composable] = [sql.SQL(i) for i in indexes]  # type: ignore[arg-type]
        if self._uses_fts:
            out.append(sql.SQL("CREATE INDEX memories_tsv_idx ON memories USING gin (tsv)"))
        if self._uses_vectors:
            out.append(self._hnsw_ddl())
        return out

    def _hnsw_ddl(self) -> sql.Composable:
        """Return the HNSW index statement with the arm's ``m`` / ``ef_construction``.

        Both are validated ints rendered as literals (index storage parameters cannot be
        bound); pgvector's defaults (16, 64) apply when the arm has no such attribute.
        """
        m = int(getattr(self, "m", 16))
        efc = int(getattr(self, "ef_construction", 64))
        return sql.SQL(
            "CREATE INDEX memories_embedding_idx ON memories "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = {}, ef_construction = {})"
        ).format(sql.Literal(m), sql.Literal(efc))

    def build(self, corpus: Corpus, vectors: Embeddings, store_dir: Path) -> BuildStats:
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
        mem = corpus.memories
        names = [c for c, _, _ in MEMORY_COLUMNS]
        missing = [c for c in names if c not in mem.columns]
        if missing:
            raise ArmError(f"{self.name}: corpus memories lack columns {missing} ({store_dir})")
        ids = mem["memory_id"].to_list()
        mat: np.ndarray | None = None
        if self._uses_vectors:
            try:
                mat = np.ascontiguousarray(vectors.get(ids), dtype=np.float32)
            except KeyError as exc:
                raise ArmError(f"{self.name}: {exc.args[0]} ({store_dir})") from None
            if mat.ndim != 2 or mat.shape[1] != VECTOR_DIM:
                raise ArmError(
                    f"{self.name}: embeddings have shape {mat.shape}, need (n, {VECTOR_DIM})"
                )

        try:
            self._h = connect_store(store_dir, self.name, create=True)
        except PgError as exc:
            raise ArmError(f"{self.name}: cannot create store in {store_dir}: {exc}") from None
        conn = self._h.conn
        copy_cols = list(names) + (["embedding"] if self._uses_vectors else [])
        copy_types = [t for _, t, _ in MEMORY_COLUMNS] + (["vector"] if self._uses_vectors else [])
        copy_mem = sql.SQL("COPY memories ({}) FROM STDIN (FORMAT BINARY)").format(
            sql.SQL(", ").join(map(sql.Identifier, copy_cols))
        )
        # rows leave polars before the clock starts: ingest_ms times the database's COPY
        # (the raw bulk path the ingest benchmark compares against), not the conversion
        ent_idx = names.index("entity_ids")
        mem_rows: list[list[Any]] = []
        for i, row in enumerate(mem.select(names).iter_rows()):
            vals = list(row)
            vals[ent_idx] = [str(e) for e in (vals[ent_idx] or [])]
            if mat is not None:
                vals.append(mat[i])
            mem_rows.append(vals)
        ent_rows = [
            (mid, e)
            for mid, ents in zip(ids, mem["entity_ids"].to_list(), strict=True)
            for e in dict.fromkeys(str(x) for x in (ents or []))
        ]
        try:
            t0 = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                for stmt in self._ddl():
                    cur.execute(stmt)
                with cur.copy(copy_mem) as cp:
                    cp.set_types(copy_types)
                    for vals in mem_rows:
                        cp.write_row(vals)
                with cur.copy(
                    "COPY memory_entities (memory_id, entity_id) FROM STDIN (FORMAT BINARY)"
                ) as cp:
                    cp.set_types(["text", "text"])
                    for pair in ent_rows:
                        cp.write_row(pair)
            t1 = time.perf_counter()
            conn.execute(
                "SELECT set_config('maintenance_work_mem', %s, false)",
                (BUILD_MAINTENANCE_WORK_MEM,),
            )
            for stmt in self._index_ddl():
                conn.execute(stmt)
            conn.execute("VACUUM (ANALYZE) memories")
            conn.execute("VACUUM (ANALYZE) memory_entities")
            t2 = time.perf_counter()
            conn.execute("RESET maintenance_work_mem")
            self._apply_settings(conn)
        except psycopg.Error as exc:
            where = self._where()
            self.close()
            raise ArmError(f"{self.name}: build of {where} failed: {exc}") from exc
        return BuildStats(ingest_ms=(t1 - t0) * 1e3, index_ms=(t2 - t1) * 1e3)

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
        try:
            h = connect_store(store_dir, self.name, create=False)
        except PgError as exc:
            raise ArmError(f"{self.name}: cannot open store {store_dir}: {exc}") from None
        need = {c for c, _, _ in MEMORY_COLUMNS}
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
            raise ArmError(f"{self.name}: cannot read {h.database} ({store_dir}): {exc}") from exc
        if need - have:
            h.close()
            raise ArmError(
                f"{self.name}: database {h.database} ({store_dir}) lacks memories columns "
                f"{sorted(need - have)}"
            )
        self._h = h

    # ------------------------------------------------------------------- remember
    def remember(self, memories: pl.DataFrame, vectors: Embeddings) -> None:
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
        batch = prepare_memories(memories, vectors, self.name)
        if batch.memories.height == 0:
            return
        nul = _nul_value(batch)
        if nul is not None:
            raise ArmError(
                f"{self.name}: remember: memory {nul[0]!r}: column {nul[1]!r} holds a NUL "
                "character, which PostgreSQL text cannot store"
            )
        try:
            with conn.transaction(), conn.cursor() as cur:
                self._write(cur, batch)
        except psycopg.Error as exc:
            raise ArmError(f"{self.name}: remember into {self._where()} failed: {exc}") from exc

    def _write(self, cur: psycopg.Cursor, batch: Remembered) -> None:
        """Write ``batch`` inside the open transaction (see :meth:`remember`).

        Raises:
            ArmError: when a new id is already stored or a superseded id is not.
        """
        ids = batch.ids
        names = [c for c, _, _ in MEMORY_COLUMNS]
        rows: list[Any] = []
        for i, row in enumerate(batch.memories.select(names).iter_rows()):
            rows.extend(row)
            if self._uses_vectors:
                rows.append(batch.vectors[i])
        width = len(names) + int(self._uses_vectors)
        inserted: set[str] = set()
        for lo in range(0, len(ids), _INSERT_CHUNK):
            n = min(_INSERT_CHUNK, len(ids) - lo)
            cur.execute(
                _insert_memories_sql(n, self._uses_vectors),
                rows[lo * width : (lo + n) * width],
            )
            inserted.update(r[0] for r in cur.fetchall())
        if len(inserted) < len(ids):
            first = next(m for m in ids if m not in inserted)
            raise ArmError(
                f"{self.name}: remember: memory id {first!r} is already stored ({self._where()})"
            )
        pairs = [
            (mid, e)
            for mid, ents in zip(ids, batch.memories["entity_ids"].to_list(), strict=True)
            for e in dict.fromkeys(str(x) for x in ents)
        ]
        if pairs:
            cur.execute(
                "INSERT INTO memory_entities (memory_id, entity_id) "
                "SELECT * FROM unnest(%s::text[], %s::text[])",
                ([m for m, _ in pairs], [e for _, e in pairs]),
            )
        if batch.supersessions:
            last = dict(batch.supersessions)  # old -> its last correction in the batch
            cur.execute(
                "UPDATE memories AS m SET superseded_by = u.new_id "
                "FROM unnest(%s::text[], %s::text[]) AS u(old_id, new_id) "
                "WHERE m.memory_id = u.old_id RETURNING m.memory_id",
                (list(last), list(last.values())),
            )
            done = {r[0] for r in cur.fetchall()}
            for old, new in batch.supersessions:
                if old not in done:
                    raise ArmError(
                        f"{self.name}: remember: memory {new!r} supersedes {old!r}, "
                        f"which is not stored ({self._where()})"
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
        want = [m for m in fetch_ids(memory_ids) if "\x00" not in m]
        names = [c for c, _, _ in MEMORY_COLUMNS]
        select = sql.SQL("SELECT {} FROM memories WHERE memory_id = ANY(%s)").format(
            sql.SQL(", ").join(map(sql.Identifier, names))
        )
        try:
            found = {r[0]: r for r in conn.execute(select, (want,)).fetchall()} if want else {}
        except psycopg.Error as exc:
            raise ArmError(f"{self.name}: fetch from {self._where()} failed: {exc}") from exc
        data: dict[str, list[Any]] = {c: [] for c in MEMORY_SCHEMA}
        for mid in want:
            row = found.get(mid)
            if row is None:
                continue
            for col, value in zip(names, row, strict=True):
                data[col].append(value)
            data["form"].append(None)
        return pl.DataFrame(data, schema=MEMORY_SCHEMA)

    # ---------------------------------------------------------------------- query
    def _ranking(self, q: Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        """Return the ranking statement and parameters for ``q``, or ``None`` (no ids)."""
        raise NotImplementedError

    def _count_sql(self, q: Query) -> tuple[sql.Composable, dict[str, Any]]:
        """Return the exact-count statement: memories matching the predicate (not the text)."""
        cond, params = predicate_sql(q.predicate)
        return sql.SQL("SELECT count(*) FROM memories WHERE {}").format(cond), params

    def _query_vector(self, q: Query) -> np.ndarray:
        """Return the query embedding as float32 ``(384,)``.

        Raises:
            ArmError: when the embedding is missing or not of size 384.
        """
        v = checked_vector(q.embedding, self.name, f"query {q.query_id!r}", VECTOR_DIM)
        return v

    def _statements(self, q: Query, k: int) -> list[tuple[str, Any]]:
        """Return ``[(label, (stmt, params) | None), ...]`` in the order :meth:`query` runs."""
        out: list[tuple[str, Any]] = [("ranking", self._ranking(q, k) if k > 0 else None)]
        if q.wants_count:
            out.append(("count", self._count_sql(q)))
        return out

    def raw_ingest(self) -> RawIngest:
        """The raw bulk path: the memory tables read back and ``COPY``-ed in binary."""
        return RawIngest(
            "tables",
            pg_tables=("memories", "memory_entities"),
            beyond="nothing: rows leave polars before the clock starts, as in the raw path",
        )

    def query(self, q: Query, k: int) -> Result:
        """Return at most ``k`` memory ids best first, plus the exact count if wanted.

        ``Result.count`` (when ``q.wants_count``) is ``SELECT count(*)`` of the memories
        matching the predicate (all memories without one), independent of the text.
        Hostile text never raises: text with no search terms gives no ranked ids from the
        text-only arms.

        Raises:
            ArmError: when the store is not open, or on a PostgreSQL error.
        """
        conn = self._conn()
        ids: list[str] = []
        count: int | None = None
        try:
            for label, stmt in self._statements(q, k):
                if stmt is None:
                    continue
                rows = conn.execute(stmt[0], stmt[1]).fetchall()
                if label == "ranking":
                    ids = [r[0] for r in rows]
                else:
                    count = int(rows[0][0])
        except psycopg.Error as exc:
            raise ArmError(
                f"{self.name}: query {q.query_id!r} on {self._where()} failed: {exc}"
            ) from exc
        return Result(memory_ids=ids[:k], count=count)

    def raw_query_call(self, q: Query, k: int) -> Callable[[], list[list[Any]]]:
        """Return a zero-argument function making exactly the driver calls :meth:`query` makes.

        The statements of :meth:`_statements` are rendered to their SQL text here, once
        (``Composable.as_string``, the text psycopg sends); each call of the returned
        function only runs ``conn.execute(text, params).fetchall()`` for each, with no
        result handling. The harness-overhead benchmark (:mod:`agentmem.bench`) times it
        against :meth:`query`.

        Returns:
            A function returning one list of rows per statement: the ranking's rows
            first (``[]`` when no ranking statement runs), then the count's when
            ``q.wants_count``.

        Raises:
            ArmError: when the store is not open.
        """
        conn = self._conn()
        stmts = [
            (stmt[0].as_string(conn), stmt[1]) if stmt is not None else None
            for _, stmt in self._statements(q, k)
        ]

        def call() -> list[list[Any]]:
            return [conn.execute(*s).fetchall() if s is not None else [] for s in stmts]

        return call

    def raw_ids(self, raw: list[list[Any]], k: int) -> list[str]:
        """Return the ids :meth:`query` makes of ``raw`` (:meth:`raw_query_call`'s output).

        The ranking rows' first column, cut to ``k``.
        """
        return [r[0] for r in raw[0]][: max(k, 0)] if raw else []

    def explain(self, q: Query, k: int = 10) -> str:
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
        plans: list[dict[str, Any]] = []
        try:
            settings = {
                key: conn.execute("SELECT current_setting(%s)", (key,)).fetchone()[0]  # type: ignore[index]
                for key in self._session_settings()
            }
            for label, stmt in self._statements(q, max(k, 1)):
                if stmt is None:
                    plans.append(
                        {"Statement": label, "Note": "no statement runs: the text has no terms"}
                    )
                    continue
                body, params = stmt
                row = conn.execute(
                    sql.SQL("EXPLAIN (FORMAT JSON, SETTINGS) ") + body, params
                ).fetchone()
                doc = row[0] if row is not None else []
                if isinstance(doc, str):
                    doc = json.loads(doc)
                for entry in doc:
                    plans.append(
                        {
                            "Statement": label,
                            "Query Text": body.as_string(conn),
                            "Session Settings": settings,
                            **entry,
                        }
                    )
        except psycopg.Error as exc:
            raise ArmError(f"{self.name}: explain on {self._where()} failed: {exc}") from exc
        return json.dumps(plans, indent=2)

    # -------------------------------------------------------------------- storage
    def storage(self) -> StorageStats:
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
        objects: dict[str, int] = {}
        try:
            tables = conn.execute(
                "SELECT c.oid, c.relname, c.reltoastrelid::oid, pg_table_size(c.oid), "
                "CASE WHEN c.reltoastrelid = 0 THEN 0 "
                "ELSE pg_total_relation_size(c.reltoastrelid) END "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
                "ORDER BY c.relname"
            ).fetchall()
            for oid, relname, toast_oid, table_size, toast_size in tables:
                objects[relname] = int(table_size) - int(toast_size)
                if int(toast_oid) != 0:
                    objects[f"{relname} (toast)"] = int(toast_size)
                for iname, isize in conn.execute(
                    "SELECT ci.relname, pg_total_relation_size(ci.oid) FROM pg_index i "
                    "JOIN pg_class ci ON ci.oid = i.indexrelid WHERE i.indrelid = %s "
                    "ORDER BY ci.relname",
                    (oid,),
                ):
                    objects[iname] = int(isize)
        except psycopg.Error as exc:
            raise ArmError(f"{self.name}: storage query on {self._where()} failed: {exc}") from exc
        return StorageStats(
            total_bytes=sum(objects.values()), objects=objects, source="pg_total_relation_size"
        )

    def close(self) -> None:
        """Close the connection and stop the embedded server if this was its last user.

        Safe to call twice.
        """
        h, self._h = self._h, None
        if h is not None:
            h.close()


# ------------------------------------------------------------------------------ arms
def _check_positive(**params: int) -> None:
    """Raise ``ValueError`` naming the first parameter that is not a positive int."""
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")


class PgHnswArm(_PgArm):
    """``pg-hnsw``: pgvector HNSW (cosine) with the predicate in ``WHERE``.

    ``SELECT memory_id FROM memories WHERE <predicate> ORDER BY embedding <=> $q LIMIT k``.
    With pgvector's default ``hnsw.ef_search = 40`` and iterative scans off, a filtered
    query examines only ~40 nearest candidates and then filters them, so it can return
    fewer than ``k`` ids ("underfill") — the behaviour this arm exists to show; see
    :class:`PgHnswIterativeArm` for the fix. (The planner may also skip the HNSW index for
    a very selective predicate and sort exact distances instead; EXPLAIN shows which.)
    Aggregates: ``SELECT count(*) ... WHERE <predicate>``.

    Args:
        m: HNSW ``m`` (max neighbours per layer; pgvector default 16).
        ef_construction: HNSW build candidate list size (pgvector default 64).
        ef_search: ``hnsw.ef_search`` for queries (pgvector default 40).
    """

    name: ClassVar[str] = "pg-hnsw"
    prefix_stable: ClassVar[bool] = False
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=True,
        aggregate=True,
        vector_access="hnsw-filtered",
        text_access="none",
        transactions=True,
        filter_stage="in-search",
    )

    def __init__(self, *, m: int = 16, ef_construction: int = 64, ef_search: int = 40) -> None:
        super().__init__()
        _check_positive(m=m, ef_construction=ef_construction, ef_search=ef_search)
        self.m = m
        self.ef_construction = ef_construction
        self.ef_search = ef_search

    def _session_settings(self) -> dict[str, str]:
        return {"hnsw.ef_search": str(self.ef_search), "hnsw.iterative_scan": "off"}

    def _ranking(self, q: Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        cond, params = predicate_sql(q.predicate)
        stmt = sql.SQL(
            "SELECT memory_id FROM memories WHERE {} ORDER BY embedding <=> %(qv)s LIMIT %(k)s"
        ).format(cond)
        return stmt, {**params, "qv": self._query_vector(q), "k": int(k)}


class PgHnswIterativeArm(PgHnswArm):
    """``pg-hnsw-iterative``: pg-hnsw with pgvector 0.8 iterative index scans.

    Session settings ``hnsw.iterative_scan = relaxed_order`` and ``hnsw.max_scan_tuples``
    let a filtered HNSW scan continue past ``ef_search`` candidates until ``k`` rows pass
    the predicate (or ``max_scan_tuples`` tuples were visited), so filtered queries fill
    their ``k`` slots. Relaxed order may return slightly out-of-order rows, so the ``k``
    results are re-sorted by distance in a materialized CTE, as pgvector's README
    recommends (``ORDER BY distance + 0``)::

        WITH relaxed AS MATERIALIZED (SELECT memory_id, embedding <=> $q AS distance
            FROM memories WHERE <predicate> ORDER BY distance LIMIT k)
        SELECT memory_id FROM relaxed ORDER BY distance + 0

    Args:
        m: HNSW ``m`` (default 16).
        ef_construction: HNSW build list size (default 64).
        ef_search: ``hnsw.ef_search`` (default 40).
        max_scan_tuples: ``hnsw.max_scan_tuples``, the iterative scan's tuple budget
            (pgvector default 20000).
    """

    name: ClassVar[str] = "pg-hnsw-iterative"
    prefix_stable: ClassVar[bool] = False
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=True,
        aggregate=True,
        vector_access="hnsw-iterative",
        text_access="none",
        transactions=True,
        filter_stage="in-search",
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
        _check_positive(max_scan_tuples=max_scan_tuples)
        self.max_scan_tuples = max_scan_tuples

    def _session_settings(self) -> dict[str, str]:
        return {
            "hnsw.ef_search": str(self.ef_search),
            "hnsw.iterative_scan": "relaxed_order",
            "hnsw.max_scan_tuples": str(self.max_scan_tuples),
        }

    def _ranking(self, q: Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        cond, params = predicate_sql(q.predicate)
        stmt = sql.SQL(
            "WITH relaxed AS MATERIALIZED ("
            "SELECT memory_id, embedding <=> %(qv)s AS distance FROM memories "
            "WHERE {} ORDER BY distance LIMIT %(k)s) "
            "SELECT memory_id FROM relaxed ORDER BY distance + 0"
        ).format(cond)
        return stmt, {**params, "qv": self._query_vector(q), "k": int(k)}


class PgBtreeArm(_PgArm):
    r"""``pg-btree``: B-tree indexes for predicates, ILIKE-term scoring for text.

    Same scoring as sqlite-btree: score = number of query terms
    (:func:`agentmem.text.query_terms`) contained in the body, each tested with
    ``body ILIKE %(t<i>)s ESCAPE '\'`` (:func:`agentmem.text.like_pattern`);
    ``WHERE score > 0 AND <predicate> ORDER BY score DESC, created_day DESC, seq DESC
    LIMIT k``. Text without terms returns no ids (the count, if wanted, still comes).
    """

    name: ClassVar[str] = "pg-btree"
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

    def _ranking(self, q: Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        terms = _safe_terms(q.text)
        if not terms:
            return None
        cond, params = predicate_sql(q.predicate)
        score = sql.SQL(" + ").join(
            sql.SQL("(body ILIKE {} ESCAPE '\\')::int").format(sql.Placeholder(f"t{i}"))
            for i in range(len(terms))
        )
        stmt = sql.SQL(
            "SELECT memory_id FROM ("
            "SELECT memory_id, created_day, seq, ({}) AS score FROM memories WHERE {}"
            ") AS scored WHERE score > 0 "
            "ORDER BY score DESC, created_day DESC, seq DESC LIMIT %(k)s"
        ).format(score, cond)
        binds = {f"t{i}": like_pattern(t) for i, t in enumerate(terms)}
        return stmt, {**params, **binds, "k": int(k)}


class PgGinArm(_PgArm):
    """``pg-gin``: stored English ``tsvector`` + GIN index, ranked by ``ts_rank_cd``.

    ``tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED`` with a GIN
    index; the query is the OR of the terms (:func:`tsquery_sql`, each term through
    ``plainto_tsquery``, so no text can raise a tsquery syntax error)::

        SELECT memory_id FROM memories WHERE tsv @@ $tsq AND <predicate>
        ORDER BY ts_rank_cd(tsv, $tsq, 1) DESC, created_day DESC, seq DESC LIMIT k

    Text without terms returns no ids (the count, if wanted, still comes).
    """

    name: ClassVar[str] = "pg-gin"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=True,
        aggregate=True,
        vector_access="none",
        text_access="gin-tsvector",
        transactions=True,
        filter_stage="in-search",
    )

    def _ranking(self, q: Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        terms = _safe_terms(q.text)
        if not terms:
            return None
        cond, params = predicate_sql(q.predicate)
        tsq, tparams = tsquery_sql(terms)
        stmt = sql.SQL(
            "SELECT memory_id FROM memories WHERE tsv @@ {tsq} AND {cond} "
            "ORDER BY ts_rank_cd(tsv, {tsq}, %(rnorm)s) DESC, created_day DESC, seq DESC "
            "LIMIT %(k)s"
        ).format(tsq=tsq, cond=cond)
        return stmt, {**params, **tparams, "k": int(k), "rnorm": TS_RANK_NORMALIZATION}


class PgHybridArm(_PgArm):
    """``pg-hybrid``: GIN branch + HNSW branch fused by RRF, in ONE SQL statement.

    Branch ``gin``: top ``branch_k`` by ``ts_rank_cd`` among ``tsv @@ $tsq AND <predicate>``
    (ties newest first); branch ``vec``: top ``branch_k`` by cosine distance
    (``ORDER BY embedding <=> $q``) among ``<predicate>``. Each branch numbers its rows
    with ``row_number()`` (rank from 1); the branches are combined with ``UNION ALL`` and
    ``GROUP BY memory_id`` and ranked by Reciprocal Rank Fusion (Cormack, Clarke &
    Buettcher 2009): ``score(d) = sum over branches of 1 / (rrf_k + rank_b(d))``; ties
    newest first; ``LIMIT k``. Both branches live in the same statement, so one EXPLAIN
    shows the GIN and the HNSW index. When the text has no terms only the vector branch
    runs. Note: with pgvector's default ``hnsw.ef_search = 40`` the HNSW branch yields at
    most ~40 candidates before filtering, fewer than ``branch_k = 50``.

    Args:
        branch_k: candidates per branch (default 50).
        rrf_k: RRF constant (default 60).
        m: HNSW ``m`` (default 16).
        ef_construction: HNSW build list size (default 64).
        ef_search: ``hnsw.ef_search`` (default 40).
    """

    name: ClassVar[str] = "pg-hybrid"
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=True,
        aggregate=True,
        vector_access="hnsw-filtered",
        text_access="gin-tsvector",
        transactions=True,
        filter_stage="in-search",
    )

    def __init__(
        self,
        *,
        branch_k: int = 50,
        rrf_k: int = 60,
        m: int = 16,
        ef_construction: int = 64,
        ef_search: int = 40,
    ) -> None:
        super().__init__()
        _check_positive(
            branch_k=branch_k, m=m, ef_construction=ef_construction, ef_search=ef_search
        )
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 0:
            raise ValueError(f"rrf_k must be a non-negative integer, got {rrf_k!r}")
        self.branch_k = branch_k
        self.rrf_k = rrf_k
        self.m = m
        self.ef_construction = ef_construction
        self.ef_search = ef_search

    def _session_settings(self) -> dict[str, str]:
        return {"hnsw.ef_search": str(self.ef_search), "hnsw.iterative_scan": "off"}

    def _ranking(self, q: Query, k: int) -> tuple[sql.Composable, dict[str, Any]] | None:
        cond, params = predicate_sql(q.predicate)
        binds: dict[str, Any] = {
            **params,
            "qv": self._query_vector(q),
            "bk": self.branch_k,
            "rrfk": self.rrf_k,
            "k": int(k),
        }
        vec = sql.SQL(
            "vec AS (SELECT memory_id, created_day, seq, "
            "row_number() OVER (ORDER BY distance) AS rnk FROM ("
            "SELECT memory_id, created_day, seq, embedding <=> %(qv)s AS distance "
            "FROM memories WHERE {cond} ORDER BY distance LIMIT %(bk)s) AS v)"
        ).format(cond=cond)
        ctes = [vec]
        union = sql.SQL("SELECT memory_id, created_day, seq, rnk FROM vec")
        terms = _safe_terms(q.text)
        if terms:
            tsq, tparams = tsquery_sql(terms)
            binds.update(tparams)
            binds["rnorm"] = TS_RANK_NORMALIZATION
            gin = sql.SQL(
                "gin AS (SELECT memory_id, created_day, seq, row_number() OVER "
                "(ORDER BY rank DESC, created_day DESC, seq DESC) AS rnk FROM ("
                "SELECT memory_id, created_day, seq, ts_rank_cd(tsv, {tsq}, %(rnorm)s) AS rank "
                "FROM memories WHERE tsv @@ {tsq} AND {cond} "
                "ORDER BY rank DESC, created_day DESC, seq DESC LIMIT %(bk)s) AS g)"
            ).format(tsq=tsq, cond=cond)
            ctes.insert(0, gin)
            union = sql.SQL("SELECT memory_id, created_day, seq, rnk FROM gin UNION ALL ") + union
        stmt = sql.SQL(
            "WITH {ctes} SELECT memory_id FROM ({union}) AS u "
            "GROUP BY memory_id, created_day, seq "
            "ORDER BY sum(1.0 / (%(rrfk)s + rnk)) DESC, created_day DESC, seq DESC "
            "LIMIT %(k)s"
        ).format(ctes=sql.SQL(", ").join(ctes), union=union)
        return stmt, binds


__all__ = [
    "PgBtreeArm",
    "PgGinArm",
    "PgHnswArm",
    "PgHnswIterativeArm",
    "PgHybridArm",
    "predicate_sql",
    "tsquery_sql",
]
