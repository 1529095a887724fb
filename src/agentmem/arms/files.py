"""The ``file-jsonl`` arm: an append-only JSONL file that is re-read on every recall.

This is the plain-file memory many agent frameworks ship: each memory is one JSON object
appended to ``memories.jsonl`` (no fsync, as in the original study), and recall re-reads
and re-parses the whole file, scores every memory by how many distinct query terms its
body contains, and returns the best ``k`` with newest-first tie-breaking
(REFERENCE §3: "recall re-parses the whole file, scores by number of query terms
contained, newest first on ties"). The file has no way to express predicates, joins or
counts; those parts of a query are ignored.

Recall parses the file with polars' vectorised NDJSON reader (:func:`polars.read_ndjson`,
every line parsed, only the four columns scoring needs materialised) and scores with
vectorised string kernels (one ``str.to_lowercase`` of the body column, one literal
``str.contains`` per term). Nothing is cached between calls: the architecture under test
is "re-read the whole file on every recall", only the parser and the scan are native code.
(Issue 10: the former ``json.loads``-per-line parser and Python scoring loop took
~100 ms per query at 8.3k memories.)
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from agentmem.arms.base import (
    ArmError,
    BuildStats,
    Capabilities,
    Corpus,
    Embeddings,
    Query,
    Result,
    StorageStats,
)
from agentmem.arms.text import query_terms

#: File name of the store inside ``store_dir``.
JSONL_NAME = "memories.jsonl"

#: Keys every stored JSON object must carry for scoring and ordering.
_REQUIRED_KEYS = ("memory_id", "body", "created_day", "seq")

#: Columns (and types) recall reads from each line; other keys are parsed and skipped.
SCAN_SCHEMA: dict[str, pl.DataType] = {
    "memory_id": pl.String(),
    "body": pl.String(),
    "created_day": pl.Int64(),
    "seq": pl.Int64(),
}


class FileJsonlArm:
    """Append-only JSONL memory file; every query re-reads and re-parses the file.

    Storage: ``store_dir/memories.jsonl``, one compact UTF-8 JSON object per memory with
    every memory column (memory_id, session_id, turn_no, seq, kind, body, fact_id,
    created_day, source, confidence, superseded_by, tokens, entity_ids), written with
    plain buffered appends and no ``fsync``.

    Scoring: ``score(m) = |{t in query_terms(q.text) : t in lower(m.body)}|`` (distinct
    terms, case-insensitive substring); memories with score 0 are dropped; order is
    score desc, then ``created_day`` desc, then ``seq`` desc (newest first); top ``k``.
    ``q.predicate`` and ``q.wants_count`` are ignored (``Result.count`` is always
    ``None``). The arm has no constructor parameters.
    """

    name: ClassVar[str] = "file-jsonl"
    prefix_stable: ClassVar[bool] = True
    family: ClassVar[str] = "file"
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=False,
        join=False,
        aggregate=False,
        vector_access="none",
        text_access="scan",
        transactions=False,
    )

    def __init__(self) -> None:
        self._path: Path | None = None

    # ------------------------------------------------------------------ lifecycle
    def build(self, corpus: Corpus, vectors: Embeddings, store_dir: Path) -> BuildStats:
        """Write every memory as one appended JSON line to ``store_dir/memories.jsonl``.

        Any existing file is replaced. ``vectors`` is unused (the file holds no vectors).

        Args:
            corpus: the corpus; only ``corpus.memories`` is stored, in its row order.
            vectors: unused.
            store_dir: directory to create the store in (created if missing).

        Returns:
            ``ingest_ms`` = wall time of the appends (ms); ``index_ms`` = 0 (no index).

        Raises:
            ArmError: when the file cannot be written (message names the path).
        """
        store_dir = Path(store_dir)
        path = store_dir / JSONL_NAME
        try:
            store_dir.mkdir(parents=True, exist_ok=True)
            path.unlink(missing_ok=True)
            rows = corpus.memories.rows(named=True)
            t0 = time.perf_counter()
            # One append per memory, as an agent's "remember" tool would do; no fsync.
            with path.open("a", encoding="utf-8", newline="\n") as fh:
                for row in rows:
                    fh.write(_dumps(row) + "\n")
            ingest_ms = (time.perf_counter() - t0) * 1000.0
        except OSError as exc:
            raise ArmError(f"file-jsonl: cannot write store {path}: {exc}") from exc
        self._path = path
        return BuildStats(ingest_ms=ingest_ms, index_ms=0.0)

    def open(self, store_dir: Path) -> None:
        """Reopen ``store_dir/memories.jsonl`` (parses it once to validate it).

        The file is parsed with :mod:`json` line by line (errors name the line) and once
        with the recall reader (:func:`_read_table`).

        Raises:
            ArmError: when the file is missing, unreadable, or a line is not a JSON object
                with non-null ``memory_id``, ``body``, ``created_day`` and ``seq`` of the
                types in :data:`SCAN_SCHEMA` (names the path).
        """
        path = Path(store_dir) / JSONL_NAME
        if not path.is_file():
            raise ArmError(f"file-jsonl: store file {path} does not exist")
        _read_all(path, validate=True)
        _check_complete(_read_table(path), path)  # the reader recall uses accepts it too
        self._path = path

    def close(self) -> None:
        """Forget the store path (the file is never held open); safe to call twice."""
        self._path = None

    # ------------------------------------------------------------------ queries
    def query(self, q: Query, k: int) -> Result:
        """Re-read the whole file and return the top ``k`` memories by term overlap.

        Every call parses the whole file again (:func:`_read_table`, the call
        :meth:`raw_query_call` times), lower-cases every body once and adds up one
        literal substring test per distinct term (terms are never interpreted as
        patterns); memories scoring 0 are dropped, the rest ordered by score desc,
        ``created_day`` desc, ``seq`` desc, file order (top ``k``).

        Args:
            q: the query; only ``q.text`` is used.
            k: maximum number of ids to return (``k <= 0`` returns none).

        Returns:
            Up to ``k`` memory ids, best first; ``count`` is always ``None``. Text with no
            search terms (empty, whitespace, punctuation) gives an empty result.

        Raises:
            ArmError: when the arm is not open, the file is missing/unreadable, a line is
                not valid JSON or not a JSON object, or an object lacks (or has ``null``
                for) ``memory_id``, ``body``, ``created_day`` or ``seq`` (names the path).
        """
        path = self._require_open()
        return Result(memory_ids=_scan(path, query_terms(q.text or ""), k), count=None)

    def raw_query_call(self, q: Query, k: int) -> Callable[[], list[str]]:
        """Return a zero-argument function making the file scan :meth:`query` makes.

        A file has no engine: its "driver call" is the polars read-and-scan itself
        (:func:`_scan`: :func:`polars.read_ndjson` of the whole file, then the vectorised
        term count and top-``k``), with the terms already extracted. The
        harness-overhead benchmark (:mod:`agentmem.bench`) times it against
        :meth:`query`, so the ratio is what :meth:`query` adds: term extraction and the
        :class:`Result`.

        Returns:
            A function returning the top-``k`` memory ids.

        Raises:
            ArmError: when the arm is not open (the returned function raises ArmError
                when the file cannot be parsed).
        """
        path = self._require_open()
        return functools.partial(_scan, path, query_terms(q.text or ""), k)

    def explain(self, q: Query) -> str:
        """Describe the scan ``query`` performs for ``q`` (a file has no query planner)."""
        path = self._require_open()
        terms = query_terms(q.text or "")
        size = path.stat().st_size if path.exists() else 0
        pred = (
            f"predicate {q.predicate.field} {q.predicate.op} {q.predicate.value!r} IGNORED "
            "(file has no predicate support)"
            if q.predicate is not None
            else "no predicate"
        )
        return (
            f"FULL SCAN {path} ({size} bytes): read and json-parse every line "
            "(polars read_ndjson, columns memory_id, body, created_day, seq); "
            f"score = number of distinct terms {terms} contained case-insensitively in body "
            "(lower-cased body, one literal substring test per term); "
            "drop score 0; sort score DESC, created_day DESC, seq DESC, file order; take k; "
            f"{pred}; count not supported"
        )

    def storage(self) -> StorageStats:
        """Return the size of ``memories.jsonl`` in bytes (``source="file sizes"``).

        Raises:
            ArmError: when the arm is not open.
        """
        path = self._require_open()
        size = path.stat().st_size if path.exists() else 0
        return StorageStats(total_bytes=size, objects={JSONL_NAME: size}, source="file sizes")

    # ------------------------------------------------------------------ helpers
    def _require_open(self) -> Path:
        if self._path is None:
            raise ArmError("file-jsonl: arm is not open (call build() or open() first)")
        return self._path


def _dumps(row: dict[str, Any]) -> str:
    """Serialise one memory row as compact UTF-8 JSON (no ASCII escaping)."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def _read_all(path: Path, *, validate: bool = False) -> list[dict[str, Any]]:
    """Read and parse every line of the JSONL store.

    Args:
        path: the ``memories.jsonl`` file.
        validate: also check that every line is an object with the required keys
            (done once in :meth:`FileJsonlArm.open`, not on the query path).

    Returns:
        One dict per non-blank line, in file order.

    Raises:
        ArmError: when the file cannot be read, a line is not valid JSON, or an object
            lacks a required key (message names the path and line number).
    """
    try:
        with path.open("r", encoding="utf-8") as fh:
            lines = fh.readlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ArmError(f"file-jsonl: cannot read store {path}: {exc}") from exc
    rows: list[dict[str, Any]] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ArmError(f"file-jsonl: corrupt line {lineno} in {path}: {exc}") from exc
        if validate and (
            not isinstance(row, dict) or any(key not in row for key in _REQUIRED_KEYS)
        ):
            raise ArmError(
                f"file-jsonl: line {lineno} in {path} is not a memory object "
                f"with keys {list(_REQUIRED_KEYS)}"
            )
        rows.append(row)
    return rows


def _read_table(path: Path) -> pl.DataFrame:
    """Read the whole JSONL store from disk and parse it with polars' NDJSON reader.

    This is the recall access path (and the bare call of :meth:`FileJsonlArm.raw_query_call`).
    The file's bytes are read afresh and every line is parsed; only the
    :data:`SCAN_SCHEMA` columns are kept (other keys are skipped, missing keys become
    ``null``). Blank lines are skipped. Nothing is cached.

    Args:
        path: the ``memories.jsonl`` file.

    Returns:
        One row per non-blank line, in file order, with columns ``memory_id`` (str),
        ``body`` (str), ``created_day`` (i64), ``seq`` (i64).

    Raises:
        ArmError: when the file cannot be read, a line is not valid JSON or not a JSON
            object, or a value cannot be read as its column's type (names the path; the
            line number when the line-by-line :mod:`json` parser can locate it).
    """
    try:
        # bytes, not the path: polars would expand glob characters ([, *, ?) in a path
        return pl.read_ndjson(path.read_bytes(), schema=SCAN_SCHEMA)
    except (OSError, pl.exceptions.PolarsError) as exc:
        if isinstance(exc, pl.exceptions.PolarsError):
            _read_all(path, validate=True)  # raises ArmError naming the bad line, if it can
        raise ArmError(f"file-jsonl: cannot parse store {path}: {exc}") from exc


def _check_complete(table: pl.DataFrame, path: Path) -> None:
    """Raise ArmError if an object lacks (or holds ``null`` for) a required key.

    The NDJSON reader cannot tell a missing key from ``null``; both make the line unusable
    for scoring and ordering. Null counts are column metadata, so this is O(columns).

    Raises:
        ArmError: naming the path, the column and the first offending object (1-based
            position among the non-blank lines).
    """
    for column in _REQUIRED_KEYS:
        values = table.get_column(column)
        if values.null_count():
            first = int(values.is_null().arg_max() or 0) + 1
            raise ArmError(
                f"file-jsonl: object {first} (non-blank line) in {path} is not a memory "
                f"object: {column!r} is missing or null"
            )


def _scan(path: Path, terms: list[str], k: int) -> list[str]:
    """Re-read and parse the whole file, count ``terms`` per body, return the top ``k`` ids.

    The file is parsed on every call (:func:`_read_table`), even when there is nothing to
    search for (so a corrupt file is reported whatever the query).

    Args:
        path: the ``memories.jsonl`` file.
        terms: distinct lower-cased search terms (:func:`agentmem.arms.text.query_terms`),
            used as literal substrings.
        k: result length (``k <= 0`` gives ``[]``).

    Returns:
        Up to ``k`` memory ids: score (terms contained) desc, ``created_day`` desc,
        ``seq`` desc, file order; memories containing no term are dropped.

    Raises:
        ArmError: the file is unreadable, corrupt or lacks a required key (names the path).
    """
    table = _read_table(path)  # the architecture under test: re-parse on every call
    _check_complete(table, path)
    if not terms or k <= 0 or table.height == 0:
        return []
    body = table.get_column("body").str.to_lowercase()
    # at most MAX_TERMS (32) distinct terms: a UInt8 count cannot overflow
    score = body.str.contains(terms[0], literal=True).cast(pl.UInt8)
    for term in terms[1:]:
        score = score + body.str.contains(term, literal=True)
    return _top_k(table, score.to_numpy(), k)


def _top_k(table: pl.DataFrame, score: np.ndarray, k: int) -> list[str]:
    """Ids of the ``k`` best rows with ``score > 0``: score, created_day, seq desc, file order.

    Args:
        table: the parsed store (:func:`_read_table`), no nulls in the required columns.
        score: per-row term count, shape ``(table.height,)``.
        k: how many ids to return (``k >= 1``).

    Returns:
        Up to ``k`` memory ids, best first; ties on (score, created_day, seq) keep file
        order, like the stable sort of the original per-line implementation.
    """
    rows = np.flatnonzero(score)
    if rows.size == 0:
        return []
    day = table.get_column("created_day").to_numpy()[rows]
    seq = table.get_column("seq").to_numpy()[rows]
    # lexsort: last key is primary, ascending; reversing gives score, day, seq descending
    # with the file position (-rows) descending reversed, i.e. earlier lines first.
    order = np.lexsort((-rows, seq, day, score[rows]))[::-1][:k]
    ids = table.get_column("memory_id")
    return [ids[int(i)] for i in rows[order]]  # k item look-ups beat a gather here
