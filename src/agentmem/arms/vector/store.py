"""The HNSW store under the vector arms: build, reopen, remember, save, fetch, sizes.

Under ``store_dir``: ``index.bin`` (the hnswlib index; labels are row numbers of the
metadata file), ``metadata.parquet`` (every memory column, ``scope_id`` included, plus
``label``, in label order) and ``manifest.json`` (dim, count, build parameters).
Remembered memories are visible at once and saved by :meth:`HnswStore.flush` or
:meth:`HnswStore.close`; what a crash keeps, and why one writer at a time:
docs/arms/vector.md.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import hnswlib
import numpy as np
import polars as pl
from polars.exceptions import PolarsError

from agentmem.arms import base
from agentmem.arms.rows import memory_frame
from agentmem.arms.vector.hnsw import DEFAULT_EF_SEARCH, DEFAULT_SEED, SPACE, build_hnsw
from agentmem.arms.vector.scopes import ScopeLabels, with_filter_columns
from agentmem.io import atomic_path, write_json, write_parquet

#: The family's logger (``agentmem.arms.vector``).
_log = logging.getLogger(__package__)

INDEX_NAME = "index.bin"
META_NAME = "metadata.parquet"
MANIFEST_NAME = "manifest.json"


class HnswStore(base.ArmBase):
    """An hnswlib cosine index beside a metadata file: the storage both vector arms share.

    Subclasses set the arm's class variables and its query methods. The store keeps, in
    memory, the labels of each scope (:class:`~agentmem.arms.vector.scopes.ScopeLabels`,
    read through :meth:`_scope_labels`), rebuilt from the metadata's ``scope_id`` column
    when the store is opened, for the arms to filter by.

    Args:
        ef_search: HNSW search breadth; the effective value per query is
            ``max(ef_search, number of neighbours fetched)`` (hnswlib needs ``ef >= k``).
        M: HNSW out-degree.
        ef_construction: HNSW build candidate-list size.
        random_seed: level-generator seed (fixed so builds are reproducible).
        num_threads: ``add_items`` threads; 1 (default) keeps the graph deterministic
            — the build is ~2 s at 8,300 x 384, so parallelism buys little.
    """

    name: ClassVar[str]

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
        self._scopes = ScopeLabels()
        self._dim = 0
        self._meta: pl.DataFrame = pl.DataFrame()
        #: metadata rows remembered since ``_meta`` was last materialised
        self._new_meta: list[pl.DataFrame] = []
        #: ``superseded_by`` changed in ``_pred_rows`` since ``_meta`` was materialised
        self._stale_superseded = False
        #: remembered memories not yet saved
        self._dirty = False

    # ------------------------------------------------------------------ lifecycle
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
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
            raise base.ArmError(f"{self.name}: cannot build store in {store_dir}: {exc}") from exc
        matrix = base.float32_array(matrix, self.name, "build: embeddings")
        meta = with_filter_columns(memories).with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("label")
        )
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
            raise base.ArmError(f"{self.name}: cannot write store in {store_dir}: {exc}") from exc
        self._attach(store_dir, index, meta, int(matrix.shape[1]))
        return base.BuildStats(ingest_ms=ingest_ms, index_ms=index_ms)

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
                raise base.ArmError(f"{self.name}: store file {store_dir / name} does not exist")
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
            raise base.ArmError(f"{self.name}: cannot open store in {store_dir}: {exc}") from exc
        # saves write index, metadata, manifest in this order: count <= rows <= elements
        if not count <= meta.height <= elements or labels != list(range(meta.height)):
            raise base.ArmError(
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

    def integrity_check(self) -> tuple[str, list[str]]:
        """The manifest, metadata and index agree.

        Checked by :meth:`open`, which refuses a store where they do not.

        Raises:
            ArmError: when the arm is not open.
        """
        self._require_open()
        return "manifest, metadata and index agree (at open)", []

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
        self._scopes = ScopeLabels()
        self._meta = pl.DataFrame()
        self._new_meta = []
        self._stale_superseded = False
        self._dir = None

    # ------------------------------------------------------------------ writes
    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Add memories through hnswlib's insert path; visible at once, saved on close/flush.

        The batch is validated by :func:`~agentmem.arms.base.prepare_memories`; the new
        vectors are added with ``add_items`` under the next labels (the index is resized,
        capacity doubled, when full), their metadata rows appended, and every memory a
        row's ``supersedes`` list names gets ``superseded_by`` = that row's id (which the
        ``file-vec-meta`` post-filter reads); a row's ``scope_id`` puts its label in that
        scope's label set. Nothing reaches the disk until :meth:`flush`
        or :meth:`close` (docs/arms/vector.md: what is durable when).

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
        batch = base.prepare_memories(memories, vectors, self.name)
        ids = batch.ids
        if not ids:
            return
        if batch.vectors.shape[1] != self._dim:
            raise base.ArmError(
                f"{self.name}: remember: embeddings have dim {batch.vectors.shape[1]}, "
                f"store {store_dir} has dim {self._dim}"
            )
        dup = next((m for m in ids if m in self._labels), None)
        if dup is not None:
            raise base.ArmError(f"{self.name}: memory {dup!r} is already stored in {store_dir}")
        batch_ids = set(ids)
        corrects: dict[str, list[str]] = {}
        for old, new in batch.supersessions:
            if old not in self._labels and old not in batch_ids:
                raise base.ArmError(
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
            pl.Series(base.SUPERSEDES, [corrects.get(m) for m in ids], dtype=pl.List(pl.String)),
            label=pl.int_range(start, end, dtype=pl.Int64),
        )
        self._new_meta.append(rows)
        self._ids.extend(ids)
        self._labels.update((m, start + i) for i, m in enumerate(ids))
        self._pred_rows.extend(rows.select("memory_id", *base.PREDICATE_FIELDS).rows(named=True))
        self._scopes.add(start, rows.get_column("scope_id").to_list())
        for old, new in batch.supersessions:
            self._pred_rows[self._labels[old]]["superseded_by"] = new
        self._stale_superseded = self._stale_superseded or bool(batch.supersessions)
        self._dirty = True

    def flush(self) -> None:
        """Save the store now: ``index.bin``, ``metadata.parquet``, then ``manifest.json``.

        Each file is replaced atomically (temp file + rename); the metadata file is the
        commit point (docs/arms/vector.md). A no-op when nothing was remembered since the
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
            raise base.ArmError(f"{self.name}: cannot save store in {store_dir}: {exc}") from exc
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

    def storage(self) -> base.StorageStats:
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
        return base.StorageStats(
            total_bytes=sum(objects.values()), objects=objects, source="file sizes"
        )

    def raw_ingest(self) -> base.RawIngest:
        """The raw bulk path: metadata Parquet, one batch ``add_items``, the index saved.

        The index parameters are this instance's (``M``, ``ef_construction``, ...).
        """
        return base.RawIngest(
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

    # ------------------------------------------------------------------ helpers
    def _attach(self, store_dir: Path, index: hnswlib.Index, meta: pl.DataFrame, dim: int) -> None:
        meta = with_filter_columns(meta.sort("label"))
        self._dir = store_dir
        self._index = index
        self._dim = dim
        self._ids = [str(i) for i in meta["memory_id"].to_list()]
        self._labels = {m: i for i, m in enumerate(self._ids)}
        cols = ["memory_id", *base.PREDICATE_FIELDS]
        self._pred_rows = meta.select(cols).rows(named=True)
        self._scopes = ScopeLabels()
        self._scopes.add(0, meta.get_column("scope_id").to_list())
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

    def _scope_labels(self, q: base.Query) -> set[int] | None:
        """Labels of the memories in ``q.scope`` (empty for an unknown scope); None: unscoped."""
        return self._scopes.labels(q.scope)

    def _require_open(self) -> Path:
        if self._index is None or self._dir is None:
            raise base.ArmError(f"{self.name}: arm is not open (call build() or open() first)")
        return self._dir

    def _describe(self) -> str:
        return (
            f"HNSW (hnswlib, space={SPACE}, M={self.M}, ef_construction="
            f"{self.ef_construction}, n={len(self._ids)}, dim={self._dim}) at "
            f"{self._dir / INDEX_NAME if self._dir else '?'}"
        )
