"""The ``file-jsonl`` arm: an append-only JSONL file that is re-read on every recall.

This is the plain-file memory many agent frameworks ship: each memory is one JSON object
appended to ``memories.jsonl`` (no fsync, as in the original study), and recall re-reads
and re-parses the whole file, scores every memory by how many distinct query terms its
body contains, and returns the best ``k`` with newest-first tie-breaking
(REFERENCE §3: "recall re-parses the whole file, scores by number of query terms
contained, newest first on ties"). The file has no way to express predicates, joins or
counts; those parts of a query are ignored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

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

        Raises:
            ArmError: when the file is missing, unreadable, or a line is not a JSON object
                with ``memory_id``, ``body``, ``created_day`` and ``seq`` (names the path).
        """
        path = Path(store_dir) / JSONL_NAME
        if not path.is_file():
            raise ArmError(f"file-jsonl: store file {path} does not exist")
        _read_all(path, validate=True)
        self._path = path

    def close(self) -> None:
        """Forget the store path (the file is never held open); safe to call twice."""
        self._path = None

    # ------------------------------------------------------------------ queries
    def query(self, q: Query, k: int) -> Result:
        """Re-read the whole file and return the top ``k`` memories by term overlap.

        Args:
            q: the query; only ``q.text`` is used.
            k: maximum number of ids to return (``k <= 0`` returns none).

        Returns:
            Up to ``k`` memory ids, best first; ``count`` is always ``None``. Text with no
            search terms (empty, whitespace, punctuation) gives an empty result.

        Raises:
            ArmError: when the arm is not open or the file is missing/corrupt.
        """
        path = self._require_open()
        rows = _read_all(path)  # the architecture under test: re-parse on every call
        terms = query_terms(q.text or "")
        if not terms or k <= 0:
            return Result(memory_ids=[], count=None)
        scored: list[tuple[int, int, int, str]] = []
        try:
            for row in rows:
                body = str(row["body"] or "").lower()
                score = sum(1 for t in terms if t in body)
                if score:
                    scored.append(
                        (score, int(row["created_day"]), int(row["seq"]), str(row["memory_id"]))
                    )
        except (KeyError, TypeError, ValueError) as exc:
            raise ArmError(f"file-jsonl: malformed memory object in {path}: {exc!r}") from exc
        scored.sort(key=lambda s: (-s[0], -s[1], -s[2]))
        return Result(memory_ids=[s[3] for s in scored[:k]], count=None)

    def raw_query_call(self, q: Query, k: int) -> Callable[[], list[dict[str, Any]]]:
        """Return a zero-argument function making the file access :meth:`query` makes.

        Each call re-reads and JSON-parses the whole store file (``_read_all``), with no
        scoring; the harness-overhead benchmark (:mod:`agentmem.bench`) times it against
        :meth:`query`. ``q`` and ``k`` do not change the access (every recall reads it all).

        Returns:
            A function returning the parsed memory objects, in file order.

        Raises:
            ArmError: when the arm is not open.
        """
        path = self._require_open()
        return lambda: _read_all(path)

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
            f"FULL SCAN {path} ({size} bytes): read and json-parse every line; "
            f"score = number of distinct terms {terms} contained case-insensitively in body; "
            "drop score 0; sort score DESC, created_day DESC, seq DESC; take k; "
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
