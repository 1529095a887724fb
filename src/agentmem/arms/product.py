"""What the product arms share: the products' versions, metadata rows, directory storage.

A *product arm* runs a memory store engineers use (Chroma, LanceDB, Milvus Lite,
LangGraph's store, mem0) embedded, through that product's public API, handed the cached
MiniLM vectors (never the product's own embedding function), so a retrieval difference is
never an embedding difference. Each class names the distributions it drives in
``products``; ``capture.json`` records their installed versions. The product's own module
is imported inside the methods, never at import time, so listing the arms stays fast.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from agentmem.arms import base

__all__ = [
    "BATCH_QUERIES",
    "NO_ID",
    "METADATA_FIELDS",
    "STORED_COLUMNS",
    "ProductArm",
    "batch_answers",
    "directory_storage",
    "matchless_id",
    "metadata_rows",
    "rows_frame",
]

#: vectors per batch search call (:func:`batch_answers`): bounds one call's result set to
#: ``BATCH_QUERIES * k`` rows
BATCH_QUERIES = 256

#: What a product stores for a null id in metadata (several refuse null metadata values):
#: ``session_id``, ``fact_id``, ``superseded_by`` and ``scope_id`` are ``""`` when the
#: memory has none, so "not superseded" is the filter ``superseded_by == ""``, and a scope
#: filter ``scope_id == s`` (``s`` never ``""``: :class:`~agentmem.types.Query` refuses an
#: empty scope) never matches a memory without a scope.
NO_ID = ""

#: The metadata every product arm stores beside a memory's vector, with its Python type:
#: the predicate fields, the body, and the remaining :data:`MEMORY_SCHEMA` scalars that
#: :meth:`Arm.fetch` returns.
METADATA_FIELDS: dict[str, type] = {
    "memory_id": str,
    "created_day": int,
    "session_id": str,
    "fact_id": str,
    "superseded_by": str,
    "seq": int,
    "kind": str,
    "source": str,
    "confidence": float,
    "tokens": int,
    "turn_no": int,
    "form": str,
    "scope_id": str,
}

#: The :data:`MEMORY_SCHEMA` columns a product arm stores and reads back
#: (``entity_ids`` is not kept).
STORED_COLUMNS: tuple[str, ...] = tuple(c for c in base.MEMORY_SCHEMA if c != "entity_ids")

_STRINGS = ("session_id", "fact_id", "superseded_by", "form", "scope_id")


def matchless_id(value: object) -> bool:
    r"""True for an id value no stored memory can equal, so an ``=`` filter on it is empty.

    ``""`` is the stored null marker (:data:`NO_ID`), no memory's id (a product's
    ``{field: ""}`` would return the memories *without* that id); a string that does not
    encode as UTF-8 (a lone surrogate such as ``"\ud800"``) equals no stored string, and
    the products refuse it in a filter. Non-strings are not ids: False.
    """
    if not isinstance(value, str):
        return False
    if value == NO_ID:
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def metadata_rows(memories: pl.DataFrame) -> list[dict[str, Any]]:
    """One metadata dict per memory row (:data:`METADATA_FIELDS`), nulls made storable.

    Args:
        memories: rows with the :data:`MEMORY_SCHEMA` columns (``corpus.memories`` or
            ``prepare_memories(...).memories``); a missing column is left out, except the
            id columns below.

    Returns:
        Dicts in row order: ``session_id``, ``fact_id``, ``superseded_by``, ``form`` and
        ``scope_id`` hold :data:`NO_ID` for null or a missing column (a corpus without
        ``scope_id`` has no scopes), ``turn_no`` ``-1`` for null, every other field its
        value (``created_day`` an ``int``).
    """
    cols = [c for c in METADATA_FIELDS if c in memories.columns or c in _STRINGS]
    frame = memories.with_columns(
        *(pl.lit(NO_ID, dtype=pl.String).alias(c) for c in _STRINGS if c not in memories.columns)
    )
    frame = frame.select(cols).with_columns(
        *(pl.col(c).fill_null(NO_ID) for c in _STRINGS),
        *([pl.col("turn_no").fill_null(-1)] if "turn_no" in cols else []),
    )
    return frame.to_dicts()


def rows_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The :data:`MEMORY_SCHEMA` frame of stored rows (the inverse of :func:`metadata_rows`).

    Args:
        rows: dicts holding ``body`` and the :data:`METADATA_FIELDS` a product returned
            (missing keys are null; ``entity_ids`` is not kept: null).

    Returns:
        One row per dict, in order, exactly the :data:`MEMORY_SCHEMA` columns; ``""`` ids
        and ``turn_no == -1`` become null again.
    """
    out = []
    for r in rows:
        row = {c: r.get(c) for c in base.MEMORY_SCHEMA}
        for c in _STRINGS:
            if row[c] == NO_ID:
                row[c] = None
        if row["turn_no"] == -1:
            row["turn_no"] = None
        out.append(row)
    return pl.DataFrame(out, schema=base.MEMORY_SCHEMA, orient="row")


def directory_storage(root: Path, what: str = "directory size") -> base.StorageStats:
    """Bytes of the files under ``root``, per top-level entry, for products with no accounting.

    Args:
        root: the store directory.
        what: the ``source`` label (say that it is the directory's size, not the engine's).

    Returns:
        :class:`StorageStats` with one object per top-level file or folder (its files'
        sizes summed, recursively).

    Raises:
        ArmError: when ``root`` is not a directory.
    """
    root = Path(root)
    if not root.is_dir():
        raise base.ArmError(f"store directory {root} does not exist")
    objects: dict[str, int] = {}
    for entry in sorted(root.iterdir()):
        if entry.is_file():
            objects[entry.name] = entry.stat().st_size
        elif entry.is_dir():
            objects[entry.name + "/"] = sum(
                f.stat().st_size for f in entry.rglob("*") if f.is_file()
            )
    return base.StorageStats(total_bytes=sum(objects.values()), objects=objects, source=what)


class ProductArm(base.ArmBase):
    """Base of the product arms: ``family = "product"`` and the distributions they drive.

    Subclasses set ``products`` to the distribution names whose versions matter (the
    product first, e.g. ``("chromadb",)``, ``("mem0ai", "qdrant-client")``); the lock pins
    each to an exact version and ``capture.json`` records what is installed.
    """

    family: ClassVar[str] = "product"
    #: distributions (importlib.metadata names) this arm drives, the product first
    products: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def product_versions(cls) -> dict[str, str | None]:
        """Installed version of each of ``products``; ``None`` for one not installed."""
        out: dict[str, str | None] = {}
        for dist in cls.products:
            try:
                out[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                out[dist] = None
        return out


def batch_answers(
    name: str,
    queries: Sequence[base.Query],
    k: int,
    group: Callable[[base.Query], Hashable],
    search: Callable[[base.Query, list[np.ndarray]], list[list[str]]],
    count: Callable[[base.Query], int | None],
    searches: Callable[[base.Query], bool] | None = None,
) -> list[base.Result]:
    """Answers to ``queries`` from one batch search per filter (a product's ``query_many``).

    A query's search runs when ``k > 0``, its embedding is finite and ``searches`` (when
    given) says so, as in the arms' ``query``; the others get no ids. Queries whose
    ``group`` key is equal share one filter and go to ``search`` together, at most
    :data:`BATCH_QUERIES` vectors a call.

    Args:
        name: the arm's name, for errors.
        queries: the queries, answered in their order.
        k: results per query.
        group: the key of a query's filter (equal keys: the same search arguments).
        search: ``(first query of the group, vectors) -> one id list per vector``, best
            first: the product's batch search with that query's filter.
        count: the count ``query`` returns for a query (``None`` unless it wants one).
        searches: whether a query's search runs at all (e.g. not for a filter that
            matches nothing); every query's does for ``None``.

    Returns:
        One :class:`~agentmem.arms.base.Result` per query, ids cut to ``k``.

    Raises:
        ArmError: when an embedding is not 384 values, or ``search`` answers a different
            number of vectors than it was given.
    """
    ids: list[list[str]] = [[] for _ in queries]
    groups: dict[Hashable, list[tuple[int, np.ndarray]]] = {}
    for i, q in enumerate(queries):
        vec = base.checked_vector(q.embedding, name, f"query {q.query_id!r}")
        if k > 0 and bool(np.all(np.isfinite(vec))) and (searches is None or searches(q)):
            groups.setdefault(group(q), []).append((i, vec))
    for members in groups.values():
        first = queries[members[0][0]]
        for at in range(0, len(members), BATCH_QUERIES):
            chunk = members[at : at + BATCH_QUERIES]
            found = search(first, [vec for _, vec in chunk])
            if len(found) != len(chunk):
                raise base.ArmError(
                    f"{name}: a batch search of {len(chunk)} vectors answered {len(found)}"
                )
            for (i, _), got in zip(chunk, found, strict=True):
                ids[i] = list(got)[: max(k, 0)]
    return [base.Result(memory_ids=ids[i], count=count(q)) for i, q in enumerate(queries)]
