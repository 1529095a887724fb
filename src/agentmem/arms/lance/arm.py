"""``lancedb``: one embedded LanceDB table, exact cosine search with a pre-filter, exact counts.

Under ``store_dir``: ``lancedb/`` (the database ``lancedb.connect`` opens) holding the table
``memories``: ``vector`` (``fixed_size_list<float32>[384]``, the cached MiniLM vectors),
``body`` and the metadata of :func:`~agentmem.arms.product.metadata_rows`. No vector index
is built: at 8,000-33,000 rows LanceDB's flat search is exact and fast (docs/arms/lancedb.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import polars as pl

from agentmem.arms import base
from agentmem.arms.lance.filters import (
    lance_filter,
    query_filter,
    sql_string,
)
from agentmem.arms.lance.table import arrow_rows, import_lancedb
from agentmem.arms.product import (
    STORED_COLUMNS,
    ProductArm,
    batch_answers,
    rows_frame,
)
from agentmem.errors import ArmError
from agentmem.types import VECTOR_DIM

__all__ = ["DB_DIR", "TABLE", "LanceDbArm", "lance_filter", "query_filter", "sql_string"]

#: the database directory under ``store_dir`` (the URI given to ``lancedb.connect``)
DB_DIR = "lancedb"
#: the one table
TABLE = "memories"

_T = TypeVar("_T")


class LanceDbArm(ProductArm):
    """LanceDB embedded: exact cosine search with the predicate as a pre-filter; exact counts.

    ``query`` runs ``table.search(vector).distance_type("cosine").where(filter,
    prefilter=True).limit(k)`` on a table with no vector index (a flat, exact scan), so a
    selective predicate still returns ``k`` matches when ``k`` exist; ``q.text`` is
    ignored. ``Result.count`` (``q.wants_count``) is ``table.count_rows(filter)``: the
    exact number of memories matching the filter (all memories without one).

    Scope: in-search (pre-filter). ``scope_id`` is a string column (``''`` for none) and
    ``q.scope`` is ``scope_id = '<scope>'`` AND-ed with the predicate in the one SQL
    filter (:func:`query_filter`) the search pre-filters with and ``count_rows`` counts.

    ``remember`` appends with ``table.add`` and marks corrected memories with
    ``table.update(where=..., values={"superseded_by": new_id})``: two LanceDB commits,
    not one transaction. Each remember call is one modification; every
    ``optimize_every`` of them the arm calls ``table.optimize()`` (LanceDB's documented
    maintenance: compaction and index update), never otherwise.

    Args:
        optimize_every: remember calls between ``table.optimize()`` calls (LanceDB's rule
            of thumb: after 20 modification operations); 0 never optimizes.

    Raises:
        ValueError: when ``optimize_every`` is negative.
    """

    name: ClassVar[str] = "lancedb"
    products: ClassVar[tuple[str, ...]] = ("lancedb", "pyarrow")
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.vector_database(
        vector_access="brute-force"
    )
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "the table's search (vector, or hybrid for lancedb-hybrid) to Arrow and its id "
        "column, and count_rows for a count",
        "the vector check and the SQL filter built per call; the cut to k",
    )
    prefix_stable: ClassVar[bool] = True

    def __init__(self, optimize_every: int = 20) -> None:
        if optimize_every < 0:
            raise ValueError(f"{self.name}: optimize_every must be >= 0, got {optimize_every}")
        self.optimize_every = int(optimize_every)
        self._dir: Path | None = None
        self._db: Any = None
        self._table: Any = None
        self._writes = 0

    # ------------------------------------------------------------------ helpers
    def _lance(self, op: str, fn: Callable[[], _T]) -> _T:
        """Run one LanceDB call; any exception becomes an ArmError naming LanceDB and ``op``."""
        try:
            return fn()
        except ArmError:
            raise
        except Exception as exc:
            raise ArmError(
                f"{self.name}: LanceDB {op} on {self._dir} failed: {type(exc).__name__}: {exc}"
            ) from exc

    def _require(self) -> Any:
        """The open table. Raises ArmError when the arm is not open."""
        if self._table is None:
            raise ArmError(f"{self.name}: not open (call build or open first)")
        return self._table

    def _build_indexes(self, table: Any) -> None:
        """Create the arm's indexes on a freshly created table (none for ``lancedb``)."""

    def _check_indexes(self, table: Any, store_dir: Path) -> None:
        """Refuse a store without the indexes this arm queries (none for ``lancedb``)."""

    # ------------------------------------------------------------------ lifecycle
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
        """Create the table under ``store_dir/lancedb`` from the corpus and its vectors.

        Args:
            corpus: ``corpus.memories`` (the :data:`~agentmem.types.MEMORY_SCHEMA` columns).
            vectors: embeddings of every memory id (``(n, 384)`` float32, normalised).
            store_dir: directory of the store (created; an existing table is overwritten).

        Returns:
            ``ingest_ms`` = ``create_table`` from the pyarrow table (ms); ``index_ms`` =
            building the arm's indexes (0 here: no vector index).

        Raises:
            ArmError: when a memory has no vector or LanceDB fails.
        """
        lancedb = import_lancedb()

        self.close()
        store_dir = Path(store_dir)
        memories = corpus.memories
        ids = memories.get_column("memory_id").to_list()
        try:
            matrix = vectors.get(ids) if ids else np.zeros((0, VECTOR_DIM), np.float32)
        except KeyError as exc:
            raise ArmError(f"{self.name}: cannot build store in {store_dir}: {exc}") from None
        data = arrow_rows(memories, base.float32_array(matrix, self.name, "build: embeddings"))
        self._dir = store_dir
        try:
            store_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArmError(f"{self.name}: cannot create {store_dir}: {exc}") from exc
        t0 = time.perf_counter()
        db = self._lance("connect", lambda: lancedb.connect(str(store_dir / DB_DIR)))
        table = self._lance("create_table", lambda: db.create_table(TABLE, data, mode="overwrite"))
        ingest_ms = (time.perf_counter() - t0) * 1000.0
        t1 = time.perf_counter()
        self._lance("create_index", lambda: self._build_indexes(table))
        index_ms = (time.perf_counter() - t1) * 1000.0
        self._db, self._table, self._writes = db, table, 0
        return base.BuildStats(ingest_ms=ingest_ms, index_ms=index_ms)

    def open(self, store_dir: Path) -> None:
        """Reopen the table built under ``store_dir`` (possibly by another process).

        Raises:
            ArmError: naming the path when ``store_dir`` holds no LanceDB table of this
                arm (``lancedb.connect`` would create an empty database, so the table's
                directory is checked first) or a table without a stored column (e.g.
                ``scope_id``), or when LanceDB fails.
        """
        lancedb = import_lancedb()

        self.close()
        store_dir = Path(store_dir)
        if not (store_dir / DB_DIR / f"{TABLE}.lance").is_dir():
            raise ArmError(f"{self.name}: no LanceDB table {TABLE!r} under {store_dir}")
        self._dir = store_dir
        db = self._lance("connect", lambda: lancedb.connect(str(store_dir / DB_DIR)))
        table = self._lance("open_table", lambda: db.open_table(TABLE))
        missing = [c for c in STORED_COLUMNS if c not in table.schema.names]
        if missing:
            raise ArmError(
                f"{self.name}: the LanceDB table under {store_dir} lacks the columns "
                f"{missing}; rebuild the store"
            )
        self._check_indexes(table, store_dir)
        self._db, self._table, self._writes = db, table, 0

    def close(self) -> None:
        """Drop the table and connection handles (LanceDB's sync connection has no close)."""
        self._table = None
        self._db = None

    # ------------------------------------------------------------------ queries
    def _vector_search(self, table: Any, vec: np.ndarray, k: int, where: str | None) -> Any:
        """The query builder of the vector search: cosine, pre-filtered, top ``k``."""
        builder = table.search(vec).distance_type("cosine").limit(k)
        if where is not None:
            builder = builder.where(where, prefilter=True)
        return builder.select(["memory_id", "_distance"])

    def _ranked(
        self, table: Any, q: base.Query, vec: np.ndarray, k: int, where: str | None
    ) -> list:
        """Up to ``k`` memory ids for ``q`` best first (``k >= 1``, ``vec`` finite)."""
        builder = self._vector_search(table, vec, k, where)
        out = self._lance("vector search", builder.to_arrow)
        return out.column("memory_id").to_pylist()

    def query(self, q: base.Query, k: int) -> base.Result:
        """Return at most ``k`` memory ids best first, plus the exact count if wanted.

        Args:
            q: the query; ``q.embedding`` (384 floats), ``q.scope`` and ``q.predicate``
                are used, the text is not (``lancedb-hybrid`` uses it).
            k: maximum number of ids (``k <= 0`` gives none).

        Returns:
            Ids by cosine similarity, every one in the scope and matching the predicate;
            ``count`` = ``count_rows(filter)`` when ``q.wants_count`` (the filter's
            matches, independent of ``k``), else ``None``. A non-finite embedding ranks
            nothing.

        Raises:
            ArmError: when the arm is not open, the embedding is missing or not 384
                values, or LanceDB fails.
        """
        raw = self.raw_query_call(q, k)()
        return base.Result(memory_ids=self.raw_ids(raw, k), count=raw[1])

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], tuple[list[str], int | None]]:
        """Return a zero-argument function making exactly the LanceDB calls :meth:`query` makes.

        The vector check and the SQL filter are built here, once; the function runs the
        search (:meth:`_ranked`: the query builder to an Arrow table and its id column)
        and ``count_rows`` (when ``q.wants_count``) and returns ``(ids, count or None)``.

        Raises:
            ArmError: when the arm is not open or the embedding is not 384 values.
        """
        table = self._require()
        vec = base.checked_vector(q.embedding, self.name, f"query {q.query_id!r}")
        where = query_filter(q)
        search = k > 0 and bool(np.all(np.isfinite(vec)))

        def call() -> tuple[list[str], int | None]:
            ids = self._ranked(table, q, vec, int(k), where) if search else []
            count = None
            if q.wants_count:
                count = int(self._lance("count_rows", lambda: table.count_rows(where)))
            return ids, count

        return call

    def raw_ids(self, raw: tuple[list[str], int | None], k: int) -> list[str]:
        """The ids :meth:`query` returns of :meth:`raw_query_call`'s output, cut to ``k``."""
        return raw[0][: max(k, 0)]

    def query_many(self, queries: Sequence[base.Query], k: int) -> list[base.Result]:
        """Each answer :meth:`query` gives, from one multi-vector search per filter.

        ``table.search([v1, v2, ...])`` with the cosine distance, pre-filter, limit and
        columns of :meth:`query` searches every vector of a group in one call (LanceDB's
        batch search; its ``query_index`` column says which vector a row answers). Counts
        are :meth:`query`'s ``count_rows``.

        Raises:
            ArmError: as :meth:`query`.
        """
        table = self._require()

        def search(first: base.Query, vecs: list[np.ndarray]) -> list[list[str]]:
            builder = self._vector_search(table, vecs, int(k), query_filter(first))
            out = self._lance("batch vector search", builder.to_arrow)
            ids: list[list[str]] = [[] for _ in vecs]
            rows = out.column("memory_id").to_pylist()
            which = (
                out.column("query_index").to_pylist()
                if "query_index" in out.column_names
                else [0] * len(rows)  # one vector: LanceDB answers it as a single search
            )
            for i, memory_id in zip(which, rows, strict=True):
                ids[i].append(memory_id)
            return ids

        def count(q: base.Query) -> int | None:
            if not q.wants_count:
                return None
            where = query_filter(q)
            return int(self._lance("count_rows", lambda: table.count_rows(where)))

        return batch_answers(self.name, queries, k, query_filter, search, count)

    def explain(self, q: base.Query, k: int = 10) -> str:
        """LanceDB's own plan (``explain_plan(verbose=True)``) of the search ``query`` runs.

        Preceded by the builder calls with the filter expression, and followed by the
        ``count_rows`` call when ``q.wants_count``.

        Raises:
            ArmError: when the arm is not open, the embedding is bad or LanceDB fails.
        """
        table = self._require()
        vec = base.checked_vector(q.embedding, self.name, f"query {q.query_id!r}")
        return self._explain(table, q, vec, max(int(k), 1))

    def _explain(self, table: Any, q: base.Query, vec: np.ndarray, k: int) -> str:
        """The vector search's call and plan, plus the count line."""
        where = query_filter(q)
        builder = self._vector_search(table, vec, k, where)
        plan = self._lance("explain_plan", lambda: builder.explain_plan(verbose=True))
        call = f"table.search(vector).distance_type('cosine').limit({k})"
        if where is not None:
            call += f".where({where!r}, prefilter=True)"
        lines = [f"{call} (no vector index: flat exact scan; text ignored)", plan.rstrip()]
        lines.append(self._count_line(q))
        return "\n".join(line for line in lines if line)

    def _count_line(self, q: base.Query) -> str:
        """The ``count_rows`` call ``query`` makes for ``q`` ("" when no count is asked)."""
        if not q.wants_count:
            return ""
        where = query_filter(q)
        return f"count: table.count_rows({where!r})" if where else "count: table.count_rows()"

    # ------------------------------------------------------------------ writes
    def _stored(self, table: Any, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the table holds."""
        if not ids:
            return set()
        from lancedb.expr import col

        builder = table.search().where(col("memory_id").isin(list(ids))).select(["memory_id"])
        builder = builder.limit(None)
        out = self._lance("search (stored ids)", builder.to_arrow)
        return set(out.column("memory_id").to_pylist())

    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Append memories with ``table.add``; mark the ones they correct with ``table.update``.

        Validation happens before any write: an id already stored or a superseded id
        neither stored nor in the batch writes nothing. A correction naming a memory of its
        own batch is written with ``superseded_by`` set; earlier memories get it through
        one ``update`` per correcting id. The rows are visible to the next query (LanceDB
        searches rows an index does not cover yet with a flat scan).

        Raises:
            ArmError: when the arm is not open, the batch is invalid
                (:func:`~agentmem.arms.base.prepare_memories`), an id is already stored, a
                superseded id is not stored, or LanceDB fails (the ``add`` may then have
                committed without the ``update``: two commits, no transaction).
        """
        batch = base.prepare_memories(memories, vectors, self.name)
        table = self._require()
        ids = batch.ids
        if not ids:
            return
        taken = self._stored(table, ids)
        if taken:
            first = next(i for i in ids if i in taken)
            raise ArmError(f"{self.name}: remember: memory {first!r} is already stored")
        in_batch = set(ids)
        olds = sorted({old for old, _ in batch.supersessions if old not in in_batch})
        missing = set(olds) - self._stored(table, olds)
        if missing:
            raise ArmError(
                f"{self.name}: remember: superseded memory {sorted(missing)[0]!r} is not stored"
            )
        frame = batch.memories
        inner = {old: new for old, new in batch.supersessions if old in in_batch}
        if inner:
            marked = pl.col("memory_id").replace_strict(inner, default=None, return_dtype=pl.String)
            frame = frame.with_columns(superseded_by=pl.coalesce(marked, pl.col("superseded_by")))
        data = arrow_rows(frame, batch.vectors)
        self._lance("add", lambda: table.add(data))
        by_new: dict[str, list[str]] = {}
        for old, new in batch.supersessions:
            if old not in in_batch:
                by_new.setdefault(new, []).append(old)
        if by_new:
            for new, old_ids in by_new.items():
                where = f"memory_id IN ({', '.join(sql_string(i) for i in old_ids)})"
                self._lance(
                    "update",
                    lambda w=where, n=new: table.update(where=w, values={"superseded_by": n}),
                )
        self._writes += 1
        if self.optimize_every and self._writes % self.optimize_every == 0:
            self._lance("optimize", table.optimize)

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """The stored rows of ``memory_ids`` in the order asked, each once, unknown ids left out.

        One ``table.search().where(memory_id IN (...))`` scan; columns exactly
        :data:`~agentmem.types.MEMORY_SCHEMA` (``entity_ids`` is not stored: null).

        Raises:
            ArmError: when the arm is not open or LanceDB fails.
        """
        table = self._require()
        want = list(dict.fromkeys(str(i) for i in memory_ids))
        found: dict[str, dict[str, Any]] = {}
        if want:
            from lancedb.expr import col

            builder = (
                table.search()
                .where(col("memory_id").isin(want))
                .select(list(STORED_COLUMNS))
                .limit(None)
            )
            out = self._lance("search (fetch)", builder.to_arrow)
            found = {r["memory_id"]: r for r in out.to_pylist()}
        return rows_frame([found[i] for i in want if i in found])

    # ------------------------------------------------------------------ storage
    def storage(self) -> base.StorageStats:
        """Bytes from LanceDB's own accounting: ``table.stats()`` and ``list_indices()``.

        ``total_bytes`` is ``stats()["total_bytes"]`` (data, index and overlay files of the
        current version, from the manifest; older versions still on disk and manifests
        are not counted); each index is its own object (``IndexConfig.size_bytes``),
        ``memories`` the rest.

        Raises:
            ArmError: when the arm is not open or LanceDB fails.
        """
        table = self._require()
        stats = self._lance("stats", table.stats)
        get = stats.get if isinstance(stats, dict) else lambda key: getattr(stats, key)
        total = int(get("total_bytes"))
        indices = self._lance("list_indices", table.list_indices)
        objects: dict[str, int] = {}
        for idx in indices:
            objects[f"index:{idx.name}"] = int(idx.size_bytes or 0)
        objects = {"memories": max(total - sum(objects.values()), 0), **objects}
        frags = get("fragment_stats")
        n_frag = frags["num_fragments"] if isinstance(frags, dict) else frags.num_fragments
        return base.StorageStats(
            total_bytes=sum(objects.values()),
            objects=objects,
            source="lancedb Table.stats() total_bytes (current version) split by "
            "list_indices() size_bytes",
            counts={
                "memories": int(get("num_rows")),
                "fragments": int(n_frag),
                "indices": int(get("num_indices")),
            },
        )
