"""The ``file-jsonl`` arm: an append-only JSONL file that is re-read on every recall.

The plain-file memory many agent frameworks ship: one JSON object appended per memory,
and recall re-reads and re-parses the whole file and scores every memory by the query
terms its body contains. How the file is read, torn lines are handled and corrections
are recorded: docs/arms/files.md.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from agentmem.arms import base
from agentmem.arms.files.reader import (
    FETCH_SCHEMA,
    SCAN_SCHEMA,
    SCOPED_SCAN_SCHEMA,
    StoreRead,
    file_key,
    read_store,
)
from agentmem.arms.files.scan import scan, top_terms
from agentmem.arms.rows import memory_frame
from agentmem.text import TERM_EXTRACTIONS, check_choice, query_terms

#: The orders between memories of equal score: newest first (``created_day`` desc, then
#: ``seq`` desc) or ``seq`` desc alone (the study's)
TIE_BREAKS = ("newest", "seq")

#: The family's logger (``agentmem.arms.files``).
_log = logging.getLogger(__package__)

#: File name of the store inside ``store_dir``.
JSONL_NAME = "memories.jsonl"


class FileJsonlArm(base.ArmBase):
    """Append-only JSONL memory file; every query re-reads and re-parses the file.

    Storage: ``store_dir/memories.jsonl``, one compact UTF-8 JSON object per memory with
    every memory column (memory_id, session_id, turn_no, seq, kind, body, fact_id,
    created_day, source, confidence, superseded_by, tokens, entity_ids, scope_id, and
    ``form`` / ``supersedes`` when present), written with plain buffered appends and no
    ``fsync`` (by :meth:`build` and :meth:`remember`).

    Scoring: ``score(m) = |{t in query_terms(q.text) : t in lower(m.body)}|`` (distinct
    terms, case-insensitive substring); memories with score 0 are dropped; order is
    score desc, then ``created_day`` desc, then ``seq`` desc (newest first); top ``k``.
    ``q.predicate`` and ``q.wants_count`` are ignored (``Result.count`` is always
    ``None``).

    Args:
        terms: the term extraction, ``"agentmem"`` or ``"study"``
            (:data:`agentmem.text.TERM_EXTRACTIONS`; the study's keeps repeated words,
            which then count twice).
        tie_break: ``"newest"`` or ``"seq"`` (``seq`` desc alone, the study's).

    Scope: applied while scanning, exactly. A scoped query also parses each line's
    ``scope_id`` and scores every line outside ``q.scope`` 0 (a line with no or a null
    ``scope_id`` is outside every scope), so only the scope's memories can be returned.
    """

    name: ClassVar[str] = "file-jsonl"
    prefix_stable: ClassVar[bool] = True
    family: ClassVar[str] = "file"
    capabilities: ClassVar[base.Capabilities] = base.Capabilities(text_access="scan")
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "re-read + polars read_ndjson of every line, then the polars term scan and top-k "
        "(a file has no engine: this scan is its retrieval)",
        "term extraction from the text and the Result",
    )

    study_choices: ClassVar[dict[str, dict[str, Any]]] = {
        "terms": {"terms": "study"},
        "ties": {"tie_break": "seq"},
    }

    def __init__(self, *, terms: str = "agentmem", tie_break: str = "newest") -> None:
        self.terms = check_choice("terms", terms, TERM_EXTRACTIONS)
        self.tie_break = check_choice("tie_break", tie_break, TIE_BREAKS)
        self._path: Path | None = None
        self._reported_unreadable = 0
        #: ids of the readable memories, valid while the file's identity/size/mtime is ``key``
        self._ids_key: tuple[int, ...] | None = None
        self._ids: set[str] = set()

    # ------------------------------------------------------------------ lifecycle
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
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
            raise base.ArmError(f"file-jsonl: cannot write store {path}: {exc}") from exc
        self._path = path
        return base.BuildStats(ingest_ms=ingest_ms, index_ms=0.0)

    def open(self, store_dir: Path) -> None:
        """Reopen ``store_dir/memories.jsonl``, parsing it once with the recall reader.

        Unreadable lines (docs/arms/files.md) are skipped; when there are any, one
        warning on the ``agentmem.arms.files`` logger names the file, the count and the
        first such line.

        Raises:
            ArmError: when the file is missing or cannot be read (names the path).
        """
        path = Path(store_dir) / JSONL_NAME
        if not path.is_file():
            raise base.ArmError(f"file-jsonl: store file {path} does not exist")
        store = read_store(path)
        self._path = path
        self._reported_unreadable = 0
        self._report_unreadable(store)

    def close(self) -> None:
        """Forget the store path (the file is never held open); safe to call twice."""
        self._path = None
        self._reported_unreadable = 0
        self._ids_key, self._ids = None, set()

    # ------------------------------------------------------------------ writes
    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Append one JSON line per memory to ``memories.jsonl`` (buffered, no fsync).

        The batch is validated by :func:`~agentmem.arms.base.prepare_memories` and every
        line serialised before anything is written. When the file does not end with a
        newline (a torn tail), one is written first. A row's ``supersedes`` list is kept
        in its line; :meth:`fetch` reads ``superseded_by`` of the older memories from it.
        The lines are visible to the next :meth:`query` (which re-reads the file) and
        handed to the OS when the call returns; they reach the disk when the kernel
        writes the page cache back (no ``fsync``, as in the study).

        Args:
            memories: the rows (:func:`~agentmem.arms.base.prepare_memories`).
            vectors: embeddings of the new ids (checked, not stored: the file holds none).

        Raises:
            ArmError: when the arm is not open, the batch is invalid, an id is already in
                the file, a superseded id is neither in the file nor in the batch, a value
                cannot be written as JSON (e.g. a NaN confidence), or the file cannot be
                read or written (nothing is appended then, except on a failing write).
        """
        path = self._require_open()
        batch = base.prepare_memories(memories, vectors, self.name)
        ids = batch.ids
        if not ids:
            return
        stored = self._stored_ids(path)
        dup = next((m for m in ids if m in stored), None)
        if dup is not None:
            raise base.ArmError(f"{self.name}: memory {dup!r} is already stored in {path}")
        batch_ids = set(ids)
        corrects: dict[str, list[str]] = {}
        for old, new in batch.supersessions:
            if old not in stored and old not in batch_ids:
                raise base.ArmError(
                    f"{self.name}: memory {new!r} supersedes {old!r}, which is not stored in {path}"
                )
            corrects.setdefault(new, []).append(old)
        lines: list[bytes] = []
        for row in batch.memories.rows(named=True):
            if row["memory_id"] in corrects:
                row[base.SUPERSEDES] = corrects[row["memory_id"]]
            try:
                text = json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                lines.append(text.encode("utf-8") + b"\n")
            except ValueError as exc:  # NaN/inf, a lone surrogate
                raise base.ArmError(
                    f"{self.name}: memory {row['memory_id']!r} cannot be written as JSON: {exc}"
                ) from None
        try:
            with path.open("a+b") as fh:
                size = fh.seek(0, os.SEEK_END)
                if size:
                    fh.seek(size - 1)
                    if fh.read(1) != b"\n":  # a torn tail: end it, keep the memory whole
                        lines[0] = b"\n" + lines[0]
                for line in lines:  # one buffered append per memory (no fsync)
                    fh.write(line)
                fh.flush()
                key = file_key(os.fstat(fh.fileno()))
        except OSError as exc:
            self._ids_key = None
            raise base.ArmError(f"{self.name}: cannot append to store {path}: {exc}") from exc
        seen = self._ids_key
        if seen is not None and seen[:3] == (key[0], key[1], size):  # nobody else appended
            self._ids.update(ids)
            self._ids_key = key
        else:
            self._ids_key = None

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Re-read the file and return the stored rows of ``memory_ids``.

        ``superseded_by`` of a memory is the last line whose ``supersedes`` list names it,
        else the value in its own line. ``form`` is the stored value (null when the line
        has none). Unreadable lines are skipped.

        Returns:
            The :data:`~agentmem.arms.base.MEMORY_SCHEMA` columns, one row per stored id
            asked, in the order asked.

        Raises:
            ArmError: when the arm is not open or the file cannot be read or parsed.
        """
        path = self._require_open()
        table = read_store(path, FETCH_SCHEMA).table
        links = (
            table.select(pl.col(base.SUPERSEDES).alias("old"), pl.col("memory_id").alias("new"))
            .explode("old")
            .drop_nulls("old")
            .unique("old", keep="last", maintain_order=True)
        )
        table = table.join(links, left_on="memory_id", right_on="old", how="left").with_columns(
            superseded_by=pl.coalesce("new", "superseded_by")
        )
        return memory_frame(table, memory_ids)

    def _stored_ids(self, path: Path) -> set[str]:
        """Ids of the readable memories in the file, re-read when the file has changed."""
        try:
            key = file_key(path.stat())
        except OSError as exc:
            raise base.ArmError(f"{self.name}: cannot read store {path}: {exc}") from exc
        if key != self._ids_key:
            self._ids = set(read_store(path).table.get_column("memory_id").to_list())
            self._ids_key = key
        return self._ids

    # ------------------------------------------------------------------ queries
    def query(self, q: base.Query, k: int) -> base.Result:
        """Re-read the whole file and return the top ``k`` memories by term overlap.

        Every call parses the whole file again
        (:func:`~agentmem.arms.files.reader.read_store`, the call :meth:`raw_query_call`
        times), lower-cases every body once and adds up one literal substring test per
        distinct term (terms are never interpreted as patterns); memories scoring 0 are
        dropped, the rest ordered by score desc, ``created_day`` desc, ``seq`` desc, file
        order (top ``k``). A scoped query keeps only lines whose ``scope_id`` equals
        ``q.scope``, tested in the same scan.

        Args:
            q: the query; only ``q.text`` and ``q.scope`` are used.
            k: maximum number of ids to return (``k <= 0`` returns none).

        Returns:
            Up to ``k`` memory ids, best first; ``count`` is always ``None``. Text with no
            search terms (empty, whitespace, punctuation) gives an empty result.

        Unreadable lines are skipped; a count larger than the one last reported (a line
        torn since :meth:`open`) is logged once.

        Raises:
            ArmError: when the arm is not open or the file is missing or cannot be read
                (names the path).
        """
        path = self._require_open()
        store = read_store(path, SCAN_SCHEMA if q.scope is None else SCOPED_SCAN_SCHEMA)
        self._report_unreadable(store)
        terms = query_terms(q.text or "", extraction=self.terms)
        return base.Result(memory_ids=top_terms(store.table, terms, k, q.scope, self.tie_break))

    def query_many(self, queries: Sequence[base.Query], k: int) -> list[base.Result]:
        """Each answer :meth:`query` gives, from one read of the file for all of them.

        An untimed pass (the external datasets' runs, the token-budget sweep) asks many
        questions of a file nobody writes meanwhile: it is parsed once
        (:func:`~agentmem.arms.files.reader.read_store`, with ``scope_id`` when a query is
        scoped), its bodies lower-cased once, and each query's terms counted over that
        table as :meth:`query` counts them over a read of its own.

        Raises:
            ArmError: as :meth:`query`.
        """
        path = self._require_open()
        if not queries:
            return []
        scoped = any(q.scope is not None for q in queries)
        store = read_store(path, SCOPED_SCAN_SCHEMA if scoped else SCAN_SCHEMA)
        self._report_unreadable(store)
        body = store.table.get_column("body").str.to_lowercase()
        return [
            base.Result(
                memory_ids=top_terms(
                    store.table,
                    query_terms(q.text or "", extraction=self.terms),
                    k,
                    q.scope,
                    self.tie_break,
                    body,
                )
            )
            for q in queries
        ]

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], list[str]]:
        """Return a zero-argument function making the file scan :meth:`query` makes.

        A file has no engine: its "driver call" is the polars read-and-scan itself
        (:func:`~agentmem.arms.files.scan.scan`: :func:`polars.read_ndjson` of the whole
        file, then the vectorised term count, the scope test of a scoped query and
        top-``k``), with the terms already extracted. The harness-overhead benchmark
        (:mod:`agentmem.bench`) times it against :meth:`query`, so the ratio is what
        :meth:`query` adds: term extraction and the :class:`Result`.

        Returns:
            A function returning the top-``k`` memory ids.

        Raises:
            ArmError: when the arm is not open (the returned function raises ArmError
                when the file cannot be read).
        """
        path = self._require_open()
        terms = query_terms(q.text or "", extraction=self.terms)
        return functools.partial(scan, path, terms, k, q.scope, self.tie_break)

    def raw_ids(self, raw: list[str], k: int) -> list[str]:
        """The ids :meth:`query` returns for the bare scan's output: the first ``k``."""
        return list(raw)[: max(int(k), 0)]

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Describe the scan ``query`` performs for ``q`` (a file has no query planner)."""
        path = self._require_open()
        terms = query_terms(q.text or "", extraction=self.terms)
        size = path.stat().st_size if path.exists() else 0
        pred = (
            f"predicate {q.predicate.field} {q.predicate.op} {q.predicate.value!r} IGNORED "
            "(file has no predicate support)"
            if q.predicate is not None
            else "no predicate"
        )
        order = "seq DESC" if self.tie_break == "seq" else "created_day DESC, seq DESC"
        cols = "memory_id, body, created_day, seq" + ("" if q.scope is None else ", scope_id")
        scope = (
            "no scope"
            if q.scope is None
            else f"scope_id = {q.scope!r} tested on every line in the scan (others score 0)"
        )
        return (
            f"FULL SCAN {path} ({size} bytes): read and json-parse every line "
            f"(polars read_ndjson, columns {cols}); "
            f"score = number of terms {terms} contained case-insensitively in body "
            f"(lower-cased body, one literal substring test per term); {scope}; "
            f"drop score 0; sort score DESC, {order}, file order; take k; "
            f"{pred}; count not supported"
        )

    def storage(self) -> base.StorageStats:
        """Return the size of ``memories.jsonl`` (``source="file sizes"``), re-read now.

        ``objects`` splits the file into the bytes of readable lines (``memories.jsonl``)
        and of unreadable ones (``"unreadable lines"``, present only when there are any);
        ``counts`` holds ``memories`` and ``unreadable_lines`` (always present).

        Raises:
            ArmError: when the arm is not open or the file cannot be read.
        """
        path = self._require_open()
        store = read_store(path)
        objects = {JSONL_NAME: store.size - store.unreadable_bytes}
        if store.unreadable_lines:
            objects["unreadable lines"] = store.unreadable_bytes
        return base.StorageStats(
            total_bytes=store.size,
            objects=objects,
            source="file sizes",
            counts={"memories": store.table.height, "unreadable_lines": store.unreadable_lines},
        )

    def integrity_check(self) -> tuple[str, list[str]]:
        """Every line of ``memories.jsonl`` parses as a memory (re-read now).

        Raises:
            ArmError: when the arm is not open or the file cannot be read.
        """
        store = read_store(self._require_open())
        bad = store.unreadable_lines
        return "every line parses", [
            f"{bad} unreadable lines ({store.unreadable_bytes} bytes)"
        ] if bad else []

    def raw_ingest(self) -> base.RawIngest:
        """The raw bulk path: every memory serialised, then one write of all lines."""
        return base.RawIngest("jsonl", beyond="one buffered write call per memory")

    # ------------------------------------------------------------------ helpers
    def _require_open(self) -> Path:
        if self._path is None:
            raise base.ArmError("file-jsonl: arm is not open (call build() or open() first)")
        return self._path

    def _report_unreadable(self, store: StoreRead) -> None:
        """Log one warning when the store has more unreadable lines than last reported."""
        if store.unreadable_lines > self._reported_unreadable:
            _log.warning(
                "file-jsonl: %s: skipped %d unreadable line(s) (first: line %d); "
                "answering from the %d readable memories",
                self._path,
                store.unreadable_lines,
                store.first_unreadable,
                store.table.height,
            )
        self._reported_unreadable = store.unreadable_lines


def _dumps(row: dict[str, Any]) -> str:
    """Serialise one memory row as compact UTF-8 JSON (no ASCII escaping)."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))
