"""The "agentmem-memory" dataset format (version 1): its files, keys, errors and records.

The format is specified in ``docs/DATASETS.md``; :mod:`agentmem.external.format` reads,
validates and writes it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "agentmem-memory"
FORMAT_VERSION = 1
#: the files of a dataset directory (other files beside them are ignored)
DATASET_FILES = ("dataset.json", "corpus.jsonl", "queries.jsonl", "qrels.tsv")
KINDS = ("episodic", "semantic", "procedural")
QRELS_HEADER = ("query-id", "corpus-id", "score")
#: largest qrels score (grades are stored as Int8)
MAX_SCORE = 127
DEFAULT_CATEGORY = "all"

DATASET_KEYS = (
    "format",
    "version",
    "name",
    "unit",
    "description",
    "license",
    "source",
    "categories",
)
CORPUS_KEYS = (
    "_id",
    "text",
    "session",
    "day",
    "scope",
    "kind",
    "source",
    "turn",
    "evidence",
    "title",
    "metadata",
)
QUERY_KEYS = ("_id", "text", "category", "scope", "evidence", "metadata")

#: referential problems: reported in ``issues.csv`` and the manifest, never fatal
ISSUE_KINDS = {
    "unknown-memory": "a qrel names a corpus-id that is not in corpus.jsonl (qrel dropped)",
    "unknown-query": "a qrel names a query-id that is not in queries.jsonl (qrel dropped)",
    "empty-scope": "a query's scope holds no memory (scoped retrieval returns nothing)",
    "out-of-scope": "a relevant memory is outside its query's scope (unreachable when scoped)",
    "uncovered-evidence": "no memory in the query's scope covers an evidence unit it needs",
    "no-qrels": "a query with evidence but no relevant memory (scored at evidence level only)",
    "no-relevant": "a query with no relevant memory and no evidence (query skipped)",
}
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: characters no string of a dataset may hold: NUL (PostgreSQL text cannot hold it) and
#: lone surrogates (valid JSON escapes such as ``"\ud800"`` that UTF-8 cannot encode)
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
NUL_PROBLEM = "expected no NUL character (U+0000; PostgreSQL text cannot hold it)"
SURROGATE_PROBLEM = "expected no lone surrogate (U+D800..U+DFFF; not encodable as UTF-8)"


class DatasetError(ValueError):
    """A structural error in a dataset; the message is ``<file>:<line>: <field>: <problem>``.

    Attributes:
        path: the file (or directory) at fault.
        line: 1-based line number, or ``None`` when the problem is not on one line.
        field: the field (key or column) at fault, or ``None``.
    """

    def __init__(self, path: Path, line: int | None, field: str | None, problem: str) -> None:
        self.path = Path(path)
        self.line = line
        self.field = field
        where = str(path) if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


@dataclass(frozen=True)
class Issue:
    """A referential problem in a dataset: one row of ``issues.csv``.

    Attributes:
        file: the file the problem is in (``qrels.tsv``, ``queries.jsonl``).
        line: 1-based line of the offending row.
        kind: one of :data:`ISSUE_KINDS`.
        id: the query or memory id concerned.
        detail: a readable explanation.
    """

    file: str
    line: int
    kind: str
    id: str
    detail: str


@dataclass
class Dataset:
    """A dataset read and validated by :func:`read_dataset`.

    Attributes:
        path: the dataset directory.
        meta: ``dataset.json`` as read (``unit``, ``categories`` etc. only when given).
        memories: one dict per corpus line, defaults filled in: ``_id``, ``text``,
            ``session``, ``day``, ``scope`` (str or None), ``kind``, ``source``, ``turn``,
            ``evidence`` (list[str]), ``line`` (1-based).
        queries: the queries kept (file order), each ``_id``, ``text``, ``category``,
            ``scope``, ``evidence`` (the evidence units the answer needs: as given, or the
            union over its relevant memories in qrels order), ``evidence_given`` (bool),
            ``line``.
        qrels: ``(query_id, memory_id, score, line)`` for each qrels row naming a kept
            query and a known memory, score 0 included.
        issues: the referential problems found (:class:`Issue`), in file order.
        skipped_queries: ids of queries dropped for having no relevant memory and no
            evidence (each also an ``Issue`` of kind ``no-relevant``).
    """

    path: Path
    meta: dict[str, Any]
    memories: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    qrels: list[tuple[str, str, int, int]]
    issues: list[Issue] = field(default_factory=list)
    skipped_queries: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The dataset's name from ``dataset.json``."""
        return str(self.meta["name"])

    @property
    def categories(self) -> list[str]:
        """Categories of the kept queries: ``dataset.json`` order, else first appearance."""
        present = list(dict.fromkeys(q["category"] for q in self.queries))
        declared = self.meta.get("categories")
        if declared:
            return [c for c in declared if c in present]
        return present

    def issue_counts(self) -> dict[str, int]:
        """Number of issues by kind, every kind of :data:`ISSUE_KINDS` listed (0 if none)."""
        c = Counter(i.kind for i in self.issues)
        return {k: int(c.get(k, 0)) for k in ISSUE_KINDS}
