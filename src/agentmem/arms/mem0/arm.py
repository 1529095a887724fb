"""The mem0 arm base: mem0's ``Memory`` with ``infer=False`` on a local vector store.

A :class:`Mem0Arm` drives ``mem0.Memory`` (mem0ai) through its public API as a user who
already has embeddings would: one ``Memory.add(body, user_id=..., agent_id=...,
run_id=..., metadata=..., infer=False)`` per memory (mem0 stores the text it is given, no
LLM call), ``Memory.search(query, top_k=k, filters=..., threshold=...)`` per query,
``Memory.get`` for fetch, ``Memory.get_all`` for counts and for the id map on reopen,
``Memory.update(id, metadata=...)`` for supersessions. The subclasses
(:mod:`agentmem.arms.mem0.stores`) choose the vector store (class attribute
``provider``).

Store layout under ``store_dir``: the vector store's directory (``qdrant/`` or
``faiss/``), ``history.db`` (mem0's SQLite history, ``history_db_path``) and
``mem0home/`` (``MEM0_DIR``: mem0 writes ``config.json`` there when it is first imported
in a process).

Embeddings: mem0 has no embedder provider that accepts vectors or a callable, so the
configured OpenAI embedder (a dummy key, a refused local ``openai_base_url``; never
called) is replaced by :class:`CachedEmbedder` on ``memory.embedding_model``. Before each
mem0 call that embeds, the arm queues the exact ``(text, vector)`` mem0 will ask for;
``embed(text, memory_action)`` pops it and refuses any other text. So every memory gets
its own cached vector even when two memories share a body.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from agentmem.arms import base
from agentmem.arms.mem0.embedder import cached_embedder
from agentmem.arms.mem0.filters import (
    AGENT_ID,
    matches_nothing,
    query_filters,
    valid_run_id,
    valid_user_id,
)
from agentmem.arms.mem0.loading import import_memory
from agentmem.arms.product import (
    NO_ID,
    ProductArm,
    directory_storage,
    metadata_rows,
    rows_frame,
)
from agentmem.errors import ArmError

#: mem0's SQLite history database under the store directory (``history_db_path``).
HISTORY_DB = "history.db"
#: mem0 collection name.
COLLECTION = "mem0"
#: What ``query`` sends mem0 for a blank query text (mem0 refuses blank queries; the
#: text changes no ranking here: no spaCy, no fastembed, see the docs).
BLANK_QUERY = "(empty query)"
#: Dummy OpenAI settings: mem0 builds its default LLM and embedder clients at
#: construction and they need a key; with ``infer=False`` and the replaced embedder
#: neither is called, and a call would be refused at once by the discard port.
_NO_OPENAI = {"api_key": "unused-no-openai-call", "openai_base_url": "http://127.0.0.1:9/v1"}


class Mem0Arm(ProductArm):
    """mem0 ``Memory`` (``infer=False``) on a local vector store; subclasses pick the store.

    ``query`` is ``Memory.search(text, top_k=k, filters=query_filters(q),
    threshold=threshold)`` with the query's cached vector returned by the replaced
    embedder; mem0's result ``metadata["memory_id"]`` gives our ids. mem0 ranks by
    vector score alone here (its BM25 needs fastembed, its entity boost spaCy: neither
    is installed), keeps scores ``>= threshold`` only (mem0 allows 0..1, so memories
    with a negative cosine are never returned) and asks the store for
    ``max(4k, 60)`` candidates. The arm asks mem0 for ``k + 1`` results and orders
    equal scores by memory id before cutting to ``k`` (local qdrant returns equal
    scores, e.g. two memories with one body, in another order after a reopen).

    Scope: mem0's tenancy. A memory's ``scope_id`` is its mem0 ``user_id`` (given to
    ``Memory.add``; none for a memory without a scope, which keeps only the fixed
    ``agent_id``) and its ``scope_id`` metadata (what ``fetch`` reads); a scoped query
    adds ``{"user_id": scope}`` to the filters of the search and the count. Where the
    store applies it is the subclass's filter stage (qdrant: in the search; FAISS: a
    post-filter of a fixed candidate list).

    Args:
        threshold: mem0's ``search(threshold=...)``, the minimum vector score kept
            (mem0's default is 0.1; 0.0, the loosest mem0 accepts, by default).

    Raises:
        ValueError: when ``threshold`` is outside ``[0, 1]``.
    """

    name: ClassVar[str]
    capabilities: ClassVar[base.Capabilities]
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "Memory.search (text with its staged vector, top_k, filters, threshold) and, for a "
        "count, Memory.get_all",
        "the vector check and the filters built per call; our ids from the metadata, "
        "de-duplicated and sorted",
    )
    prefix_stable: ClassVar[bool]
    #: mem0's ``vector_store.provider``
    provider: ClassVar[str]
    #: write ``field = v`` as mem0's ``{field: {"eq": v}}`` (stores that implement ``eq``)
    eq_operator: ClassVar[bool] = False

    def __init__(self, threshold: float = 0.0) -> None:
        if not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"{self.name}: threshold must be in [0, 1], got {threshold}")
        self.threshold = float(threshold)
        self._dir: Path | None = None
        self._mem: Any = None
        self._emb: Any = None
        #: our memory_id -> mem0's id (a uuid mem0 assigns)
        self._ids: dict[str, str] = {}

    # ------------------------------------------------------------ per store
    def _store_config(self, store_dir: Path) -> dict[str, Any]:
        """mem0 ``vector_store.config`` for ``store_dir``."""
        raise NotImplementedError

    def _store_marker(self, store_dir: Path) -> Path:
        """The file a built store has (checked by :meth:`open`)."""
        raise NotImplementedError

    def _store_entries(self, store_dir: Path) -> list[Path]:
        """What :meth:`build` removes before writing a fresh store."""
        return [store_dir / self.provider, store_dir / HISTORY_DB]

    def _stored_vector(self, mem0_id: str) -> list[float]:
        """The vector the store holds for ``mem0_id``."""
        raise NotImplementedError

    @contextmanager
    def _bulk(self) -> Iterator[None]:
        """Wrap a batch of writes (the FAISS arm saves once at the end)."""
        yield

    def _check_loaded(self, store_dir: Path) -> None:
        """Raise ArmError when the store mem0 opened is not the one on disk."""

    def _close_store(self, mem: Any) -> None:
        """Release what ``mem``'s vector store holds (qdrant's local client lock)."""

    def _describe_search(self, k: int, filters: dict[str, Any]) -> str:
        """What the vector store does with mem0's search call."""
        raise NotImplementedError

    # ------------------------------------------------------------ lifecycle
    def _memory(self, store_dir: Path) -> Any:
        """Construct ``mem0.Memory`` on ``store_dir`` with the cached embedder."""
        memory_cls = import_memory(store_dir)
        config = {
            "vector_store": {"provider": self.provider, "config": self._store_config(store_dir)},
            "llm": {"provider": "openai", "config": dict(_NO_OPENAI)},
            "embedder": {
                "provider": "openai",
                "config": {**_NO_OPENAI, "embedding_dims": base.VECTOR_DIM},
            },
            "history_db_path": str(store_dir / HISTORY_DB),
        }
        mem = memory_cls.from_config(config)
        self._emb = cached_embedder(base.VECTOR_DIM)
        mem.embedding_model = self._emb
        return mem

    def _require_open(self) -> Any:
        if self._mem is None:
            raise ArmError(f"{self.name}: store is not open")
        return self._mem

    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
        """Create a fresh mem0 store under ``store_dir``: one ``Memory.add`` per memory.

        Returns:
            ``ingest_ms``: every ``add`` call (and the FAISS save); ``index_ms`` 0 (the
            stores index as they insert).

        Raises:
            ArmError: when a memory has no vector or mem0 fails.
        """
        self.close()
        store_dir = Path(store_dir)
        memories = corpus.memories
        ids = [str(i) for i in memories["memory_id"].to_list()]
        try:
            matrix = vectors.get(ids) if ids else np.zeros((0, base.VECTOR_DIM), np.float32)
        except KeyError as exc:
            raise ArmError(f"{self.name}: cannot build store in {store_dir}: {exc}") from None
        matrix = base.float32_array(matrix, self.name, "build: embeddings")
        store_dir.mkdir(parents=True, exist_ok=True)
        for entry in self._store_entries(store_dir):
            if entry.is_dir():
                shutil.rmtree(entry)
            elif entry.exists():
                entry.unlink()
        self._mem = self._memory(store_dir)
        self._dir = store_dir
        self._ids = {}
        t0 = time.perf_counter()
        try:
            with self._bulk():
                self._add(memories, matrix)
        except Exception:
            self.close()
            raise
        return base.BuildStats(ingest_ms=(time.perf_counter() - t0) * 1000.0, index_ms=0.0)

    def open(self, store_dir: Path) -> None:
        """Reopen a store :meth:`build` wrote; the id map comes from ``Memory.get_all``.

        Raises:
            ArmError: naming the path when the store is missing or unreadable.
        """
        self.close()
        store_dir = Path(store_dir)
        marker = self._store_marker(store_dir)
        if not marker.exists():
            raise ArmError(f"{self.name}: no mem0 {self.provider} store at {marker}")
        self._mem = self._memory(store_dir)
        self._dir = store_dir
        try:
            self._check_loaded(store_dir)
            listed = self._mem.get_all(filters={"agent_id": AGENT_ID}, top_k=2**31 - 1)
        except Exception:
            self.close()
            raise
        self._ids = {
            r["metadata"]["memory_id"]: r["id"]
            for r in listed["results"]
            if "memory_id" in (r.get("metadata") or {})
        }

    def close(self) -> None:
        """Close mem0's history database and the vector store; safe to call twice."""
        mem, self._mem = self._mem, None
        if mem is not None:
            try:
                mem.close()
            finally:
                self._close_store(mem)
        self._emb = None

    # ------------------------------------------------------------ writes
    def _add(self, memories: pl.DataFrame, matrix: np.ndarray) -> None:
        """``Memory.add(body, user_id=scope, ..., infer=False)`` per row, recording mem0's ids.

        Raises:
            ArmError: before any add, naming the memory, when a ``scope_id`` is no valid
                mem0 ``user_id`` (:func:`valid_user_id`); when mem0 stores other than one
                memory for a row.
        """
        mem = self._mem
        rows = metadata_rows(memories)
        for row in rows:
            scope = row.get("scope_id") or NO_ID
            if scope != NO_ID and not valid_user_id(scope):
                raise ArmError(
                    f"{self.name}: memory {row['memory_id']!r}: scope_id {scope!r} cannot be "
                    "a mem0 user_id (empty, whitespace, the wildcard '*' or not UTF-8)"
                )
        bodies = [str(b) for b in memories["body"].to_list()]
        for row, body, vec in zip(rows, bodies, matrix, strict=True):
            self._emb.expect(body, vec)
            session = row.get("session_id") or NO_ID
            run_id = session if valid_run_id(session) else None
            user_id = row.get("scope_id") or None
            try:
                out = mem.add(
                    body,
                    user_id=user_id,
                    agent_id=AGENT_ID,
                    run_id=run_id,
                    metadata=row,
                    infer=False,
                )
            finally:
                left = self._emb.pending()
                self._emb.clear()
            added = out.get("results") or []
            if len(added) != 1 or left:
                raise ArmError(
                    f"{self.name}: mem0 add of memory {row['memory_id']!r} stored "
                    f"{len(added)} memories (embedded {1 - left} of 1 vectors)"
                )
            self._ids[row["memory_id"]] = added[0]["id"]

    def _supersede(self, old: str, new: str) -> None:
        """``Memory.update(old, metadata={"superseded_by": new})`` (mem0 re-embeds the text)."""
        mem = self._mem
        mem0_id = self._ids[old]
        item = mem.get(mem0_id)
        if item is None:
            raise ArmError(f"{self.name}: mem0 has no memory {mem0_id} for {old!r}")
        self._emb.expect(item["memory"], self._stored_vector(mem0_id))
        try:
            mem.update(mem0_id, metadata={"superseded_by": new})
        finally:
            self._emb.clear()

    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Add the batch with ``Memory.add`` and mark superseded memories with ``Memory.update``.

        Raises:
            ArmError: when the arm is not open, the batch is invalid, an id is already
                stored, a superseded id is neither stored nor in the batch, a scope id
                cannot be a mem0 ``user_id`` (nothing is added then), or mem0 fails
                (memories added before the failure stay).
        """
        self._require_open()
        batch = base.prepare_memories(memories, vectors, self.name)
        new_ids = batch.ids
        for mid in new_ids:
            if mid in self._ids:
                raise ArmError(f"{self.name}: memory {mid!r} is already stored in {self._dir}")
        batch_set = set(new_ids)
        for old, new in batch.supersessions:
            if old not in self._ids and old not in batch_set:
                raise ArmError(
                    f"{self.name}: memory {new!r} supersedes {old!r}, which is not stored "
                    f"in {self._dir}"
                )
        with self._bulk():
            self._add(batch.memories, batch.vectors)
            for old, new in batch.supersessions:
                self._supersede(old, new)

    # ------------------------------------------------------------ reads
    def query(self, q: base.Query, k: int) -> base.Result:
        """``Memory.search`` with the query's cached vector; our ids from the metadata.

        Returns:
            At most ``k`` ids, best first; ``count`` from ``Memory.get_all`` when
            ``q.wants_count`` and the arm declares ``aggregate``, else ``None``.

        Raises:
            ArmError: when the arm is not open, the embedding is not 384 finite numbers or
                mem0 fails.
        """
        raw = self.raw_query_call(q, k)()
        return base.Result(memory_ids=self.raw_ids(raw, k), count=raw[1])

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], tuple[Any, int | None]]:
        """Return a zero-argument function making exactly the mem0 calls :meth:`query` makes.

        The vector check and the filters are built here, once; the function runs the
        count (``Memory.get_all``, when ``q.wants_count`` and the arm counts) and
        ``Memory.search`` with the vector staged for the embedder (when a search runs), and
        returns ``(search output or None, count or None)``.

        Raises:
            ArmError: when the arm is not open or the embedding is not 384 numbers.
        """
        mem = self._require_open()
        vec = base.float32_array(q.embedding, self.name, f"query {q.query_id!r} embedding")
        vec = vec.reshape(-1)
        if vec.shape[0] != base.VECTOR_DIM:
            raise ArmError(
                f"{self.name}: query {q.query_id!r} embedding has {vec.shape[0]} values, "
                f"need {base.VECTOR_DIM}"
            )
        filters = query_filters(q, self.eq_operator)
        counts = q.wants_count and self.capabilities.aggregate
        nothing = matches_nothing(q)
        search = not nothing and k > 0 and bool(self._ids) and bool(np.all(np.isfinite(vec)))
        text = q.text if q.text.strip() else BLANK_QUERY

        def call() -> tuple[Any, int | None]:
            count = (0 if nothing else self._count(filters)) if counts else None
            if not search:
                return None, count
            self._emb.expect(text.strip(), vec)
            try:
                out = mem.search(text, top_k=int(k) + 1, filters=filters, threshold=self.threshold)
            finally:
                self._emb.clear()
            return out, count

        return call

    def raw_ids(self, raw: tuple[Any, int | None], k: int) -> list[str]:
        """Our ids of mem0's results (from their metadata), best score first, cut to ``k``.

        A memory mem0 returns twice counts once; equal scores are ordered by id.
        """
        out = raw[0]
        if out is None:
            return []
        scored: dict[str, float] = {}
        for r in out.get("results") or []:
            mid = (r.get("metadata") or {}).get("memory_id")
            if mid is not None and mid not in scored:
                scored[mid] = float(r.get("score") or 0.0)
        return sorted(scored, key=lambda m: (-scored[m], m))[: max(k, 0)]

    def _count(self, filters: dict[str, Any]) -> int:
        """Memories matching ``filters``: ``len(Memory.get_all(filters, top_k=n + 1))``."""
        out = self._mem.get_all(filters=filters, top_k=len(self._ids) + 1)
        return len(out.get("results") or [])

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Rows of ``memory_ids`` from ``Memory.get`` (body = mem0's ``memory``), in order.

        Raises:
            ArmError: when the arm is not open or mem0 fails.
        """
        mem = self._require_open()
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        for mid in memory_ids:
            if mid in seen or mid not in self._ids:
                continue
            seen.add(mid)
            item = mem.get(self._ids[mid])
            if item is None:
                continue
            row = dict(item.get("metadata") or {})
            row["body"] = item.get("memory")
            rows.append(row)
        return rows_frame(rows)

    def explain(self, q: base.Query, k: int = 10) -> str:
        """The ``Memory.search`` call ``query`` makes and what the vector store does with it."""
        self._require_open()
        filters = query_filters(q, self.eq_operator)
        if matches_nothing(q):
            return (
                f"no mem0 call: the scope {q.scope!r} is no mem0 user_id, or the predicate "
                f"{q.predicate} asks for a value no memory holds (the null marker '', "
                "not UTF-8): no ids; count 0"
            )
        count = ""
        if q.wants_count:
            count = (
                f"; count = len(Memory.get_all(filters={filters!r}, top_k={len(self._ids) + 1}))"
                if self.capabilities.aggregate
                else "; count IGNORED"
            )
        return (
            f"mem0 Memory.search(query=<text>, top_k={k} + 1, filters={filters!r}, "
            f"threshold={self.threshold}) on the {self.provider} store of "
            f"{len(self._ids)} memories; the query vector is the cached embedding "
            f"(text changes no ranking: no fastembed BM25, no spaCy entities); "
            f"{self._describe_search(k, filters)}{count}"
        )

    def storage(self) -> base.StorageStats:
        """Directory size of the store (mem0 has no storage accounting)."""
        self._require_open()
        assert self._dir is not None
        stats = directory_storage(self._dir, "directory size (mem0 has no storage accounting)")
        stats.counts = {"memories": len(self._ids)}
        return stats
