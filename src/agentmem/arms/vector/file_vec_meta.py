"""``file-vec-meta``: ``file-vec`` plus a metadata post-filter in Python.

The common retrofit for structured questions: fetch ``k * overfetch`` neighbours,
post-filter them on the metadata, cut to ``k`` — so a selective predicate can leave fewer
than ``k`` results (filtered-ANN underfill), which is what the arm exists to measure. The
scope is post-filtered the same way, so a small scope underfills too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.vector.file_vec import FileVecArm
from agentmem.arms.vector.hnsw import DEFAULT_EF_SEARCH, DEFAULT_SEED
from agentmem.arms.vector.store import META_NAME


class FileVecMetaArm(FileVecArm):
    """``file-vec`` plus a metadata post-filter: top ``k*overfetch`` by cosine, filter, cut.

    ``query`` fetches ``min(k * overfetch, n)`` approximate nearest neighbours, keeps
    those whose metadata row satisfies ``q.predicate`` (:meth:`Predicate.matches`, in
    Python, outside the index), and returns the first ``k`` survivors. A selective
    predicate can therefore return fewer than ``k`` ids even when more matching memories
    exist (underfill). Without a predicate or scope it equals ``file-vec``.
    ``Result.count`` is always ``None``.

    Scope: post-filtered with the predicate. ``q.scope`` is one more conjunct of the
    post-filter (:attr:`Query.filters`: ``scope_id = scope``, then the predicate) on the
    same ``k * overfetch`` candidates, so a scope holding few of the nearest memories
    leaves fewer than ``k`` results, or none, even when the scope has ``k`` memories
    (the fill a post-filter loses, measured, not hidden).

    Args:
        ef_search: as :class:`~agentmem.arms.vector.store.HnswStore` (effective
            ``ef = max(ef_search, k*overfetch)``).
        M: as :class:`~agentmem.arms.vector.store.HnswStore`; so are
            ``ef_construction``, ``random_seed`` and ``num_threads``.
        overfetch: how many candidates per requested result to fetch before filtering.
    """

    name: ClassVar[str] = "file-vec-meta"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("overfetch", "query", (1, 2, 8, 16), "post-filter candidates per result"),
        Knob("ef_search", "query", (50,), "hnswlib ef: HNSW search breadth"),
        Knob("M", "build", (), "HNSW links per node"),
    )
    prefix_stable: ClassVar[bool] = False
    family: ClassVar[str] = "vector"
    capabilities: ClassVar[base.Capabilities] = base.Capabilities(
        predicate=True, vector_access="hnsw", filter_stage="post-filter"
    )
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "set_ef + knn_query of k * overfetch",
        "the Python metadata post-filter and the label -> id mapping",
    )
    #: constructor parameter that sets the candidate list the post-filter cuts
    candidate_param: ClassVar[str | None] = "overfetch"

    def __init__(
        self,
        ef_search: int = DEFAULT_EF_SEARCH,
        M: int = 16,
        ef_construction: int = 200,
        random_seed: int = DEFAULT_SEED,
        num_threads: int = 1,
        overfetch: int = 4,
    ) -> None:
        super().__init__(
            ef_search=ef_search,
            M=M,
            ef_construction=ef_construction,
            random_seed=random_seed,
            num_threads=num_threads,
        )
        if overfetch < 1:
            raise ValueError(f"{self.name}: overfetch must be >= 1, got {overfetch}")
        self.overfetch = int(overfetch)

    def query(self, q: base.Query, k: int) -> base.Result:
        """Top ``k*overfetch`` by cosine, post-filter on scope and predicate, cut to ``k``.

        Args:
            q: the query; ``q.embedding``, ``q.scope`` and ``q.predicate`` are used (the
                last two as :attr:`Query.filters`, AND-ed, after the search).
            k: maximum number of ids (``k <= 0`` -> none).

        Returns:
            At most ``k`` ids in the scope and satisfying the predicate, most similar
            first (possibly fewer than ``k``); ``count`` is ``None``.

        Raises:
            ArmError: when the arm is not open or the embedding has the wrong dimension.
        """
        if k <= 0:
            self._require_open()
            return base.Result(memory_ids=[], count=None)
        labels = self._post_filter(self._search(q, k * self.overfetch), q.filters)
        return base.Result(memory_ids=[self._ids[i] for i in labels[:k]], count=None)

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], Any]:
        """Return the bare hnswlib search :meth:`query` makes: ``k * overfetch`` neighbours.

        As :meth:`FileVecArm.raw_query_call` with ``k * overfetch`` neighbours and no
        in-search filter (the scope too is post-filtered); the Python post-filter is not
        part of it (:meth:`raw_ids` applies it). The function returns
        ``(knn_query's (labels, distances), q.filters)``, or ``None`` when no search runs.

        Raises:
            ArmError: when the arm is not open or the embedding has the wrong dimension.
        """
        if k <= 0:
            self._require_open()
            return lambda: None
        plan = self._bare_search(q, k * self.overfetch)
        if plan is None:
            return lambda: None
        index, vec, n_fetch, ef, _ = plan
        filters = q.filters

        def call() -> Any:
            index.set_ef(ef)
            return index.knn_query(vec, k=n_fetch, num_threads=1), filters

        return call

    def raw_ids(self, raw: Any, k: int) -> list[str]:
        """The ids :meth:`query` makes of the bare call's output: post-filter, cut to ``k``.

        Args:
            raw: ``((labels, distances), filters)`` from the function
                :meth:`raw_query_call` returned (``None`` when no search ran).
            k: the result length the call was made for.

        Returns:
            The memory ids of the labels whose metadata satisfies every filter (scope
            and predicate), best first, at most ``k``.
        """
        if raw is None or k <= 0:
            return []
        (labels, _), filters = raw
        keep = self._post_filter(labels[0].tolist(), filters)
        return [self._ids[i] for i in keep[:k]]

    def _post_filter(self, labels: list[int], filters: tuple[base.Predicate, ...]) -> list[int]:
        """The ``labels`` whose metadata row satisfies every predicate in ``filters``, in order.

        Each predicate is evaluated in Python (:meth:`Predicate.matches`); a scope string
        is only compared for equality, so no value widens the filter.
        """
        rows = self._pred_rows
        for p in filters:  # one pass per predicate: the conjunction, order kept
            matches = p.matches
            labels = [i for i in labels if matches(rows[i])]
        return labels

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Describe the search + Python post-filter ``query`` runs for ``q``."""
        self._require_open()
        n = len(self._ids)
        if not q.filters:
            filt = "no predicate, no scope"
        else:
            conj = " AND ".join(f"{p.field} {p.op} {p.value!r}" for p in q.filters)
            filt = f"Python post-filter {conj} on {META_NAME} rows"
        return (
            f"{self._describe()}; knn_query(k=min(k*{self.overfetch}, {n}), "
            f"ef=max({self.ef_search}, k*{self.overfetch})); {filt}; cut to k "
            "(may return fewer than k); text and count IGNORED"
        )
