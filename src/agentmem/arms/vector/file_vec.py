"""``file-vec``: "embed everything, take the top-k by cosine" over the HNSW store.

One embedding per memory in an HNSW graph (:class:`~agentmem.arms.vector.store.HnswStore`),
no predicate filtering, no counts; a scope restricts the search itself (hnswlib's
``filter=``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import hnswlib
import numpy as np

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.vector.recall import topk_recall
from agentmem.arms.vector.store import META_NAME, HnswStore


class FileVecArm(HnswStore):
    """One embedding per memory in an hnswlib HNSW index; top-k cosine, no predicate filter.

    ``query`` returns the ``k`` approximate nearest memories to ``q.embedding`` by
    cosine similarity; ``q.text``, ``q.predicate`` and ``q.wants_count`` are ignored and
    ``Result.count`` is always ``None``. ``k`` larger than the corpus returns the whole
    corpus ranked. Constructor parameters (``ef_search``, ``M``, ``ef_construction``,
    ``random_seed``, ``num_threads``): :class:`~agentmem.arms.vector.store.HnswStore`.

    Scope: applied inside the search. A scoped query passes hnswlib's ``knn_query`` a
    ``filter=`` callable admitting only the scope's labels; hnswlib then keeps exploring
    the graph until ``ef`` admitted candidates are found (or the graph is exhausted), so
    the result holds ``min(k, memories in the scope)`` ids, nearest first, with no
    post-filter losses. An unknown scope returns no ids without a search.
    """

    name: ClassVar[str] = "file-vec"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("ef_search", "query", (10, 20, 50, 100, 200), "hnswlib ef: HNSW search breadth"),
        Knob("M", "build", (), "HNSW links per node"),
        Knob("ef_construction", "build", (), "HNSW build breadth"),
    )
    prefix_stable: ClassVar[bool] = False
    family: ClassVar[str] = "vector"
    capabilities: ClassVar[base.Capabilities] = base.Capabilities(vector_access="hnsw")
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "set_ef + knn_query", "vector checks and the label -> id mapping"
    )

    def query(self, q: base.Query, k: int) -> base.Result:
        """Return the ``k`` nearest memories to ``q.embedding`` by cosine (scope only).

        Args:
            q: the query; only ``q.embedding`` (``(dim,)`` float) and ``q.scope`` (an
                in-search filter on the labels of the scope) are used.
            k: maximum number of ids (clamped to the corpus size, or to the scope's size
                for a scoped query; ``k <= 0`` -> none).

        Returns:
            Up to ``k`` ids, most similar first; ``count`` is ``None``.

        Raises:
            ArmError: when the arm is not open or the embedding is not numeric or has the
                wrong dimension.
        """
        labels = self._search(q, k, self._scope_labels(q))
        return base.Result(memory_ids=[self._ids[i] for i in labels], count=None)

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], Any]:
        """Return a zero-argument function making exactly the hnswlib calls :meth:`query` makes.

        The query vector, the neighbour count ``min(k, n)`` (``n``: memories in the store,
        or in ``q.scope``), the search breadth ``max(ef_search, min(k, n))`` and the scope
        filter are computed here, once; each call of the returned function only runs
        ``index.set_ef(ef)`` and ``index.knn_query(vec, k, num_threads=1, filter=...)``
        (no label-to-id mapping). A vector with a non-finite value, or a scope with no
        memories, makes no call, as in :meth:`query`. The harness-overhead benchmark
        (:mod:`agentmem.bench`) times it against :meth:`query`.

        Returns:
            A function returning hnswlib's ``(labels, distances)`` (``None`` when no
            search runs).

        Raises:
            ArmError: when the arm is not open or the embedding is not numeric or has the
                wrong dimension.
        """
        plan = self._bare_search(q, k, self._scope_labels(q))
        if plan is None:
            return lambda: None
        index, vec, n_fetch, ef, admit = plan

        def call() -> Any:
            index.set_ef(ef)
            return index.knn_query(vec, k=n_fetch, num_threads=1, filter=admit)

        return call

    def raw_ids(self, raw: Any, k: int) -> list[str]:
        """The ids :meth:`query` makes of the bare call's ``(labels, distances)``.

        Args:
            raw: what the function from :meth:`raw_query_call` returned.
            k: the result length the call was made for.

        Returns:
            The labels mapped to memory ids, best first (at most ``k``).
        """
        if raw is None or k <= 0:
            return []
        return [self._ids[int(i)] for i in raw[0][0][:k]]

    def _query_vector(self, q: base.Query, store_dir: Path) -> np.ndarray:
        """``q.embedding`` as a float32 ``(1, dim)`` row for hnswlib.

        Raises:
            ArmError: when the embedding is not numeric or its dimension is not the store's.
        """
        vec = base.float32_array(q.embedding, self.name, f"query {q.query_id!r} embedding")
        vec = vec.reshape(1, -1)
        if vec.shape[1] != self._dim:
            raise base.ArmError(
                f"{self.name}: query {q.query_id!r} embedding has dim {vec.shape[1]}, "
                f"store {store_dir} has dim {self._dim}"
            )
        return vec

    def _bare_search(
        self, q: base.Query, n_fetch: int, allowed: set[int] | None = None
    ) -> tuple[hnswlib.Index, np.ndarray, int, int, Callable[[int], bool] | None] | None:
        """Return ``(index, vector, neighbours, ef, filter)`` of the search ``query`` makes.

        ``filter`` is the ``knn_query`` callable admitting only ``allowed`` labels (``None``
        when ``allowed`` is None: no filter). ``None`` instead of a plan when no search
        runs (``n_fetch <= 0``, an empty store or scope, or a non-finite vector, as in
        :meth:`_search`).

        Raises:
            ArmError: when the arm is not open or the embedding is not numeric or has the
                wrong dimension.
        """
        store_dir = self._require_open()
        index = self._index
        assert index is not None
        pool = len(self._ids) if allowed is None else len(allowed)
        n_fetch = min(int(n_fetch), pool)
        vec = self._query_vector(q, store_dir)
        if n_fetch <= 0 or not np.all(np.isfinite(vec)):
            return None
        admit = None if allowed is None else allowed.__contains__
        return index, vec, n_fetch, max(self.ef_search, n_fetch), admit

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Describe the HNSW search ``query`` runs for ``q`` (hnswlib has no planner)."""
        self._require_open()
        ignored = "text, predicate and count IGNORED" if q.predicate else "text and count IGNORED"
        allowed = self._scope_labels(q)
        if allowed is None:
            n, scope = len(self._ids), "no scope"
        else:
            n = len(allowed)
            scope = (
                f"IN-SEARCH scope filter scope_id = {q.scope!r} (knn_query filter= admitting "
                f"the scope's {n} labels; the search runs until ef admitted candidates)"
            )
        return (
            f"{self._describe()}; knn_query(k=min(k, {n}), ef=max({self.ef_search}, k)); "
            f"{scope}; labels -> memory_id via {META_NAME}; {ignored}"
        )

    def index_recall(self, queries_matrix: np.ndarray, k: int) -> float:
        """Recall@k of this arm's built index against exact cosine search on its vectors.

        The stored vectors are read back from the index (hnswlib keeps them normalised in
        the cosine space) and searched by brute force (:func:`topk_recall`).

        Args:
            queries_matrix: ``(m, dim)`` query vectors.
            k: neighbours per query (clamped to the corpus size).

        Returns:
            Mean recall@k in ``[0, 1]`` at this arm's ``ef_search``.

        Raises:
            ArmError: when the arm is not open.
        """
        self._require_open()
        assert self._index is not None
        n = len(self._ids)
        k = min(k, n)
        qs = np.ascontiguousarray(queries_matrix, dtype=np.float32)
        if k <= 0 or qs.shape[0] == 0:
            return 1.0
        stored = np.asarray(self._index.get_items(list(range(n))), dtype=np.float32)
        self._index.set_ef(max(self.ef_search, k))
        labels, _ = self._index.knn_query(qs, k=k, num_threads=1)
        return topk_recall(labels, stored, qs, k)

    def _search(self, q: base.Query, n_fetch: int, allowed: set[int] | None = None) -> list[int]:
        """Return up to ``n_fetch`` labels nearest to ``q.embedding``, best first.

        Args:
            q: the query (its embedding is searched).
            n_fetch: neighbours wanted (clamped to the labels searchable).
            allowed: when set, an in-search filter: only these labels are admitted by
                hnswlib (``knn_query(filter=...)``) and at most ``len(allowed)`` return.

        Raises:
            ArmError: when the arm is not open, the embedding is not numeric or has the
                wrong dimension, or hnswlib cannot return ``n_fetch`` neighbours even at
                ``ef = n``.
        """
        store_dir = self._require_open()
        assert self._index is not None
        n = len(self._ids)
        n_fetch = min(int(n_fetch), n if allowed is None else len(allowed))
        if n_fetch <= 0:
            return []
        vec = self._query_vector(q, store_dir)
        if not np.all(np.isfinite(vec)):
            return []
        admit = None if allowed is None else allowed.__contains__
        for ef in (max(self.ef_search, n_fetch), max(n, 1)):
            self._index.set_ef(ef)
            try:
                labels, _ = self._index.knn_query(vec, k=n_fetch, num_threads=1, filter=admit)
            except RuntimeError:  # fewer than n_fetch reachable at this ef: widen once
                continue
            return labels[0].tolist()  # Python ints
        raise base.ArmError(
            f"{self.name}: hnswlib could not return {n_fetch} neighbours from {store_dir}"
        )
