"""The vector-file arms: an hnswlib HNSW index beside a metadata file.

``file-vec`` is the "embed everything, take the top-k by cosine" memory: one embedding
per memory in an HNSW graph (Malkov & Yashunin 2018, via ``hnswlib``), no filtering, no
counts. ``file-vec-meta`` is the same store with the common retrofit for structured
questions: fetch ``k * overfetch`` neighbours, post-filter them in Python on the
metadata, cut to ``k`` — so a selective predicate can leave fewer than ``k`` results
(filtered-ANN underfill), which is what the arm exists to measure.

Store layout under ``store_dir``:

* ``index.bin`` — the hnswlib index (``space="cosine"``; labels are row numbers
  ``0..n-1`` of the metadata file);
* ``metadata.parquet`` — every memory column (memory_id, session_id, turn_no, seq,
  kind, body, fact_id, created_day, source, confidence, superseded_by, tokens,
  entity_ids) plus ``label``, in label order, and — once memories were remembered —
  ``supersedes`` (the ids each remembered memory corrects);
* ``manifest.json`` — dim, count and the build parameters, needed to reload the index.

Writes after the build (:meth:`FileVecArm.remember`) go through hnswlib's own insert path:
``add_items`` of the new vectors under the next labels, ``resize_index`` (capacity
doubled) when the index is full; the metadata rows are appended and ``superseded_by`` of
corrected memories updated in memory, so the next query sees them. They reach the disk
when the store is saved — by :meth:`FileVecArm.close` or :meth:`FileVecArm.flush` — as
three atomic file replacements in the order ``index.bin``, ``metadata.parquet``,
``manifest.json``; the metadata file is the commit point. A crash before a save loses the
memories remembered since the last one; a crash during a save leaves the previous
metadata beside a newer index, whose extra labels :meth:`FileVecArm.open` marks deleted
(they are reused by the next remember). One process should write a store at a time: two
writers each save their own view, and the last save wins.

The original study used brute-force cosine for these arms (REFERENCE §3); the default
``ef_search`` is set so that HNSW top-k agrees with exact search to recall >= 0.99
(measure it with :func:`recall_vs_exact` or :meth:`FileVecArm.index_recall`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import hnswlib
import numpy as np
import polars as pl
from polars.exceptions import PolarsError

from agentmem.arms.base import (
    PREDICATE_FIELDS,
    SUPERSEDES,
    ArmBase,
    ArmError,
    BareCall,
    BuildStats,
    Capabilities,
    Corpus,
    Embeddings,
    Query,
    RawIngest,
    Result,
    StorageStats,
    prepare_memories,
)
from agentmem.arms.rows import memory_frame
from agentmem.io import atomic_path, write_json, write_parquet

_log = logging.getLogger(__name__)

INDEX_NAME = "index.bin"
META_NAME = "metadata.parquet"
MANIFEST_NAME = "manifest.json"
SPACE = "cosine"

#: Default HNSW search breadth. Chosen for recall >= 0.99 against exact cosine top-k at
#: ~8,300 vectors of dim 384 even for isotropic random unit vectors, the hardest case
#: (measured with M=16, ef_construction=200: recall@10 0.997 and recall@40 0.996 at
#: ef=1000, but only 0.78 / 0.75 at ef=200). Real all-MiniLM-L6-v2 embeddings of the
#: LoCoMo turns (7,568 vectors) already reach 0.9997 at ef=200 and 1.0 at ef=400.
#: The cost is ~0.4-0.6 ms per query at 8,300 vectors on one core.
DEFAULT_EF_SEARCH = 1000
#: Default fixed hnswlib level-assignment seed (hnswlib's own default value, made explicit).
DEFAULT_SEED = 100


def build_hnsw(
    matrix: np.ndarray,
    *,
    M: int = 16,  # the HNSW paper's parameter name
    ef_construction: int = 200,
    random_seed: int = DEFAULT_SEED,
    num_threads: int = 1,
) -> hnswlib.Index:
    """Build an in-memory cosine HNSW index over the rows of ``matrix``.

    Args:
        matrix: float array ``(n, dim)``; row ``i`` gets label ``i``. Rows need not be
            normalised (hnswlib's cosine space normalises them).
        M: graph out-degree (``2*M`` links on layer 0).
        ef_construction: candidate-list size while inserting.
        random_seed: seed of the level generator; with ``num_threads=1`` the build is
            deterministic (byte-identical saved index).
        num_threads: insertion threads; values > 1 are faster but make the graph depend
            on thread scheduling.

    Returns:
        The index, with ``max_elements = max(n, 1)``.

    Raises:
        ValueError: when ``matrix`` is not 2-D.
    """
    mat = np.ascontiguousarray(matrix, dtype=np.float32)
    if mat.ndim != 2:
        raise ValueError(f"expected a 2-D vector matrix, got shape {mat.shape}")
    n, dim = mat.shape
    index = hnswlib.Index(space=SPACE, dim=int(dim))
    index.init_index(
        max_elements=max(n, 1), ef_construction=ef_construction, M=M, random_seed=random_seed
    )
    if n:
        index.add_items(mat, np.arange(n, dtype=np.int64), num_threads=max(1, num_threads))
    return index


def _normalise(matrix: np.ndarray) -> np.ndarray:
    """Return float32 rows scaled to unit L2 norm (all-zero rows stay zero)."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.maximum(norms, np.float32(1e-30))


def exact_topk(vectors_matrix: np.ndarray, queries_matrix: np.ndarray, k: int) -> np.ndarray:
    """Exact cosine top-``k`` by brute force in numpy.

    Args:
        vectors_matrix: ``(n, dim)`` corpus vectors (normalised here).
        queries_matrix: ``(m, dim)`` query vectors (normalised here).
        k: neighbours per query; clamped to ``n``.

    Returns:
        int64 array ``(m, min(k, n))`` of row numbers, most similar first.
    """
    sims = _normalise(queries_matrix) @ _normalise(vectors_matrix).T
    k = min(k, sims.shape[1])
    if k <= 0:
        return np.zeros((sims.shape[0], 0), dtype=np.int64)
    part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1).astype(np.int64)


def topk_recall(
    approx: np.ndarray,
    vectors_matrix: np.ndarray,
    queries_matrix: np.ndarray,
    k: int,
    eps: float = 1e-6,
) -> float:
    """Recall@k of approximate neighbours against exact cosine search, tie-aware.

    Follows the ann-benchmarks ``k-nn`` recall: a returned neighbour counts as a hit
    when its exact cosine similarity is at least the true ``k``-th best similarity minus
    ``eps``, so duplicate vectors (exact ties) are not counted as misses; hits per
    query are capped at ``k``; recall = mean over queries of ``hits / k``.

    Args:
        approx: ``(m, k)`` row labels returned by the approximate index.
        vectors_matrix: ``(n, dim)`` corpus vectors.
        queries_matrix: ``(m, dim)`` query vectors.
        k: neighbours per query (clamped to ``n``).
        eps: similarity tolerance for ties.

    Returns:
        Recall in ``[0, 1]``; 1.0 when there are no queries or ``k == 0``.
    """
    sims = _normalise(queries_matrix) @ _normalise(vectors_matrix).T
    k = min(k, sims.shape[1])
    if sims.shape[0] == 0 or k <= 0:
        return 1.0
    kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1]
    got = np.take_along_axis(sims, np.asarray(approx, dtype=np.int64)[:, :k], axis=1)
    hits = np.minimum((got >= (kth[:, None] - eps)).sum(axis=1), k)
    return float(np.mean(hits / k))


def recall_vs_exact(
    vectors_matrix: np.ndarray,
    queries_matrix: np.ndarray,
    k: int,
    ef_search: int = DEFAULT_EF_SEARCH,
    *,
    M: int = 16,
    ef_construction: int = 200,
    random_seed: int = DEFAULT_SEED,
    num_threads: int = 1,
) -> float:
    """Recall@k of an hnswlib cosine index against exact numpy cosine top-k.

    Builds an index exactly as :class:`FileVecArm` does, searches every query with
    ``ef = max(ef_search, k)``, and scores it with :func:`topk_recall` (exact numpy
    cosine over all vectors).

    Args:
        vectors_matrix: ``(n, dim)`` corpus vectors.
        queries_matrix: ``(m, dim)`` query vectors.
        k: neighbours per query (clamped to ``n``).
        ef_search: HNSW search breadth to evaluate.
        M: graph out-degree.
        ef_construction: build candidate-list size.
        random_seed: level-generator seed.
        num_threads: build threads.

    Returns:
        Mean recall@k in ``[0, 1]``.

    Raises:
        ValueError: when the matrices are not 2-D or their dims differ.
    """
    vecs = np.asarray(vectors_matrix, dtype=np.float32)
    qs = np.asarray(queries_matrix, dtype=np.float32)
    if vecs.ndim != 2 or qs.ndim != 2 or vecs.shape[1] != qs.shape[1]:
        raise ValueError(f"incompatible shapes: vectors {vecs.shape}, queries {qs.shape}")
    k = min(k, vecs.shape[0])
    if k <= 0 or qs.shape[0] == 0:
        return 1.0
    index = build_hnsw(
        vecs,
        M=M,
        ef_construction=ef_construction,
        random_seed=random_seed,
        num_threads=num_threads,
    )
    index.set_ef(max(ef_search, k))
    labels, _ = index.knn_query(np.ascontiguousarray(qs), k=k, num_threads=1)
    return topk_recall(labels, vecs, qs, k)


class FileVecArm(ArmBase):
    """One embedding per memory in an hnswlib HNSW index; top-k cosine, no filtering.

    ``query`` returns the ``k`` approximate nearest memories to ``q.embedding`` by
    cosine similarity; ``q.text``, ``q.predicate`` and ``q.wants_count`` are ignored and
    ``Result.count`` is always ``None``. ``k`` larger than the corpus returns the whole
    corpus ranked.

    Args:
        ef_search: HNSW search breadth; the effective value per query is
            ``max(ef_search, number of neighbours fetched)`` (hnswlib needs ``ef >= k``).
        M: HNSW out-degree.
        ef_construction: HNSW build candidate-list size.
        random_seed: level-generator seed (fixed so builds are reproducible).
        num_threads: ``add_items`` threads; 1 (default) keeps the graph deterministic
            — the build is ~2 s at 8,300 x 384, so parallelism buys little.
    """

    name: ClassVar[str] = "file-vec"
    prefix_stable: ClassVar[bool] = False
    family: ClassVar[str] = "vector"
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=False,
        join=False,
        aggregate=False,
        vector_access="hnsw",
        text_access="none",
        transactions=False,
        filter_stage="none",
    )
    bare_call: ClassVar[BareCall] = BareCall(
        "set_ef + knn_query", "vector checks and the label -> id mapping"
    )

    def __init__(
        self,
        ef_search: int = DEFAULT_EF_SEARCH,
        M: int = 16,
        ef_construction: int = 200,
        random_seed: int = DEFAULT_SEED,
        num_threads: int = 1,
    ) -> None:
        if ef_search < 1 or M < 2 or ef_construction < 1 or num_threads < 1:
            raise ValueError(
                f"{self.name}: need ef_search >= 1, M >= 2, ef_construction >= 1, "
                f"num_threads >= 1; got {ef_search}, {M}, {ef_construction}, {num_threads}"
            )
        self.ef_search = int(ef_search)
        self.M = int(M)
        self.ef_construction = int(ef_construction)
        self.random_seed = int(random_seed)
        self.num_threads = int(num_threads)
        self._dir: Path | None = None
        self._index: hnswlib.Index | None = None
        self._ids: list[str] = []
        self._labels: dict[str, int] = {}
        self._pred_rows: list[dict[str, Any]] = []
        self._dim = 0
        self._meta: pl.DataFrame = pl.DataFrame()
        #: metadata rows remembered since ``_meta`` was last materialised
        self._new_meta: list[pl.DataFrame] = []
        #: ``superseded_by`` changed in ``_pred_rows`` since ``_meta`` was materialised
        self._stale_superseded = False
        #: remembered memories not yet saved
        self._dirty = False

    # ------------------------------------------------------------------ lifecycle
    def build(self, corpus: Corpus, vectors: Embeddings, store_dir: Path) -> BuildStats:
        """Write the metadata file and build + save the HNSW index under ``store_dir``.

        Args:
            corpus: the corpus; every row of ``corpus.memories`` gets one vector.
            vectors: embeddings keyed by memory id (``(n, dim)`` float32, normalised).
            store_dir: directory for the store (created if missing; files replaced).

        Returns:
            ``ingest_ms`` = writing ``metadata.parquet`` (ms); ``index_ms`` = building
            and saving the HNSW index (ms).

        A store this arm held open is saved and closed first (:meth:`close`).

        Raises:
            ArmError: when a memory has no vector or a file cannot be written.
        """
        self.close()
        store_dir = Path(store_dir)
        memories = corpus.memories
        ids = [str(i) for i in memories["memory_id"].to_list()]
        try:
            matrix = vectors.get(ids) if ids else np.zeros((0, vectors.dim), np.float32)
        except KeyError as exc:
            raise ArmError(f"{self.name}: cannot build store in {store_dir}: {exc}") from exc
        meta = memories.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("label"))
        try:
            store_dir.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            write_parquet(store_dir / META_NAME, meta)
            ingest_ms = (time.perf_counter() - t0) * 1000.0
            t1 = time.perf_counter()
            index = build_hnsw(
                matrix,
                M=self.M,
                ef_construction=self.ef_construction,
                random_seed=self.random_seed,
                num_threads=self.num_threads,
            )
            with atomic_path(store_dir / INDEX_NAME) as tmp:
                index.save_index(str(tmp))
            index_ms = (time.perf_counter() - t1) * 1000.0
            write_json(store_dir / MANIFEST_NAME, self._manifest(len(ids), int(matrix.shape[1])))
        except (OSError, RuntimeError) as exc:
            raise ArmError(f"{self.name}: cannot write store in {store_dir}: {exc}") from exc
        self._attach(store_dir, index, meta, int(matrix.shape[1]))
        return BuildStats(ingest_ms=ingest_ms, index_ms=index_ms)

    def open(self, store_dir: Path) -> None:
        """Reload the index, metadata and manifest written by :meth:`build` (or a save).

        A store this arm held open is saved and closed first (:meth:`close`). Index labels
        beyond the metadata rows (a save cut after ``index.bin``) are marked deleted, with
        one warning.

        Raises:
            ArmError: when a file is missing or unreadable, or the files disagree beyond
                what a cut save leaves (message names the path).
        """
        self.close()
        store_dir = Path(store_dir)
        for name in (MANIFEST_NAME, META_NAME, INDEX_NAME):
            if not (store_dir / name).is_file():
                raise ArmError(f"{self.name}: store file {store_dir / name} does not exist")
        try:
            manifest = json.loads((store_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
            dim = int(manifest["dim"])
            count = int(manifest["count"])
            meta = pl.read_parquet(store_dir / META_NAME)
            index = hnswlib.Index(space=SPACE, dim=dim)
            index.load_index(str(store_dir / INDEX_NAME), max_elements=max(count, 1))
            elements = index.get_current_count()
            labels = meta.get_column("label").to_list() if "label" in meta.columns else None
        except (OSError, ValueError, KeyError, TypeError, RuntimeError, PolarsError) as exc:
            raise ArmError(f"{self.name}: cannot open store in {store_dir}: {exc}") from exc
        # saves write index, metadata, manifest in this order: count <= rows <= elements
        if not count <= meta.height <= elements or labels != list(range(meta.height)):
            raise ArmError(
                f"{self.name}: store in {store_dir} is inconsistent: manifest count {count}, "
                f"metadata rows {meta.height}, index elements {elements}"
            )
        if elements > meta.height:  # a save was cut after the index: its labels never were
            for label in range(meta.height, elements):
                index.mark_deleted(label)
            _log.warning(
                "%s: %s: index holds %d vectors the metadata never recorded (an interrupted "
                "save); ignoring them",
                self.name,
                store_dir,
                elements - meta.height,
            )
        self._attach(store_dir, index, meta, dim)

    def close(self) -> None:
        """Save memories remembered since the last save, then drop the index and metadata.

        Safe to call twice.

        Raises:
            ArmError: when the save fails (the store stays open, so nothing is lost
                silently and a second ``close`` tries again).
        """
        if self._dirty:
            self.flush()
        self._index = None
        self._ids = []
        self._labels = {}
        self._pred_rows = []
        self._meta = pl.DataFrame()
        self._new_meta = []
        self._stale_superseded = False
        self._dir = None

    # ------------------------------------------------------------------ writes
    def remember(self, memories: pl.DataFrame, vectors: Embeddings) -> None:
        """Add memories through hnswlib's insert path; visible at once, saved on close/flush.

        The batch is validated by :func:`~agentmem.arms.base.prepare_memories`; the new
        vectors are added with ``add_items`` under the next labels (the index is resized,
        capacity doubled, when full), their metadata rows appended, and every memory a
        row's ``supersedes`` list names gets ``superseded_by`` = that row's id (which the
        ``file-vec-meta`` post-filter reads). Nothing reaches the disk until :meth:`flush`
        or :meth:`close` (module docstring: what is durable when).

        Args:
            memories: the rows (:func:`~agentmem.arms.base.prepare_memories`).
            vectors: their embeddings (``(n, 384)``).

        Raises:
            ArmError: when the arm is not open, the batch is invalid, an id is already
                stored, a superseded id is neither stored nor in the batch, or hnswlib
                fails (nothing is changed then, except on an hnswlib failure).
        """
        store_dir = self._require_open()
        index = self._index
        assert index is not None
        batch = prepare_memories(memories, vectors, self.name)
        ids = batch.ids
        if not ids:
            return
        if batch.vectors.shape[1] != self._dim:
            raise ArmError(
                f"{self.name}: remember: embeddings have dim {batch.vectors.shape[1]}, "
                f"store {store_dir} has dim {self._dim}"
            )
        dup = next((m for m in ids if m in self._labels), None)
        if dup is not None:
            raise ArmError(f"{self.name}: memory {dup!r} is already stored in {store_dir}")
        batch_ids = set(ids)
        corrects: dict[str, list[str]] = {}
        for old, new in batch.supersessions:
            if old not in self._labels and old not in batch_ids:
                raise ArmError(
                    f"{self.name}: memory {new!r} supersedes {old!r}, which is not stored in "
                    f"{store_dir}"
                )
            corrects.setdefault(new, []).append(old)
        start = len(self._ids)
        end = start + len(ids)
        capacity = index.get_max_elements()
        if end > capacity:
            index.resize_index(max(end, 2 * capacity))
        index.add_items(batch.vectors, np.arange(start, end, dtype=np.int64), num_threads=1)
        rows = batch.memories.with_columns(
            pl.Series(SUPERSEDES, [corrects.get(m) for m in ids], dtype=pl.List(pl.String)),
            label=pl.int_range(start, end, dtype=pl.Int64),
        )
        self._new_meta.append(rows)
        self._ids.extend(ids)
        self._labels.update((m, start + i) for i, m in enumerate(ids))
        self._pred_rows.extend(rows.select("memory_id", *PREDICATE_FIELDS).rows(named=True))
        for old, new in batch.supersessions:
            self._pred_rows[self._labels[old]]["superseded_by"] = new
        self._stale_superseded = self._stale_superseded or bool(batch.supersessions)
        self._dirty = True

    def flush(self) -> None:
        """Save the store now: ``index.bin``, ``metadata.parquet``, then ``manifest.json``.

        Each file is replaced atomically (temp file + rename); the metadata file is the
        commit point (module docstring). A no-op when nothing was remembered since the
        last save.

        Raises:
            ArmError: when the arm is not open or a file cannot be written.
        """
        store_dir = self._require_open()
        if not self._dirty:
            return
        index = self._index
        assert index is not None
        try:
            meta = self._materialise()
            with atomic_path(store_dir / INDEX_NAME) as tmp:
                index.save_index(str(tmp))
            write_parquet(store_dir / META_NAME, meta)
            write_json(store_dir / MANIFEST_NAME, self._manifest(meta.height))
        except (OSError, RuntimeError, PolarsError) as exc:
            raise ArmError(f"{self.name}: cannot save store in {store_dir}: {exc}") from exc
        self._dirty = False

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the metadata rows of ``memory_ids`` (remembered ones included).

        ``superseded_by`` shows corrections made by :meth:`remember`; ``form`` is the
        stored value (null when the corpus had none).

        Returns:
            The :data:`~agentmem.arms.base.MEMORY_SCHEMA` columns, one row per stored id
            asked, in the order asked.

        Raises:
            ArmError: when the arm is not open.
        """
        self._require_open()
        return memory_frame(self._materialise(), memory_ids)

    # ------------------------------------------------------------------ queries
    def query(self, q: Query, k: int) -> Result:
        """Return the ``k`` nearest memories to ``q.embedding`` by cosine (no filtering).

        Args:
            q: the query; only ``q.embedding`` (``(dim,)`` float) is used.
            k: maximum number of ids (clamped to the corpus size; ``k <= 0`` -> none).

        Returns:
            Up to ``k`` ids, most similar first; ``count`` is ``None``.

        Raises:
            ArmError: when the arm is not open or the embedding has the wrong dimension.
        """
        labels = self._search(q, k)
        return Result(memory_ids=[self._ids[i] for i in labels], count=None)

    def raw_query_call(self, q: Query, k: int) -> Callable[[], Any]:
        """Return a zero-argument function making exactly the hnswlib calls :meth:`query` makes.

        The query vector, the neighbour count ``min(k, n)`` and the search breadth
        ``max(ef_search, min(k, n))`` are computed here, once; each call of the returned
        function only runs ``index.set_ef(ef)`` and ``index.knn_query(vec, k, num_threads=1)``
        (no label-to-id mapping). A vector with a non-finite value makes no call, as in
        :meth:`query`. The harness-overhead benchmark (:mod:`agentmem.bench`) times it
        against :meth:`query`.

        Returns:
            A function returning hnswlib's ``(labels, distances)`` (``None`` when no
            search runs).

        Raises:
            ArmError: when the arm is not open or the embedding has the wrong dimension.
        """
        plan = self._bare_search(q, k)
        if plan is None:
            return lambda: None
        index, vec, n_fetch, ef = plan

        def call() -> Any:
            index.set_ef(ef)
            return index.knn_query(vec, k=n_fetch, num_threads=1)

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

    def _bare_search(
        self, q: Query, n_fetch: int
    ) -> tuple[hnswlib.Index, np.ndarray, int, int] | None:
        """Return ``(index, vector, neighbours, ef)`` of the search ``query`` makes, or None.

        ``None`` when no search runs (``n_fetch <= 0``, an empty store or a non-finite
        vector, as in :meth:`_search`).

        Raises:
            ArmError: when the arm is not open or the embedding has the wrong dimension.
        """
        store_dir = self._require_open()
        index = self._index
        assert index is not None
        n_fetch = min(int(n_fetch), len(self._ids))
        vec = np.ascontiguousarray(np.asarray(q.embedding, dtype=np.float32).reshape(1, -1))
        if vec.shape[1] != self._dim:
            raise ArmError(
                f"{self.name}: query {q.query_id!r} embedding has dim {vec.shape[1]}, "
                f"store {store_dir} has dim {self._dim}"
            )
        if n_fetch <= 0 or not np.all(np.isfinite(vec)):
            return None
        return index, vec, n_fetch, max(self.ef_search, n_fetch)

    def explain(self, q: Query, k: int = 10) -> str:
        """Describe the HNSW search ``query`` runs for ``q`` (hnswlib has no planner)."""
        self._require_open()
        n = len(self._ids)
        ignored = "text, predicate and count IGNORED" if q.predicate else "text and count IGNORED"
        return (
            f"{self._describe()}; knn_query(k=min(k, {n}), ef=max({self.ef_search}, k)); "
            f"labels -> memory_id via {META_NAME}; {ignored}"
        )

    def storage(self) -> StorageStats:
        """Return the sizes of ``index.bin``, ``metadata.parquet`` and ``manifest.json``.

        Memories remembered since the last save are saved first (:meth:`flush`), so the
        sizes cover them.

        Raises:
            ArmError: when the arm is not open or the save fails.
        """
        store_dir = self._require_open()
        self.flush()
        objects = {
            name: (store_dir / name).stat().st_size
            for name in (INDEX_NAME, META_NAME, MANIFEST_NAME)
            if (store_dir / name).exists()
        }
        return StorageStats(total_bytes=sum(objects.values()), objects=objects, source="file sizes")

    def raw_ingest(self) -> RawIngest:
        """The raw bulk path: metadata Parquet, one batch ``add_items``, the index saved.

        The index parameters are this instance's (``M``, ``ef_construction``, ...).
        """
        return RawIngest(
            "hnsw",
            basis="ingest+index",
            beyond="atomic rename of the files, the manifest",
            hnsw={
                "M": self.M,
                "ef_construction": self.ef_construction,
                "random_seed": self.random_seed,
                "num_threads": self.num_threads,
            },
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

    # ------------------------------------------------------------------ helpers
    def _attach(self, store_dir: Path, index: hnswlib.Index, meta: pl.DataFrame, dim: int) -> None:
        meta = meta.sort("label")
        self._dir = store_dir
        self._index = index
        self._dim = dim
        self._ids = [str(i) for i in meta["memory_id"].to_list()]
        self._labels = {m: i for i, m in enumerate(self._ids)}
        cols = ["memory_id", *PREDICATE_FIELDS]
        self._pred_rows = meta.select(cols).rows(named=True)
        self._meta = meta
        self._new_meta = []
        self._stale_superseded = False
        self._dirty = False

    def _materialise(self) -> pl.DataFrame:
        """Return every metadata row in label order, remembered rows and corrections applied."""
        if self._new_meta:
            self._meta = pl.concat([self._meta, *self._new_meta], how="diagonal_relaxed")
            self._new_meta = []
        if self._stale_superseded:
            current = [r["superseded_by"] for r in self._pred_rows]
            self._meta = self._meta.with_columns(superseded_by=pl.Series(current, dtype=pl.String))
            self._stale_superseded = False
        return self._meta

    def _manifest(self, count: int, dim: int | None = None) -> dict[str, Any]:
        """The ``manifest.json`` document for a store of ``count`` memories."""
        return {
            "space": SPACE,
            "dim": int(self._dim if dim is None else dim),
            "count": int(count),
            "M": self.M,
            "ef_construction": self.ef_construction,
            "random_seed": self.random_seed,
        }

    def _require_open(self) -> Path:
        if self._index is None or self._dir is None:
            raise ArmError(f"{self.name}: arm is not open (call build() or open() first)")
        return self._dir

    def _describe(self) -> str:
        return (
            f"HNSW (hnswlib, space={SPACE}, M={self.M}, ef_construction="
            f"{self.ef_construction}, n={len(self._ids)}, dim={self._dim}) at "
            f"{self._dir / INDEX_NAME if self._dir else '?'}"
        )

    def _search(self, q: Query, n_fetch: int) -> list[int]:
        """Return up to ``n_fetch`` labels nearest to ``q.embedding``, best first."""
        store_dir = self._require_open()
        assert self._index is not None
        n = len(self._ids)
        n_fetch = min(int(n_fetch), n)
        if n_fetch <= 0:
            return []
        vec = np.asarray(q.embedding, dtype=np.float32).reshape(1, -1)
        if vec.shape[1] != self._dim:
            raise ArmError(
                f"{self.name}: query {q.query_id!r} embedding has dim {vec.shape[1]}, "
                f"store {store_dir} has dim {self._dim}"
            )
        if not np.all(np.isfinite(vec)):
            return []
        for ef in (max(self.ef_search, n_fetch), max(n, 1)):
            self._index.set_ef(ef)
            try:
                labels, _ = self._index.knn_query(vec, k=n_fetch, num_threads=1)
            except RuntimeError:  # fewer than n_fetch reachable at this ef: widen once
                continue
            return [int(i) for i in labels[0]]
        raise ArmError(
            f"{self.name}: hnswlib could not return {n_fetch} neighbours from {store_dir}"
        )


class FileVecMetaArm(FileVecArm):
    """``file-vec`` plus a metadata post-filter: top ``k*overfetch`` by cosine, filter, cut.

    ``query`` fetches ``min(k * overfetch, n)`` approximate nearest neighbours, keeps
    those whose metadata row satisfies ``q.predicate`` (:meth:`Predicate.matches`, in
    Python, outside the index), and returns the first ``k`` survivors. A selective
    predicate can therefore return fewer than ``k`` ids even when more matching memories
    exist (underfill). Without a predicate it equals ``file-vec``. ``Result.count`` is
    always ``None``.

    Args:
        ef_search: as :class:`FileVecArm` (effective ``ef = max(ef_search, k*overfetch)``).
        M: as :class:`FileVecArm`.
        ef_construction: as :class:`FileVecArm`.
        random_seed: as :class:`FileVecArm`.
        num_threads: as :class:`FileVecArm`.
        overfetch: how many candidates per requested result to fetch before filtering.
    """

    name: ClassVar[str] = "file-vec-meta"
    prefix_stable: ClassVar[bool] = False
    family: ClassVar[str] = "vector"
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=False,
        aggregate=False,
        vector_access="hnsw",
        text_access="none",
        transactions=False,
        filter_stage="post-filter",
    )
    bare_call: ClassVar[BareCall] = BareCall(
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

    def query(self, q: Query, k: int) -> Result:
        """Top ``k*overfetch`` by cosine, post-filter on ``q.predicate``, cut to ``k``.

        Args:
            q: the query; ``q.embedding`` and ``q.predicate`` are used.
            k: maximum number of ids (``k <= 0`` -> none).

        Returns:
            At most ``k`` ids satisfying the predicate, most similar first (possibly
            fewer than ``k``); ``count`` is ``None``.

        Raises:
            ArmError: when the arm is not open or the embedding has the wrong dimension.
        """
        if k <= 0:
            self._require_open()
            return Result(memory_ids=[], count=None)
        labels = self._search(q, k * self.overfetch)
        if q.predicate is not None:
            pred = q.predicate
            labels = [i for i in labels if pred.matches(self._pred_rows[i])]
        return Result(memory_ids=[self._ids[i] for i in labels[:k]], count=None)

    def raw_query_call(self, q: Query, k: int) -> Callable[[], Any]:
        """Return the bare hnswlib search :meth:`query` makes: ``k * overfetch`` neighbours.

        As :meth:`FileVecArm.raw_query_call` with ``k * overfetch`` neighbours; the
        Python post-filter is not part of it (:meth:`raw_ids` applies it). The function
        returns ``(knn_query's (labels, distances), q.predicate)``, or ``None`` when no
        search runs.

        Raises:
            ArmError: when the arm is not open or the embedding has the wrong dimension.
        """
        if k <= 0:
            self._require_open()
            return lambda: None
        plan = self._bare_search(q, k * self.overfetch)
        if plan is None:
            return lambda: None
        index, vec, n_fetch, ef = plan
        pred = q.predicate

        def call() -> Any:
            index.set_ef(ef)
            return index.knn_query(vec, k=n_fetch, num_threads=1), pred

        return call

    def raw_ids(self, raw: Any, k: int) -> list[str]:
        """The ids :meth:`query` makes of the bare call's output: post-filter, cut to ``k``.

        Args:
            raw: ``((labels, distances), predicate)`` from the function
                :meth:`raw_query_call` returned (``None`` when no search ran).
            k: the result length the call was made for.

        Returns:
            The memory ids of the labels whose metadata satisfies the predicate, best
            first, at most ``k``.
        """
        if raw is None or k <= 0:
            return []
        (labels, _), pred = raw
        keep = [int(i) for i in labels[0]]
        if pred is not None:
            keep = [i for i in keep if pred.matches(self._pred_rows[i])]
        return [self._ids[i] for i in keep[:k]]

    def explain(self, q: Query, k: int = 10) -> str:
        """Describe the search + Python post-filter ``query`` runs for ``q``."""
        self._require_open()
        n = len(self._ids)
        if q.predicate is None:
            filt = "no predicate"
        else:
            p = q.predicate
            filt = f"Python post-filter {p.field} {p.op} {p.value!r} on {META_NAME} rows"
        return (
            f"{self._describe()}; knn_query(k=min(k*{self.overfetch}, {n}), "
            f"ef=max({self.ef_search}, k*{self.overfetch})); {filt}; cut to k "
            "(may return fewer than k); text and count IGNORED"
        )
