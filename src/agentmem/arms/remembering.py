"""What every arm's :meth:`~agentmem.arms.base.Arm.remember` shares: one validation of a batch.

:func:`prepare_memories` checks and completes the frame an agent hands over (required
columns, defaults, token counts, the ``supersedes`` column) into :class:`Remembered`;
:func:`with_supersedes` turns a corpus's ``superseded_by`` links into that column.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from agentmem.arms.arrays import float32_array
from agentmem.errors import ArmError
from agentmem.types import MEMORY_SCHEMA, VECTOR_DIM, Embeddings

#: Optional column of a frame given to :meth:`Arm.remember`: the ids of earlier memories
#: this memory corrects (``list[str]``); the arm sets their ``superseded_by`` to its id.
SUPERSEDES = "supersedes"

#: Values :func:`prepare_memories` gives to missing or null optional columns.
MEMORY_DEFAULTS: dict[str, Any] = {
    "kind": "episodic",
    "source": "agent",
    "confidence": 1.0,
    "form": "turn",
}


@dataclass
class Remembered:
    """A validated :meth:`Arm.remember` batch (:func:`prepare_memories`).

    Attributes:
        memories: the rows, columns and dtypes of :data:`MEMORY_SCHEMA` (no ``supersedes``),
            in the order given; ``memory_id``, ``body``, ``created_day``, ``seq``,
            ``kind``, ``source``, ``confidence``, ``tokens`` and ``entity_ids`` non-null.
        vectors: float32 ``(n, VECTOR_DIM)``, row ``i`` the embedding of memory ``i``.
        supersessions: ``(old_id, new_id)`` pairs from the ``supersedes`` column, in
            row order; every ``new_id`` is in ``memories``.
    """

    memories: pl.DataFrame
    vectors: np.ndarray
    supersessions: list[tuple[str, str]]

    @property
    def ids(self) -> list[str]:
        """The new memory ids, in row order."""
        return self.memories.get_column("memory_id").to_list()


def prepare_memories(
    memories: pl.DataFrame, vectors: Embeddings, owner: str, call: str = "remember"
) -> Remembered:
    """Validate and complete a frame for :meth:`Arm.remember` (one place, for every arm).

    Required columns: ``memory_id`` and ``body`` (non-null strings) and ``created_day``
    (non-null int). Every other :data:`MEMORY_SCHEMA` column is optional; missing or null
    values become :data:`MEMORY_DEFAULTS`, ``seq`` becomes ``time.time_ns()`` (plus the
    row's position, so a batch keeps its order and sorts after every corpus memory),
    ``tokens`` the body's o200k count and ``entity_ids`` an empty list. An optional
    :data:`SUPERSEDES` column lists earlier ids each memory corrects.

    Args:
        memories: the rows to remember.
        vectors: embeddings holding (at least) every new ``memory_id``.
        owner: the arm name, for messages.
        call: the arm method validating the rows, for messages (``"build"`` when an arm
            builds its store through this function).

    Returns:
        The :class:`Remembered` batch.

    Raises:
        ArmError: naming ``owner`` and the first offending column or id, when a required
            column is missing or null, a value cannot be cast to its dtype, an id repeats
            within the batch, a memory supersedes itself, a ``scope_id`` is ``""`` (no
            :class:`Query` can ask for that scope; null is "no scope"), or an embedding is
            missing, not numeric (:func:`float32_array`), not ``VECTOR_DIM`` values or not
            finite.
    """
    from agentmem.tokens import count_tokens

    if not isinstance(memories, pl.DataFrame):
        raise ArmError(f"{owner}: {call} needs a polars DataFrame, got {type(memories)}")
    for col in ("memory_id", "body", "created_day"):
        if col not in memories.columns:
            raise ArmError(f"{owner}: {call}: column {col!r} is required")
        if memories.get_column(col).null_count():
            raise ArmError(f"{owner}: {call}: column {col!r} has null values")
    unknown = set(memories.columns) - set(MEMORY_SCHEMA) - {SUPERSEDES}
    if unknown:
        raise ArmError(f"{owner}: {call}: unknown columns {sorted(unknown)}")
    n = memories.height
    try:
        frame = memories.select(
            [
                (pl.col(c) if c in memories.columns else pl.lit(None)).cast(t).alias(c)
                for c, t in MEMORY_SCHEMA.items()
            ]
            + [
                (pl.col(SUPERSEDES) if SUPERSEDES in memories.columns else pl.lit(None))
                .cast(pl.List(pl.String))
                .alias(SUPERSEDES)
            ]
        )
    except pl.exceptions.PolarsError as exc:
        raise ArmError(f"{owner}: {call}: a value has the wrong type: {exc}") from exc
    ids = frame.get_column("memory_id")
    empty_scope = ids.filter(frame.get_column("scope_id") == "")
    if empty_scope.len():
        raise ArmError(
            f"{owner}: {call}: memory {empty_scope.item(0)!r} has an empty scope_id "
            "(null for no scope; no query can ask for scope '')"
        )
    if ids.n_unique() != n:
        dup = ids.filter(ids.is_duplicated()).item(0)
        raise ArmError(f"{owner}: {call}: memory id {dup!r} appears twice in the batch")
    base_seq = time.time_ns()
    tokens = count_tokens(frame.get_column("body").to_list()) if n else []
    fills = {c: pl.col(c).fill_null(v) for c, v in MEMORY_DEFAULTS.items()}
    frame = frame.with_columns(
        **fills,
        seq=pl.col("seq").fill_null(pl.int_range(pl.len(), dtype=pl.Int64) + base_seq),
        tokens=pl.col("tokens").fill_null(pl.Series(tokens, dtype=pl.Int32)),
        entity_ids=pl.col("entity_ids").fill_null(pl.lit([], dtype=pl.List(pl.String))),
    )
    supersessions: list[tuple[str, str]] = []
    for new_id, olds in zip(ids.to_list(), frame.get_column(SUPERSEDES).to_list(), strict=True):
        for old in olds or ():
            if old == new_id:
                raise ArmError(f"{owner}: {call}: memory {new_id!r} supersedes itself")
            supersessions.append((old, new_id))
    try:
        mat = vectors.get(ids.to_list()) if n else np.zeros((0, VECTOR_DIM), np.float32)
    except KeyError as exc:
        raise ArmError(f"{owner}: {call}: {exc.args[0]}") from None
    mat = float32_array(mat, owner, f"{call}: embeddings")
    if mat.ndim != 2 or mat.shape[1] != VECTOR_DIM:
        raise ArmError(f"{owner}: {call}: embeddings have shape {mat.shape}, need (n, 384)")
    if not np.all(np.isfinite(mat)):
        raise ArmError(f"{owner}: {call}: an embedding has non-finite values")
    return Remembered(frame.drop(SUPERSEDES), mat, supersessions)


def build_memories(
    memories: pl.DataFrame, columns: Sequence[str], owner: str, where: Any
) -> pl.DataFrame:
    """A corpus's memories ready for an arm's build, checked to hold ``columns``.

    A corpus without scopes gets a null ``scope_id`` (every memory unscoped).

    Args:
        memories: the corpus's memory rows.
        columns: the columns the arm writes.
        owner: the arm name, for the message.
        where: the store (a path, a database), for the message.

    Raises:
        ArmError: ``"<owner>: corpus memories lack columns [...] (<where>)"``.
    """
    if "scope_id" not in memories.columns:
        memories = memories.with_columns(scope_id=pl.lit(None, pl.String))
    missing = [c for c in columns if c not in memories.columns]
    if missing:
        raise ArmError(f"{owner}: corpus memories lack columns {missing} ({where})")
    return memories


def with_supersedes(memories: pl.DataFrame) -> pl.DataFrame:
    """Add the :data:`SUPERSEDES` column a corpus implies, for replaying it through remember.

    A corpus marks the *old* memories (``superseded_by`` = the correction's id); replayed
    in ``seq`` order, the correction arrives after them and names them instead.

    Args:
        memories: memory rows with ``memory_id`` and ``superseded_by``.

    Returns:
        ``memories`` with ``supersedes`` (``list[str]`` or null) and ``superseded_by`` set
        to null, so that each supersession is made by the correction's remember call.
    """
    links = (
        memories.filter(pl.col("superseded_by").is_not_null())
        .group_by("superseded_by", maintain_order=True)
        .agg(pl.col("memory_id").alias(SUPERSEDES))
        .rename({"superseded_by": "memory_id"})
    )
    return memories.join(links, on="memory_id", how="left", maintain_order="left").with_columns(
        superseded_by=pl.lit(None, dtype=pl.String)
    )
