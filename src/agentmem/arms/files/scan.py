"""The ``file-jsonl`` recall scan: re-read the file, count query terms per body, top ``k``.

Vectorised string kernels over the parsed file: one ``str.to_lowercase`` of the body
column, one literal ``str.contains`` per term, and for a scoped query one equality test
of ``scope_id`` per line (the scope applied in the same pass, exactly); ties newest
first (or by ``seq`` alone, the study's), then file order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from agentmem.arms.files.reader import SCAN_SCHEMA, SCOPED_SCAN_SCHEMA, read_store
from agentmem.text import is_utf8


def scan(
    path: Path, terms: list[str], k: int, scope: str | None = None, tie_break: str = "newest"
) -> list[str]:
    """Re-read and parse the whole file, count ``terms`` per body, return the top ``k`` ids.

    The file is read on every call (:func:`~agentmem.arms.files.reader.read_store`), even
    when there is nothing to search for; unreadable lines are skipped. A scoped scan also
    parses ``scope_id`` (:data:`~agentmem.arms.files.reader.SCOPED_SCAN_SCHEMA`).

    Args:
        path: the ``memories.jsonl`` file.
        terms: distinct lower-cased search terms (:func:`agentmem.text.query_terms`),
            used as literal substrings.
        k: result length (``k <= 0`` gives ``[]``).
        scope: when set, only lines whose ``scope_id`` equals it can be returned.
        tie_break: see :func:`top_k`.

    Returns:
        Up to ``k`` memory ids (:func:`top_terms`).

    Raises:
        ArmError: the file cannot be read (names the path).
    """
    schema = SCAN_SCHEMA if scope is None else SCOPED_SCAN_SCHEMA
    return top_terms(read_store(path, schema).table, terms, k, scope, tie_break)


def top_terms(
    table: pl.DataFrame,
    terms: list[str],
    k: int,
    scope: str | None = None,
    tie_break: str = "newest",
    body: pl.Series | None = None,
) -> list[str]:
    """Top ``k`` ids of ``table`` by the ``terms`` contained (literal, lower-cased body).

    A term listed twice counts twice (the study's term extraction keeps repeats).

    Args:
        table: the readable memories (:func:`~agentmem.arms.files.reader.read_store`); with
            a ``scope_id`` column when ``scope`` is set.
        terms: lower-cased search terms (at most 32), used as literal substrings.
        k: result length (``k <= 0`` gives ``[]``).
        scope: when set, lines whose ``scope_id`` is not equal to it (null included)
            score 0, so they are never returned; the value is compared, never parsed (a
            scope that is not UTF-8 returns no ids: no line can hold it).
        tie_break: see :func:`top_k`.
        body: ``table``'s ``body`` lower-cased, when the caller has it (many queries over
            one read); computed here for ``None``.

    Returns:
        Up to ``k`` memory ids by score (terms contained) desc, ties by ``tie_break``;
        memories containing no term are dropped.

    Raises:
        polars.exceptions.ColumnNotFoundError: when ``scope`` is set and ``table`` has no
            ``scope_id`` column.
    """
    if not terms or k <= 0 or table.height == 0:
        return []
    if body is None:
        body = table.get_column("body").str.to_lowercase()
    # at most MAX_TERMS (32) distinct terms: a UInt8 count cannot overflow
    score = body.str.contains(terms[0], literal=True).cast(pl.UInt8)
    for term in terms[1:]:
        score = score + body.str.contains(term, literal=True)
    if scope is not None and not is_utf8(scope):  # no line can hold it (polars cannot encode it)
        return []
    if scope is not None:  # out of scope (or no scope): score 0, dropped like a miss
        in_scope = table.get_column("scope_id").eq(scope).fill_null(False)
        score = score * in_scope.cast(pl.UInt8)
    return top_k(table, score.to_numpy(), k, tie_break)


def top_k(table: pl.DataFrame, score: np.ndarray, k: int, tie_break: str = "newest") -> list[str]:
    """Ids of the ``k`` best rows with ``score > 0``, ties broken by ``tie_break``.

    Args:
        table: the readable memories (:func:`~agentmem.arms.files.reader.read_store`), no
            nulls in required columns.
        score: per-row term count, shape ``(table.height,)``.
        k: how many ids to return (``k >= 1``).
        tie_break: ``"newest"``: ``created_day`` desc, then ``seq`` desc; ``"seq"``: ``seq``
            desc alone (the study's). Either way, remaining ties keep file order (earlier
            lines first).

    Returns:
        Up to ``k`` memory ids, best first.
    """
    rows = np.flatnonzero(score)
    if rows.size == 0:
        return []
    seq = table.get_column("seq").to_numpy()[rows]
    # lexsort: last key is primary, ascending; reversing gives the keys descending with the
    # file position (-rows) descending reversed, i.e. earlier lines first.
    if tie_break == "seq":
        order = np.lexsort((-rows, seq, score[rows]))[::-1][:k]
    else:
        day = table.get_column("created_day").to_numpy()[rows]
        order = np.lexsort((-rows, seq, day, score[rows]))[::-1][:k]
    ids = table.get_column("memory_id")
    return [ids[int(i)] for i in rows[order]]  # k item look-ups beat a gather here
