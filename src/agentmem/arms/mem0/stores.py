"""The two mem0 arms: ``mem0-qdrant`` (qdrant-client local mode) and ``mem0-faiss``.

Both are :class:`~agentmem.arms.mem0.arm.Mem0Arm` with another ``provider``; what each
store does with mem0's calls (and the findings): docs/arms/mem0-qdrant.md,
docs/arms/mem0-faiss.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from agentmem.arms import base
from agentmem.arms.mem0.arm import COLLECTION, Mem0Arm
from agentmem.errors import ArmError


class Mem0QdrantArm(Mem0Arm):
    """mem0 on qdrant-client's local mode (``path=store_dir/qdrant``, ``on_disk=True``, cosine).

    Local qdrant scores every stored vector (numpy) and evaluates the payload filter
    (mem0's ``Filter(must=[...])``: ``MatchValue`` / ``Range``) on every point in
    Python, inside ``query_points``: the predicate is applied in the search, so ``k`` is
    filled whenever ``k`` matching memories have a cosine ``>= threshold``. Counts are
    exact: ``Memory.get_all`` scrolls every match when ``top_k`` exceeds the store
    size. Local mode locks its directory: one client per path per process, so
    :meth:`close` closes mem0's qdrant client (``Memory.close`` does not).

    Scope: in-search. The scope's ``{"user_id": scope}`` is one more ``MatchValue``
    condition of the same ``Filter(must=[...])``, checked per point inside
    ``query_points``, so a selective scope still fills ``k``. (Local mode has no payload
    index; mem0 creates its ``user_id`` keyword index on a Qdrant server only.)
    """

    name: ClassVar[str] = "mem0-qdrant"
    provider: ClassVar[str] = "qdrant"
    #: mem0's qdrant store reads a bare ``"*"`` as "any value"; ``{"eq": v}`` compares
    eq_operator: ClassVar[bool] = True
    products: ClassVar[tuple[str, ...]] = ("mem0ai", "qdrant-client")
    prefix_stable: ClassVar[bool] = True
    #: local Qdrant refuses a second client on one storage folder
    exclusive_store: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.vector_database(
        vector_access="brute-force"
    )

    def _store_config(self, store_dir: Path) -> dict[str, Any]:
        return {
            "collection_name": COLLECTION,
            "embedding_model_dims": base.VECTOR_DIM,
            "path": str(store_dir / self.provider),
            "on_disk": True,
        }

    def _store_marker(self, store_dir: Path) -> Path:
        return store_dir / self.provider / "collection" / COLLECTION

    def _stored_vector(self, mem0_id: str) -> list[float]:
        vs = self._mem.vector_store
        points = vs.client.retrieve(
            collection_name=vs.collection_name, ids=[mem0_id], with_vectors=True
        )
        if not points:
            raise ArmError(f"{self.name}: qdrant has no point {mem0_id}")
        vec = points[0].vector
        return list(vec[""] if isinstance(vec, dict) else vec)

    def _close_store(self, mem: Any) -> None:
        client = getattr(getattr(mem, "vector_store", None), "client", None)
        if client is not None:
            client.close()

    def _describe_search(self, k: int, filters: dict[str, Any]) -> str:
        return (
            f"Qdrant.search -> QdrantClient.query_points(limit=max(4*{k + 1}, 60), "
            "query_filter=Filter(must=[FieldCondition ...])) in local mode: exact cosine "
            "over every point, the payload filter checked per point in Python (in-search); "
            "mem0 keeps scores >= threshold and cuts to k"
        )


class Mem0FaissArm(Mem0Arm):
    """mem0 on its FAISS store (``IndexFlatIP``, cosine, ``path=store_dir/faiss``).

    mem0's FAISS store searches ``2 * top_k`` neighbours (mem0 asks for
    ``top_k = max(4(k + 1), 60)``) and then keeps those whose payload *equals* each filter
    value, in Python: a post-filter, so a selective predicate returns fewer than ``k``
    (or none). Its filter knows equality and lists only: ``{"created_day": {"lte": d}}``
    compares the day to the dict and matches nothing, so ``created_day <=`` queries
    return no ids, and ``Memory.get_all`` counts 0 for them (``aggregate`` False). The
    candidate list is fixed by mem0's code (no config parameter). The store rewrites its
    whole index and JSON docstore on every insert; builds and remember batches set the
    store's ``path`` to ``None`` while they add (its save is a no-op then) and save once
    at the end through the store's ``_save``.

    Scope: post-filter. ``{"user_id": scope}`` is one more ``payload[key] == value`` test
    of the same Python post-filter over the ``2 * max(4(k + 1), 60)`` nearest vectors of
    the whole store, so a scope holding a small share of the memories fills fewer than
    ``k`` (none when its memories are not among those neighbours), and the count is
    ``None`` as for every query (docs/arms/mem0-faiss.md).
    """

    name: ClassVar[str] = "mem0-faiss"
    provider: ClassVar[str] = "faiss"
    products: ClassVar[tuple[str, ...]] = ("mem0ai", "faiss-cpu")
    prefix_stable: ClassVar[bool] = False
    capabilities: ClassVar[base.Capabilities] = base.Capabilities(
        predicate=True, vector_access="brute-force", filter_stage="post-filter"
    )

    def _store_config(self, store_dir: Path) -> dict[str, Any]:
        return {
            "collection_name": COLLECTION,
            "embedding_model_dims": base.VECTOR_DIM,
            "path": str(store_dir / self.provider),
            "distance_strategy": "cosine",
        }

    def _store_marker(self, store_dir: Path) -> Path:
        return store_dir / self.provider / f"{COLLECTION}.faiss"

    def _check_loaded(self, store_dir: Path) -> None:
        vs = self._mem.vector_store
        docstore = store_dir / self.provider / f"{COLLECTION}.json"
        try:
            saved = len(json.loads(docstore.read_text(encoding="utf-8"))["index_to_id"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ArmError(f"{self.name}: cannot read FAISS docstore {docstore}: {exc}") from exc
        if vs.index is None or vs.index.ntotal != saved or len(vs.index_to_id) != saved:
            raise ArmError(
                f"{self.name}: mem0's FAISS store did not load {store_dir / self.provider} "
                f"({saved} vectors saved, {0 if vs.index is None else vs.index.ntotal} loaded)"
            )

    def _stored_vector(self, mem0_id: str) -> list[float]:
        vs = self._mem.vector_store
        for pos, vid in vs.index_to_id.items():
            if vid == mem0_id:
                return vs.index.reconstruct(int(pos)).tolist()
        raise ArmError(f"{self.name}: FAISS has no vector for {mem0_id}")

    @contextmanager
    def _bulk(self) -> Iterator[None]:
        vs = self._mem.vector_store
        path, vs.path = vs.path, None
        try:
            yield
        finally:
            vs.path = path
            vs._save()

    def _describe_search(self, k: int, filters: dict[str, Any]) -> str:
        post = (
            f"then the Python post-filter payload[key] == value for {filters!r} "
            "(a {'lte': d} value matches nothing)"
            if len(filters) > 1
            else "agent_id post-filter (every memory matches)"
        )
        return (
            f"FAISS.search -> IndexFlatIP.search(k=2*max(4*{k + 1}, 60)) exact inner product "
            f"of normalised vectors, {post}; mem0 keeps scores >= threshold and cuts to k "
            "(may return fewer than k)"
        )
