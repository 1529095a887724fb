"""``milvus-lite``: Milvus Lite driven through pymilvus's ``MilvusClient`` on a local ``.db``.

The calls, the capabilities and the product's behaviour behind them (selective filters
that leave fewer than ``k`` hits, the one-process lock, ``describe_index``): see
docs/arms/milvus-lite.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.milvus.expr import ids_expr, query_expr
from agentmem.arms.milvus.fields import PK, ROW_FIELDS, VECTOR, milvus_rows, schema_fields
from agentmem.arms.milvus.quiet import (
    QuietClient,
    held_product_errors,
    record_text,
    release_records,
)
from agentmem.arms.product import (
    ProductArm,
    batch_answers,
    directory_storage,
    rows_frame,
)

__all__ = ["COLLECTION", "DB_NAME", "MAX_TOPK", "MilvusLiteArm"]

#: The Milvus Lite data directory under ``store_dir`` (the ``uri`` handed to MilvusClient).
DB_NAME = "milvus.db"
#: The one collection the arm keeps.
COLLECTION = "memories"
#: Milvus's documented upper bound on a search's ``limit`` (topK).
MAX_TOPK = 16384
#: Ids per ``memory_id in [...]`` look-up.
_LOOKUP_CHUNK = 1000


# Milvus Lite runs one gRPC server per ``.db`` path in this process and refuses a second
# process; several arm instances of one process share the server, which the last close
# stops (MilvusClient.close does not).
_SERVER_USERS: dict[str, int] = {}
_SERVER_LOCK = threading.Lock()


class MilvusLiteArm(ProductArm):
    """Milvus Lite (pymilvus ``MilvusClient`` on ``<store_dir>/milvus.db``), HNSW + filters.

    One collection ``memories``: primary key ``memory_id`` (VARCHAR), ``vector``
    (FLOAT_VECTOR(384)) with a faiss HNSW index, metric COSINE, and the scalar columns of
    :data:`~agentmem.arms.product.METADATA_FIELDS` plus ``body``. A predicate becomes a
    Milvus filter expression (``created_day <= 11``, ``session_id == "S1"``,
    ``superseded_by == ""``) that Milvus Lite applies inside the search: a bitmap per
    segment handed to faiss as an ``IDSelectorBatch``, so excluded rows never enter the
    result list. The HNSW traversal is bounded by ``ef`` all the same, so a selective
    filter can return fewer than ``k`` ids although more match (measured in the doc page).
    Counts are ``client.query(filter, output_fields=["count(*)"])``, exact.

    Scope: in-search. ``scope_id`` is a VARCHAR column (``""`` for none) and ``q.scope``
    is ``scope_id == "<scope>"``, an escaped string literal (Milvus Lite has no filter
    templating), AND-ed with the predicate in the one expression the search and the
    count use (:func:`~agentmem.arms.milvus.expr.query_expr`); like a predicate it is
    bounded by ``ef`` when selective.

    Rows remembered after the build sit in Milvus Lite's memtable (searched brute force)
    until the store is closed, which flushes them into a segment with its own HNSW index.

    Product behaviour the arm works with: Milvus Lite runs in this process (a gRPC server
    on threads) and locks the ``.db`` against other processes, whose ``MilvusClient``
    fails with "Open local milvus failed" (the cause, e.g. the lock, only in Milvus Lite's
    log: the arm's ArmError quotes it); ``MilvusClient.close`` leaves the server and
    the lock in place, so :meth:`close` stops the server once no arm of this process
    uses it; ``insert`` of a stored id silently replaces the row, so ids are checked first;
    ``client.get`` does not escape quotes in ids, so look-ups use escaped ``in`` filters;
    pymilvus logs every failed call at ERROR with a traceback to stderr before raising
    it, so the arm's calls hold that record back (the ArmError carries the message).

    Args:
        ef: HNSW search breadth (``search_params={"params": {"ef": ef}}``; faiss searches
            with ``max(ef, k)``); Milvus Lite's default is 64.
        M: HNSW out-degree (index build parameter).
        ef_construction: HNSW build candidate-list size (``efConstruction``).
        batch_size: rows per ``insert`` call of the build.

    Raises:
        ValueError: when a parameter is below 1 (``M`` below 2).
    """

    name: ClassVar[str] = "milvus-lite"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("ef", "query", (16, 32, 256), "search ef: HNSW search breadth"),
        Knob("M", "build", (), "HNSW links per node"),
        Knob("ef_construction", "build", (), "HNSW build breadth"),
    )
    products: ClassVar[tuple[str, ...]] = ("pymilvus", "milvus-lite")
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.vector_database(
        vector_access="hnsw"
    )
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "MilvusClient.search (vector, limit, filter expression, ef) and, for a count, "
        "query(count(*))",
        "the vector check, the search arguments and the filter built per call; the id list",
    )
    #: faiss searches with ``max(ef, k)`` candidates: the depth grows with ``k``.
    prefix_stable: ClassVar[bool] = False
    #: Milvus Lite refuses a second process on one store (its data-directory lock)
    exclusive_store: ClassVar[bool] = True
    #: the HNSW search breadth bounds what a selective filter finds (the filter is a bitmap
    #: inside the search); the post-filter sweep sets it to k * x
    candidate_param: ClassVar[str | None] = "ef"
    candidate_unit: ClassVar[str] = "list"

    def __init__(
        self, ef: int = 64, M: int = 16, ef_construction: int = 200, batch_size: int = 2000
    ) -> None:
        if ef < 1 or M < 2 or ef_construction < 1 or batch_size < 1:
            raise ValueError(
                f"{self.name}: need ef >= 1, M >= 2, ef_construction >= 1, batch_size >= 1; "
                f"got {ef}, {M}, {ef_construction}, {batch_size}"
            )
        self.ef = int(ef)
        self.M = int(M)
        self.ef_construction = int(ef_construction)
        self.batch_size = int(batch_size)
        self._client: Any = None
        self._dir: Path | None = None
        self._uri: str | None = None
        #: wall ms of the last ``MilvusClient(uri=...)`` (starting or reusing the server)
        self.server_start_ms: float | None = None

    # ------------------------------------------------------------------ connection
    def _connect(self, store_dir: Path) -> None:
        """Open ``MilvusClient(uri=<store_dir>/milvus.db)``; Milvus Lite starts its server."""
        from pymilvus import MilvusClient

        uri = str((store_dir / DB_NAME).resolve())
        with _SERVER_LOCK:
            t0 = time.perf_counter()
            held: list[logging.LogRecord] = []
            try:
                with held_product_errors() as held:
                    client = MilvusClient(uri=uri)
            except Exception as exc:
                # the cause (e.g. another process's lock) is only in Milvus Lite's log
                logged = "".join(f"; Milvus Lite: {record_text(r)}" for r in held)
                raise base.ArmError(
                    f"{self.name}: cannot open Milvus Lite store {uri}: {exc}{logged} (Milvus "
                    "Lite allows one process per .db; is another process holding it?)"
                ) from exc
            release_records(held)
            self.server_start_ms = (time.perf_counter() - t0) * 1000.0
            _SERVER_USERS[uri] = _SERVER_USERS.get(uri, 0) + 1
        self._client, self._dir, self._uri = QuietClient(client), store_dir, uri

    def _require_open(self) -> Any:
        """The open client.

        Raises:
            ArmError: when the arm is not open.
        """
        if self._client is None:
            raise base.ArmError(f"{self.name}: not open (call build or open first)")
        return self._client

    def close(self) -> None:
        """Close the client and, for the last user in this process, stop Milvus Lite's server.

        Stopping it (``milvus_lite.server_manager_instance.release_server``) flushes the
        memtable into a segment and releases the ``.db`` lock, so another process may
        open the store. Safe to call twice.
        """
        client, uri = self._client, self._uri
        self._client = self._dir = self._uri = None
        if client is None or uri is None:
            return
        try:
            client.close()
        finally:
            with _SERVER_LOCK:
                users = _SERVER_USERS.get(uri, 1) - 1
                if users > 0:
                    _SERVER_USERS[uri] = users
                else:
                    _SERVER_USERS.pop(uri, None)
                    from milvus_lite import server_manager_instance

                    server_manager_instance.release_server(uri)

    # ------------------------------------------------------------------ lifecycle
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
        """Create the collection, insert every memory in batches, flush, index, load.

        Calls: ``create_collection(schema, consistency_level="Strong")``;
        ``insert`` per ``batch_size`` rows; ``flush`` (rows to a segment);
        ``create_index`` (HNSW, COSINE, ``M``, ``efConstruction``; built on the segment
        at once); ``load_collection``. A collection left in ``store_dir`` is dropped first.

        Returns:
            ``ingest_ms`` = the inserts and the flush; ``index_ms`` = create_index + load.

        Raises:
            ArmError: when a memory has no vector or Milvus Lite fails.
        """
        from pymilvus import DataType, MilvusClient

        self.close()
        store_dir = Path(store_dir)
        memories = corpus.memories
        ids = memories.get_column("memory_id").cast(pl.String).to_list()
        try:
            matrix = vectors.get(ids) if ids else np.zeros((0, base.VECTOR_DIM), np.float32)
        except KeyError as exc:
            raise base.ArmError(f"{self.name}: cannot build store in {store_dir}: {exc}") from exc
        matrix = base.float32_array(matrix, self.name, "build: embeddings")
        store_dir.mkdir(parents=True, exist_ok=True)
        self._connect(store_dir)
        client = self._client
        if client.has_collection(COLLECTION):
            client.drop_collection(COLLECTION)
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        for field, kind, extra in schema_fields():
            schema.add_field(field, getattr(DataType, kind), **extra)
        client.create_collection(COLLECTION, schema=schema, consistency_level="Strong")
        rows = milvus_rows(memories, matrix)
        t0 = time.perf_counter()
        for start in range(0, len(rows), self.batch_size):
            client.insert(COLLECTION, rows[start : start + self.batch_size])
        client.flush(COLLECTION)
        ingest_ms = (time.perf_counter() - t0) * 1000.0
        t1 = time.perf_counter()
        client.create_index(COLLECTION, self._index_params())
        client.load_collection(COLLECTION)
        index_ms = (time.perf_counter() - t1) * 1000.0
        return base.BuildStats(ingest_ms=ingest_ms, index_ms=index_ms)

    def open(self, store_dir: Path) -> None:
        """Reconnect to ``<store_dir>/milvus.db`` and load the collection.

        In this process the running Milvus Lite server is reused; another process holding
        the store makes this fail (Milvus Lite's file lock).

        Raises:
            ArmError: naming the path when the store or its collection is missing, the
                collection lacks a stored field (e.g. ``scope_id``), or another process
                holds it.
        """
        self.close()
        store_dir = Path(store_dir)
        if not (store_dir / DB_NAME).is_dir():
            raise base.ArmError(f"{self.name}: no Milvus Lite store at {store_dir / DB_NAME}")
        self._connect(store_dir)
        if not self._client.has_collection(COLLECTION):
            self.close()
            raise base.ArmError(
                f"{self.name}: {store_dir / DB_NAME} has no collection {COLLECTION}"
            )
        fields = {f["name"] for f in self._client.describe_collection(COLLECTION)["fields"]}
        missing = [c for c in ROW_FIELDS if c not in fields]
        if missing:
            self.close()
            raise base.ArmError(
                f"{self.name}: collection {COLLECTION} in {store_dir / DB_NAME} lacks the "
                f"fields {missing}; rebuild the store"
            )
        self._client.load_collection(COLLECTION)

    # ------------------------------------------------------------------ reads
    def _search_call(self, q: base.Query, k: int) -> dict[str, Any]:
        """The keyword arguments of the ``client.search`` call :meth:`query` makes."""
        return {
            "collection_name": COLLECTION,
            "anns_field": VECTOR,
            "limit": min(int(k), MAX_TOPK),
            "filter": query_expr(q),
            "search_params": {"metric_type": "COSINE", "params": {"ef": self.ef}},
            "output_fields": [PK],
        }

    def query(self, q: base.Query, k: int) -> base.Result:
        """The ``k`` nearest memories by cosine in ``q.scope`` matching ``q.predicate``.

        ``q.text`` is ignored (no full text). ``k`` is capped at :data:`MAX_TOPK`;
        ``k <= 0`` or a non-finite embedding searches nothing. With ``q.wants_count`` the
        count is ``client.query(filter, output_fields=["count(*)"])`` (exact).

        Raises:
            ArmError: when the arm is not open, the embedding is not 384 values, or
                Milvus Lite fails.
        """
        raw = self.raw_query_call(q, k)()
        return base.Result(memory_ids=self.raw_ids(raw, k), count=raw[1])

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], tuple[Any, int | None]]:
        """Return a zero-argument function making exactly the calls :meth:`query` makes.

        The vector check, the search arguments and the filter expression are built here,
        once; the function runs ``MilvusClient.search`` (when a search runs) and the count
        (when ``q.wants_count``) and returns ``(hits or None, count or None)``.

        Raises:
            ArmError: when the arm is not open or the embedding is not 384 values.
        """
        client = self._require_open()
        vec = base.checked_vector(q.embedding, self.name, f"query {q.query_id!r}")
        search = self._search_call(q, k) if k > 0 and np.all(np.isfinite(vec)) else None
        expr = query_expr(q) if q.wants_count else None

        def call() -> tuple[Any, int | None]:
            hits = client.search(data=[vec], **search) if search is not None else None
            return hits, (self._count(expr) if expr is not None else None)

        return call

    def raw_ids(self, raw: tuple[Any, int | None], k: int) -> list[str]:
        """The ids :meth:`query` returns of :meth:`raw_query_call`'s output."""
        hits = raw[0]
        return [str(h[PK]) for h in hits[0]] if hits is not None else []

    def query_many(self, queries: Sequence[base.Query], k: int) -> list[base.Result]:
        """Each answer :meth:`query` gives, from one ``MilvusClient.search`` per filter.

        The search takes every vector of a group as ``data=[v1, v2, ...]`` (Milvus's
        ``nq``) with :meth:`query`'s keyword arguments, and answers one hit list per
        vector. Counts are :meth:`query`'s.

        Raises:
            ArmError: as :meth:`query`.
        """
        client = self._require_open()

        def search(first: base.Query, vecs: list[np.ndarray]) -> list[list[str]]:
            hits = client.search(data=vecs, **self._search_call(first, k))
            return [[str(h[PK]) for h in one] for one in hits]

        def count(q: base.Query) -> int | None:
            return self._count(query_expr(q)) if q.wants_count else None

        return batch_answers(self.name, queries, k, query_expr, search, count)

    def _count(self, expr: str) -> int:
        """Exact number of stored memories matching the filter ``expr`` (``""``: all)."""
        rows = self._require_open().query(COLLECTION, filter=expr, output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    def _lookup(self, ids: Sequence[str], fields: list[str]) -> dict[str, dict[str, Any]]:
        """Stored rows of ``ids`` by id (``fields`` read), via ``memory_id in [...]``."""
        client = self._require_open()
        out: dict[str, dict[str, Any]] = {}
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), _LOOKUP_CHUNK):
            chunk = ids[start : start + _LOOKUP_CHUNK]
            for row in client.query(COLLECTION, filter=ids_expr(PK, chunk), output_fields=fields):
                out[str(row[PK])] = dict(row)
        return out

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Stored rows of ``memory_ids`` in the order asked, each once, unknown ids left out.

        ``entity_ids`` is not stored (null); ``""`` ids read back as null.

        Raises:
            ArmError: when the arm is not open or Milvus Lite fails.
        """
        asked = list(dict.fromkeys(str(i) for i in memory_ids))
        found = self._lookup(asked, ROW_FIELDS)
        return rows_frame([found[i] for i in asked if i in found])

    def explain(self, q: base.Query, k: int = 10) -> str:
        """The exact ``search`` (and count) call :meth:`query` makes, with the index it uses."""
        client = self._require_open()
        call = self._search_call(q, k)
        index = client.describe_index(COLLECTION, VECTOR)
        rows = client.get_collection_stats(COLLECTION).get("row_count")
        expr = call["filter"]
        where = (
            f"EXPR = {expr} (evaluated in-search: a bitmap per segment passed to faiss as "
            "an IDSelectorBatch; unflushed rows brute force)"
            if expr
            else "EXPR = '' (no filter)"
        )
        count = (
            f"; count: client.query({COLLECTION!r}, filter=EXPR, output_fields=['count(*)'])"
            if q.wants_count
            else ""
        )
        return (
            f"MilvusClient.search(collection_name={COLLECTION!r}, data=[<384-d float32>], "
            f"anns_field={VECTOR!r}, limit={call['limit']}, filter=EXPR, "
            f"search_params={call['search_params']!r}, output_fields={call['output_fields']!r})"
            f" with {where}; index {index!r} over {rows} rows; text IGNORED{count}"
        )

    def storage(self) -> base.StorageStats:
        """Bytes of the Milvus Lite data directory (Milvus Lite reports rows, not bytes).

        ``counts["memories"]`` is ``get_collection_stats``'s ``row_count``.

        Raises:
            ArmError: when the arm is not open.
        """
        client = self._require_open()
        assert self._dir is not None
        st = directory_storage(
            self._dir / DB_NAME, "directory size of the Milvus Lite data directory"
        )
        st.counts = {"memories": int(client.get_collection_stats(COLLECTION)["row_count"])}
        return st

    # ------------------------------------------------------------------ writes
    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Write a batch through ``insert`` (or one ``upsert`` when it corrects memories).

        New ids must not be stored (Milvus's insert would silently replace the row);
        superseded ids must be stored or in the batch. Each corrected stored memory is
        read back whole (``query(output_fields=[..., "vector"])``) and rewritten with
        ``superseded_by`` set, in the same ``upsert`` as the new rows: Milvus Lite
        applies one call as one WAL batch, and the next query sees it.

        Raises:
            ArmError: when the arm is not open, the batch is invalid, an id is already
                stored, a superseded id is not stored, or Milvus Lite fails (nothing is
                written then).
        """
        client = self._require_open()
        batch = base.prepare_memories(memories, vectors, self.name)
        ids = batch.ids
        if not ids:
            return
        stored = self._lookup(ids, [PK])
        if stored:
            dup = next(i for i in ids if i in stored)
            raise base.ArmError(f"{self.name}: remember: memory id {dup!r} is already stored")
        rows = milvus_rows(batch.memories, batch.vectors)
        by_id = {row[PK]: row for row in rows}
        outside = [old for old, _ in batch.supersessions if old not in by_id]
        olds = self._lookup(outside, [*ROW_FIELDS, VECTOR]) if outside else {}
        for old, new in batch.supersessions:
            target = by_id.get(old) or olds.get(old)
            if target is None:
                raise base.ArmError(
                    f"{self.name}: remember: superseded memory {old!r} is not stored"
                )
            target["superseded_by"] = new
        if olds:
            client.upsert(COLLECTION, rows + list(olds.values()))
        else:
            client.insert(COLLECTION, rows)

    def _index_params(self) -> Any:
        """``prepare_index_params()`` with the HNSW COSINE index on ``vector``."""
        params = self._require_open().prepare_index_params()
        params.add_index(
            field_name=VECTOR,
            index_type="HNSW",
            metric_type="COSINE",
            params={"M": self.M, "efConstruction": self.ef_construction},
        )
        return params
