"""Memory rows as :meth:`Arm.fetch` returns them: :data:`MEMORY_SCHEMA` columns, order asked."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from agentmem.arms import base


def memory_frame(found: pl.DataFrame, memory_ids: Sequence[str]) -> pl.DataFrame:
    """Return the rows of ``found`` named by ``memory_ids``, as :meth:`Arm.fetch` must.

    Args:
        found: stored rows with a ``memory_id`` column and any of the
            :data:`MEMORY_SCHEMA` columns (others are dropped); when an id occurs twice,
            its first row counts.
        memory_ids: the ids asked for; repeats are answered once, unknown ids left out.

    Returns:
        One row per asked id held by ``found``, in the order asked, with exactly the
        :data:`MEMORY_SCHEMA` columns and dtypes (columns ``found`` lacks are null).

    Raises:
        polars.exceptions.PolarsError: when a stored value cannot be cast to its dtype.
    """
    asked = pl.DataFrame(
        {"memory_id": list(dict.fromkeys(str(m) for m in memory_ids))},
        schema={"memory_id": pl.String},
    )
    rows = found.unique("memory_id", keep="first", maintain_order=True)
    joined = asked.join(
        rows.with_columns(pl.col("memory_id").cast(pl.String)),
        on="memory_id",
        how="inner",
        maintain_order="left",
    )
    return joined.select(
        (pl.col(c) if c in joined.columns else pl.lit(None)).cast(t).alias(c)
        for c, t in base.MEMORY_SCHEMA.items()
    )


def memory_rows_frame(rows: Sequence[Sequence[object]], columns: Sequence[str]) -> pl.DataFrame:
    """Build a frame from database rows, each column cast to its :data:`MEMORY_SCHEMA` dtype.

    Args:
        rows: tuples of values, one per row, in ``columns`` order.
        columns: names of the values (each a :data:`MEMORY_SCHEMA` column).

    Returns:
        The rows as a frame with ``columns`` (cast to their dtypes).
    """
    schema = {c: base.MEMORY_SCHEMA[c] for c in columns}
    return pl.DataFrame([list(r) for r in rows], schema=schema, orient="row")


def fetch_ids(memory_ids: Sequence[str]) -> list[str]:
    """Return ``memory_ids`` as a list without repeats, in the order given.

    Raises:
        ValueError: when ``memory_ids`` is one string (not a sequence of ids) or holds a
            value that is not a string.
    """
    if isinstance(memory_ids, str):
        raise ValueError(f"fetch takes a sequence of memory ids, not one string {memory_ids!r}")
    want = list(dict.fromkeys(memory_ids))
    bad = [m for m in want if not isinstance(m, str)]
    if bad:
        raise ValueError(f"memory ids must be strings, got {bad[0]!r}")
    return want
