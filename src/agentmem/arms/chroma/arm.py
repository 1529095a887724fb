"""``chroma``: one Chroma collection, embedded (``chromadb.PersistentClient``), our vectors.

Chroma's local mode keeps metadata and documents in SQLite (``chroma.sqlite3``) and the
vectors in an HNSW segment beside it. The collection is created with
``embedding_function=None`` and cosine space, and every memory is added with its cached
MiniLM vector (``embeddings=``), so nothing is embedded or downloaded by Chroma. API calls,
capabilities and product findings: docs/arms/chroma.md.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from agentmem.arms import base
from agentmem.arms.chroma.filters import matches_nothing, query_where
from agentmem.arms.knobs import Knob
from agentmem.arms.product import (
    ProductArm,
    batch_answers,
    directory_storage,
    metadata_rows,
    rows_frame,
)

#: Sub-directory of ``store_dir`` that is Chroma's ``persist_directory``.
CHROMA_DIR = "chroma"
#: The one collection the arm keeps its memories in.
COLLECTION = "memories"
#: Chroma's own defaults for a new HNSW collection (``populate_create_hnsw_defaults``).
DEFAULT_EF_SEARCH = 100
DEFAULT_EF_CONSTRUCTION = 100
DEFAULT_MAX_NEIGHBORS = 16


def _chromadb() -> Any:
    """Import chromadb with its anonymous telemetry switched off (before the import)."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    # chromadb imports onnxruntime, which otherwise writes a device id and an event
    # database under ~/.cache/Microsoft/DeveloperTools
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import chromadb

    return chromadb


def _batches(n: int, size: int) -> Iterator[slice]:
    """Slices ``[0, size), [size, 2 size), ...`` covering ``range(n)``."""
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def _hnsw(col: Any) -> dict[str, Any]:
    """The collection's stored HNSW configuration (``configuration_json["hnsw"]``).

    Read from the JSON form: the parsed ``collection.configuration`` warns "legacy
    embedding function config" for a collection made with ``embedding_function=None``.
    """
    return dict((col.configuration_json or {}).get("hnsw") or {})


class ChromaArm(ProductArm):
    """Chroma ``PersistentClient``: one cosine HNSW collection, filters in ``where``.

    Memories are added with ``collection.add(ids, embeddings, metadatas, documents)`` in
    batches of the client's ``get_max_batch_size()``; the body is the document, the
    :data:`~agentmem.arms.product.METADATA_FIELDS` are the metadata (nulls as ``""``,
    ``entity_ids`` not kept). ``query`` is ``collection.query(query_embeddings=[v],
    n_results=k, where=..., include=[])``; the query text is never used (Chroma's local
    mode ranks no full text). Chroma applies ``where`` inside its HNSW search, so a
    selective predicate still fills ``k`` when enough memories match. ``Result.count``
    (``q.wants_count``) is the number of ids ``collection.get(where=..., include=[])``
    returns (``collection.count()`` without a filter): exact, but a listing, not a
    COUNT.

    Scope: in-search. ``scope_id`` is stored as metadata (``""`` for none) and
    ``q.scope`` is ``{"scope_id": {"$eq": scope}}`` in the same ``where`` as the
    predicate (``$and``), for the search and the count alike (:func:`query_where`).

    Product findings the arm handles (docs/arms/chroma.md): ``add`` of an id already stored
    and ``update`` of an id not stored are silent no-ops, so ``remember`` looks both up
    first; ``get(ids=...)`` returns rows in storage order and raises on repeated ids, so
    ``fetch`` de-duplicates and re-orders; a non-finite query vector is answered with
    arbitrary ids at ``nan`` distance, so ``query`` does not search with one. A second
    process's writes are not in this process's HNSW index until it reopens the store
    (a filtered query matching such a row raises Chroma's ``Error finding id``).

    Args:
        ef_search: Chroma's ``hnsw.ef_search`` (its default, 100); set at build and, when
            it differs from the stored value, by ``collection.modify`` at open. The search
            breadth is ``max(ef_search, k)``, so the arm is not prefix-stable.
        ef_construction: ``hnsw.ef_construction`` at build (Chroma's default, 100).
        max_neighbors: ``hnsw.max_neighbors`` (HNSW M) at build (Chroma's default, 16).

    Raises:
        ValueError: when a parameter is below 1 (``max_neighbors`` below 2).
    """

    name: ClassVar[str] = "chroma"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("ef_search", "query", (10, 40), "hnsw:search_ef: HNSW search breadth"),
        Knob("max_neighbors", "build", (), "hnsw:M: HNSW links per node"),
        Knob("ef_construction", "build", (), "hnsw:construction_ef: HNSW build breadth"),
    )
    products: ClassVar[tuple[str, ...]] = ("chromadb",)
    prefix_stable: ClassVar[bool] = False
    #: the HNSW search breadth of the filtered search; the post-filter sweep sets it to k * x
    candidate_param: ClassVar[str | None] = "ef_search"
    candidate_unit: ClassVar[str] = "list"
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.vector_database(
        vector_access="hnsw-filtered"
    )
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "Collection.query (embedding, n_results, where) and, for a count, Collection.get "
        "of the ids or count()",
        "the vector check and the where filter built per call; the id list",
    )

    def __init__(
        self,
        ef_search: int = DEFAULT_EF_SEARCH,
        ef_construction: int = DEFAULT_EF_CONSTRUCTION,
        max_neighbors: int = DEFAULT_MAX_NEIGHBORS,
    ) -> None:
        if ef_search < 1 or ef_construction < 1 or max_neighbors < 2:
            raise ValueError(
                f"{self.name}: need ef_search >= 1, ef_construction >= 1, max_neighbors >= 2; "
                f"got {ef_search}, {ef_construction}, {max_neighbors}"
            )
        self.ef_search = int(ef_search)
        self.ef_construction = int(ef_construction)
        self.max_neighbors = int(max_neighbors)
        self._client: Any = None
        self._col: Any = None
        self._dir: Path | None = None

    # ------------------------------------------------------------------ lifecycle
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
        """Create the collection under ``store_dir/chroma`` and add every memory.

        A collection built there before is dropped first (``client.delete_collection``).

        Args:
            corpus: the corpus; every row of ``corpus.memories`` is added.
            vectors: embeddings keyed by memory id (``(n, 384)`` float32, normalised).
            store_dir: directory of the store (created if missing).

        Returns:
            ``ingest_ms``: the ``collection.add`` calls (Chroma inserts into its HNSW
            index inside ``add``); ``index_ms``: 0, there is no separate index step.

        Raises:
            ArmError: when a memory has no vector or Chroma fails (names the path).
        """
        self.close()
        store_dir = Path(store_dir)
        path = store_dir / CHROMA_DIR
        memories = corpus.memories
        ids = [str(i) for i in memories.get_column("memory_id").to_list()]
        try:
            matrix = vectors.get(ids) if ids else np.zeros((0, vectors.dim), np.float32)
        except KeyError as exc:
            raise base.ArmError(f"{self.name}: cannot build store in {store_dir}: {exc}") from exc
        matrix = base.float32_array(matrix, self.name, "build: embeddings")
        metas = metadata_rows(memories)
        docs = [str(b) for b in memories.get_column("body").to_list()]
        path.mkdir(parents=True, exist_ok=True)
        errors = _chromadb().errors
        client = self._connect(path)
        try:
            try:
                client.delete_collection(COLLECTION)
            except errors.NotFoundError:
                pass
            col = client.create_collection(
                COLLECTION,
                embedding_function=None,
                configuration={
                    "hnsw": {
                        "space": "cosine",
                        "ef_search": self.ef_search,
                        "ef_construction": self.ef_construction,
                        "max_neighbors": self.max_neighbors,
                    }
                },
            )
            t0 = time.perf_counter()
            for s in _batches(len(ids), client.get_max_batch_size()):
                col.add(ids=ids[s], embeddings=matrix[s], metadatas=metas[s], documents=docs[s])
            ingest_ms = (time.perf_counter() - t0) * 1000.0
        except Exception as exc:
            client.close()
            raise base.ArmError(
                f"{self.name}: chromadb build in {path} failed: {type(exc).__name__}: {exc}"
            ) from exc
        self._client, self._col, self._dir = client, col, store_dir
        return base.BuildStats(ingest_ms=ingest_ms, index_ms=0.0)

    def open(self, store_dir: Path) -> None:
        """Reopen the collection built under ``store_dir`` (a new ``PersistentClient``).

        When this instance's ``ef_search`` differs from the stored one it is set with
        ``collection.modify(configuration={"hnsw": {"ef_search": ...}})`` before any query.

        Raises:
            ArmError: when ``store_dir/chroma/chroma.sqlite3`` or the collection is
                missing, or Chroma cannot open it (message names the path).
        """
        self.close()
        store_dir = Path(store_dir)
        path = store_dir / CHROMA_DIR
        if not (path / "chroma.sqlite3").is_file():
            raise base.ArmError(f"{self.name}: no Chroma store at {path} (chroma.sqlite3 missing)")
        client = self._connect(path)
        try:
            col = client.get_collection(COLLECTION)
            if _hnsw(col).get("ef_search") != self.ef_search:
                col.modify(configuration={"hnsw": {"ef_search": self.ef_search}})
        except Exception as exc:
            client.close()
            raise base.ArmError(
                f"{self.name}: chromadb cannot open collection {COLLECTION!r} in {path}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        self._client, self._col, self._dir = client, col, store_dir

    def close(self) -> None:
        """Close the client (``client.close()``: the last client of a path stops its system).

        Safe to call twice.
        """
        client, self._client, self._col, self._dir = self._client, None, None, None
        if client is not None:
            client.close()

    # ------------------------------------------------------------------ queries
    def query(self, q: base.Query, k: int) -> base.Result:
        """Top ``k`` by cosine among the memories of ``q.scope`` matching ``q.predicate``.

        Args:
            q: the query; ``q.embedding``, ``q.scope``, ``q.predicate`` and
                ``q.wants_count`` are used (the text is ignored).
            k: maximum number of ids (``k <= 0`` -> none).

        Returns:
            Up to ``k`` ids, most similar first; ``count`` (when ``q.wants_count``) the
            exact number of memories in the scope matching the predicate. A non-finite
            embedding gives no ids (the count is still given).

        Raises:
            ArmError: when the arm is not open, the embedding is missing or not 384 values,
                or Chroma fails.
        """
        raw = self.raw_query_call(q, k)()
        return base.Result(memory_ids=self.raw_ids(raw, k), count=raw[1])

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], tuple[Any, int | None]]:
        """Return a zero-argument function making exactly the Chroma calls :meth:`query` makes.

        The vector check and the ``where`` filter are built here, once; the function runs
        ``Collection.query`` (when a search runs) and the count (when ``q.wants_count``)
        and returns ``(query result or None, count or None)``.

        Raises:
            ArmError: when the arm is not open or the embedding is missing or not 384 values.
        """
        col = self._require_open()
        vec = base.checked_vector(q.embedding, self.name, f"query {q.query_id!r}")
        where = query_where(q)
        none = matches_nothing(q)
        search = k > 0 and not none and bool(np.all(np.isfinite(vec)))
        n = int(k)

        def call() -> tuple[Any, int | None]:
            res = (
                col.query(query_embeddings=[vec], n_results=n, where=where, include=[])
                if search
                else None
            )
            count = (0 if none else self._count(where)) if q.wants_count else None
            return res, count

        return call

    def raw_ids(self, raw: tuple[Any, int | None], k: int) -> list[str]:
        """The ids :meth:`query` returns of :meth:`raw_query_call`'s output, cut to ``k``."""
        res = raw[0]
        return [str(i) for i in res["ids"][0]][: max(k, 0)] if res is not None else []

    def query_many(self, queries: Sequence[base.Query], k: int) -> list[base.Result]:
        """Each answer :meth:`query` gives, from one ``Collection.query`` per filter.

        The call takes every vector of a group as ``query_embeddings=[v1, v2, ...]`` with
        :meth:`query`'s ``n_results``, ``where`` and ``include``, and answers one id list
        per vector. Counts are :meth:`query`'s.

        Raises:
            ArmError: as :meth:`query`.
        """
        col = self._require_open()

        def group(q: base.Query) -> str:
            return json.dumps(query_where(q), sort_keys=True)

        def search(first: base.Query, vecs: list[np.ndarray]) -> list[list[str]]:
            res = col.query(
                query_embeddings=vecs, n_results=int(k), where=query_where(first), include=[]
            )
            return [[str(i) for i in one] for one in res["ids"]]

        def count(q: base.Query) -> int | None:
            if not q.wants_count:
                return None
            return 0 if matches_nothing(q) else self._count(query_where(q))

        return batch_answers(
            self.name, queries, k, group, search, count, lambda q: not matches_nothing(q)
        )

    def _count(self, where: dict[str, Any] | None) -> int:
        """Exact number of memories matching ``where``: ``get`` of the ids, or ``count()``."""
        col = self._require_open()
        if where is None:
            return int(col.count())
        return len(col.get(where=where, include=[])["ids"])

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Describe the Chroma calls ``query`` makes for ``q`` (Chroma exposes no plan)."""
        col = self._require_open()
        hnsw = _hnsw(col)
        where = query_where(q)
        filt = "no where" if where is None else f"where={json.dumps(where)}"
        if matches_nothing(q):
            filt += " (an id '' or a non-UTF-8 value matches no memory: answered empty, no call)"
        count = ""
        if q.wants_count:
            count = (
                "; count: len(collection.get(where=..., include=[])['ids'])"
                if where is not None
                else "; count: collection.count()"
            )
        return (
            f"chromadb collection.query(query_embeddings=[384-d], n_results={k}, {filt}, "
            f"include=[]) on collection {COLLECTION!r} at {self._dir / CHROMA_DIR} "
            f"(HNSW space={hnsw.get('space')}, ef_search={hnsw.get('ef_search')} "
            f"(breadth max(ef_search, k)), ef_construction={hnsw.get('ef_construction')}, "
            f"max_neighbors={hnsw.get('max_neighbors')}; the where filter is applied "
            f"inside the search){count}; query text IGNORED"
        )

    # ------------------------------------------------------------------ writes
    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Add memories with ``collection.add``; mark corrected ones with ``collection.update``.

        Chroma's ``add`` ignores ids it already holds and ``update`` ignores ids it does
        not, so both are looked up first (``collection.get(ids=..., include=[])``) and
        refused. The new rows (with ``superseded_by`` set for memories corrected within
        the batch) are added, then each older corrected memory gets ``superseded_by`` =
        the correcting id (``update`` merges metadata keys). If ``update`` fails the added
        rows are deleted again. Visible to the next query.

        Raises:
            ArmError: when the arm is not open, the batch is invalid, an id is already
                stored, a superseded id is neither stored nor in the batch, or Chroma
                fails.
        """
        col = self._require_open()
        batch = base.prepare_memories(memories, vectors, self.name)
        ids = batch.ids
        if not ids:
            return
        size = self._client.get_max_batch_size()
        stored = self._stored(ids, size)
        if stored:
            raise base.ArmError(
                f"{self.name}: memory {stored[0]!r} is already stored in {self._dir}"
            )
        in_batch = {m: i for i, m in enumerate(ids)}
        metas = metadata_rows(batch.memories)
        outside: dict[str, str] = {}
        for old, new in batch.supersessions:
            if old in in_batch:
                metas[in_batch[old]]["superseded_by"] = new
            else:
                outside[old] = new
        olds = list(outside)
        missing = set(olds) - set(self._stored(olds, size))
        if missing:
            old, new = next((o, n) for o, n in batch.supersessions if o in missing)
            raise base.ArmError(
                f"{self.name}: memory {new!r} supersedes {old!r}, which is not stored in "
                f"{self._dir}"
            )
        docs = batch.memories.get_column("body").to_list()
        added: list[str] = []
        try:
            for s in _batches(len(ids), size):
                col.add(
                    ids=ids[s], embeddings=batch.vectors[s], metadatas=metas[s], documents=docs[s]
                )
                added.extend(ids[s])
            for s in _batches(len(olds), size):
                col.update(ids=olds[s], metadatas=[{"superseded_by": outside[o]} for o in olds[s]])
        except Exception as exc:
            for s in _batches(len(added), size):
                col.delete(ids=added[s])
            raise base.ArmError(
                f"{self.name}: chromadb remember in {self._dir} failed (added rows deleted "
                f"again): {type(exc).__name__}: {exc}"
            ) from exc

    def _stored(self, ids: Sequence[str], size: int) -> list[str]:
        """Which of ``ids`` the collection holds (``get(ids=..., include=[])``), in order."""
        col = self._require_open()
        found: set[str] = set()
        unique = list(dict.fromkeys(ids))
        for s in _batches(len(unique), size):
            found.update(col.get(ids=unique[s], include=[])["ids"])
        return [m for m in unique if m in found]

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the stored rows of ``memory_ids``, in the order asked, each once.

        ``collection.get(ids=..., include=["metadatas", "documents"])`` of the distinct
        ids (Chroma returns them in its own order); the body is the document.

        Raises:
            ArmError: when the arm is not open or Chroma fails.
        """
        col = self._require_open()
        unique = [str(m) for m in dict.fromkeys(memory_ids)]
        rows: dict[str, dict[str, Any]] = {}
        for s in _batches(len(unique), self._client.get_max_batch_size()):
            got = col.get(ids=unique[s], include=["metadatas", "documents"])
            for mid, meta, doc in zip(got["ids"], got["metadatas"], got["documents"], strict=True):
                rows[mid] = {**(meta or {}), "memory_id": mid, "body": doc}
        return rows_frame([rows[m] for m in unique if m in rows])

    def storage(self) -> base.StorageStats:
        """Bytes of the files under ``store_dir/chroma`` (Chroma has no size accounting).

        One object per top-level entry (``chroma.sqlite3``, the HNSW segment folder);
        ``counts`` holds ``collection.count()``.

        Raises:
            ArmError: when the arm is not open.
        """
        col = self._require_open()
        assert self._dir is not None
        st = directory_storage(
            self._dir / CHROMA_DIR, "directory size (file sizes; Chroma has no size accounting)"
        )
        st.counts = {"memories": int(col.count())}
        return st

    # ------------------------------------------------------------------ helpers
    def _connect(self, path: Path) -> Any:
        """A ``PersistentClient`` on ``path`` with telemetry off (the same settings each time)."""
        chromadb = _chromadb()
        from chromadb.config import Settings

        try:
            return chromadb.PersistentClient(
                path=str(path), settings=Settings(anonymized_telemetry=False)
            )
        except Exception as exc:
            raise base.ArmError(
                f"{self.name}: chromadb PersistentClient({path}) failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def _require_open(self) -> Any:
        if self._col is None:
            raise base.ArmError(f"{self.name}: arm is not open (call build() or open() first)")
        return self._col
