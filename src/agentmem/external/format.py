"""The "agentmem-memory" dataset format (version 1): reading, validating and writing it.

A dataset is a directory of four files (full specification: ``docs/DATASETS.md``):
``dataset.json`` (name, categories), ``corpus.jsonl`` (one memory a line: BEIR's ``_id`` and
``text`` plus the memory columns ``session``, ``day``, ``scope``, ``kind``, ``source``,
``turn``, ``evidence``), ``queries.jsonl`` (``_id``, ``text``, ``category``, ``scope``,
``evidence``) and ``qrels.tsv`` (BEIR: ``query-id``, ``corpus-id``, ``score``).

Structural errors (bad JSON, a missing or mistyped field, a duplicate id, a bad header,
a non-integer score, a NUL character or lone surrogate in any string) stop reading with
:class:`DatasetError`, whose message names the file, the 1-based line and the field.
Referential problems (a qrel naming an unknown memory or query, a query whose scope holds
no memory, ...) are collected as :class:`Issue` rows and reported, never silently dropped.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmem.io import write_text

log = logging.getLogger(__name__)

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
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: characters no string of a dataset may hold: NUL (PostgreSQL text cannot hold it) and
#: lone surrogates (valid JSON escapes such as ``"\ud800"`` that UTF-8 cannot encode)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_NUL_PROBLEM = "expected no NUL character (U+0000; PostgreSQL text cannot hold it)"
_SURROGATE_PROBLEM = "expected no lone surrogate (U+D800..U+DFFF; not encodable as UTF-8)"


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


# ------------------------------------------------------------------ reading


def _printable(text: str) -> str:
    r"""``text`` with each NUL and lone surrogate written as its JSON escape (``\u0000``)."""
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _got(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = _printable(text)
    return text if len(text) <= 60 else text[:57] + "..."


def _excerpt(text: str, at: int) -> str:
    """``text`` as :func:`_got` shows it, from at most 20 characters before index ``at``."""
    start = max(0, at - 20)
    return ("..." if start else "") + _got(text[start:])


def _strings(value: Any) -> Iterator[str]:
    """Every string of a parsed JSON value: itself, or the keys and values nested in it."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)


def _check_chars(path: Path, no: int | None, key: str, value: Any) -> None:
    """Refuse a character no arm can store in any string of ``value`` (field ``key``).

    Raises:
        DatasetError: naming ``path``, line ``no`` and ``key``, showing where the character is.
    """
    for text in _strings(value):
        bad = _UNSTORABLE.search(text)
        if bad:
            problem = _NUL_PROBLEM if bad.group() == "\x00" else _SURROGATE_PROBLEM
            raise DatasetError(path, no, key, f"{problem}, got {_excerpt(text, bad.start())}")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(1-based line number, text)`` of each non-blank line of a UTF-8 file."""
    if not path.is_file():
        raise DatasetError(
            path, None, None, "missing (a dataset needs " + ", ".join(DATASET_FILES) + ")"
        )
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for no, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                path, no, None, f"not UTF-8 ({exc.reason} at byte {exc.start})"
            ) from None
        if text.strip():
            yield no, text.rstrip("\r")


def _json_lines(path: Path, allowed: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for no, text in _lines(path):
        try:
            obj = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        except ValueError as exc:
            raise DatasetError(path, no, None, f"not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise DatasetError(path, no, None, f"expected a JSON object, got {_got(obj)}")
        _check_keys(path, no, obj, allowed)
        for key, value in obj.items():
            _check_chars(path, no, key, value)
        yield no, obj


def _check_keys(path: Path, no: int | None, obj: Mapping[str, Any], allowed: Sequence[str]) -> None:
    for key in obj:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DatasetError(
                path, no, _printable(key), f"unknown key (allowed: {', '.join(allowed)}){hint}"
            )


def _str(
    path: Path,
    no: int | None,
    obj: Mapping[str, Any],
    key: str,
    *,
    required: bool = False,
    default: str | None = None,
    empty_ok: bool = False,
    null_ok: bool = False,
) -> str | None:
    if key not in obj:
        if required:
            raise DatasetError(path, no, key, "missing (required)")
        return default
    v = obj[key]
    if v is None and null_ok:
        return None
    kind = "a string" + ("" if empty_ok else " (non-empty)") + (" or null" if null_ok else "")
    if not isinstance(v, str) or (not empty_ok and not v.strip()):
        raise DatasetError(path, no, key, f"expected {kind}, got {_got(v)}")
    return v


def _int(
    path: Path,
    no: int | None,
    obj: Mapping[str, Any],
    key: str,
    *,
    required: bool = False,
    default: int | None = None,
) -> int | None:
    if key not in obj:
        if required:
            raise DatasetError(path, no, key, "missing (required)")
        return default
    v = obj[key]
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise DatasetError(path, no, key, f"expected an integer >= 0, got {_got(v)}")
    return v


def _str_list(
    path: Path, no: int | None, obj: Mapping[str, Any], key: str, *, empty_ok: bool
) -> list[str] | None:
    if key not in obj:
        return None
    v = obj[key]
    what = "a list of non-empty strings" + ("" if empty_ok else " (at least one)")
    if (
        not isinstance(v, list)
        or not all(isinstance(e, str) and e.strip() for e in v)
        or (not v and not empty_ok)
    ):
        raise DatasetError(path, no, key, f"expected {what}, got {_got(v)}")
    seen: set[str] = set()
    for e in v:
        if e in seen:
            raise DatasetError(path, no, key, f"{_got(e)} is listed twice")
        seen.add(e)
    return list(v)


def _id(path: Path, no: int, obj: Mapping[str, Any]) -> str:
    v = str(_str(path, no, obj, "_id", required=True))
    if v != v.strip() or "\t" in v or "\n" in v or "\r" in v:
        raise DatasetError(
            path, no, "_id", f"expected no tab, line break or surrounding space, got {_got(v)}"
        )
    return v


def _key_line(text: str, key: str) -> int:
    """1-based line of the first mention of ``key`` (as written, or JSON-escaped), else 1."""
    spellings = (f'"{key}"', json.dumps(key))
    for no, line in enumerate(text.splitlines(), start=1):
        if any(k in line for k in spellings):
            return no
    return 1


def read_meta(path: str | Path) -> dict[str, Any]:
    """Read and check ``dataset.json`` of a dataset directory.

    Returns:
        The object as read: ``format``, ``version``, ``name`` and any of ``unit``,
        ``description``, ``license``, ``source``, ``categories`` that it gives.

    Raises:
        DatasetError: the directory or file is missing, the JSON is bad, a key is unknown
            or a value has the wrong type (``format`` must be ``"agentmem-memory"``,
            ``version`` 1, ``name`` a file-name-safe string, ``categories`` unique names),
            or a string holds a NUL character or a lone surrogate.
    """
    d = Path(path)
    if not d.is_dir():
        raise DatasetError(d, None, None, "not a dataset directory (no such directory)")
    p = d / "dataset.json"
    if not p.is_file():
        raise DatasetError(
            p, None, None, "missing (a dataset needs " + ", ".join(DATASET_FILES) + ")"
        )
    try:
        text = p.read_text(encoding="utf-8-sig")
        meta = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except UnicodeDecodeError as exc:
        raise DatasetError(p, None, None, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise DatasetError(p, getattr(exc, "lineno", 1), None, f"not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise DatasetError(p, 1, None, f"expected a JSON object, got {_got(meta)}")
    for key in meta:
        if key not in DATASET_KEYS:
            _check_keys(p, _key_line(text, key), {key: None}, DATASET_KEYS)

    def at(key: str) -> int | None:
        return _key_line(text, key) if key in meta else 1

    for key, value in meta.items():
        _check_chars(p, at(key), key, value)

    if meta.get("format") != FORMAT:
        raise DatasetError(
            p, at("format"), "format", f"expected {_got(FORMAT)}, got {_got(meta.get('format'))}"
        )
    if "version" not in meta:
        raise DatasetError(p, 1, "version", "missing (required)")
    if meta["version"] != FORMAT_VERSION or isinstance(meta["version"], bool):
        raise DatasetError(
            p, at("version"), "version", f"expected {FORMAT_VERSION}, got {_got(meta['version'])}"
        )
    name = _str(p, at("name"), meta, "name", required=True)
    if not _NAME.fullmatch(str(name)):
        raise DatasetError(
            p,
            at("name"),
            "name",
            f"expected letters, digits, '.', '_' or '-' (a file name), got {_got(name)}",
        )
    for key in ("unit", "description", "license", "source"):
        _str(p, at(key), meta, key, empty_ok=key != "unit")
    if "categories" in meta:
        cats = _str_list(p, at("categories"), meta, "categories", empty_ok=False) or []
        if DEFAULT_CATEGORY in cats:
            raise DatasetError(
                p,
                at("categories"),
                "categories",
                f"{_got(DEFAULT_CATEGORY)} is reserved (the score row over every query)",
            )
    return meta


def read_dataset(path: str | Path) -> Dataset:
    """Read and validate a dataset directory in the "agentmem-memory" format.

    Args:
        path: the directory holding ``dataset.json``, ``corpus.jsonl``, ``queries.jsonl``
            and ``qrels.tsv``.

    Returns:
        The :class:`Dataset`, referential problems in :attr:`Dataset.issues` (not logged;
        :func:`validate_dataset` logs them).

    Raises:
        DatasetError: on the first structural error, naming file, line and field.
    """
    d = Path(path)
    meta = read_meta(d)
    categories = meta.get("categories")

    # corpus.jsonl
    cp = d / "corpus.jsonl"
    memories: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    turns_in: Counter[str] = Counter()
    session_scope: dict[str, tuple[str | None, int]] = {}
    for no, obj in _json_lines(cp, CORPUS_KEYS):
        mid = _id(cp, no, obj)
        if mid in first_line:
            raise DatasetError(
                cp, no, "_id", f"duplicate {_got(mid)} (first on line {first_line[mid]})"
            )
        first_line[str(mid)] = no
        _str(cp, no, obj, "text", required=True)
        session = str(_str(cp, no, obj, "session", required=True))
        day = _int(cp, no, obj, "day", required=True)
        kind = obj.get("kind", "episodic")
        if kind not in KINDS:
            raise DatasetError(
                cp, no, "kind", f"expected one of {', '.join(KINDS)}, got {_got(kind)}"
            )
        turn = _int(cp, no, obj, "turn", default=turns_in[session])
        turns_in[session] += 1
        evidence = _str_list(cp, no, obj, "evidence", empty_ok=True)
        scope = _str(cp, no, obj, "scope", null_ok=True)
        first = session_scope.setdefault(session, (scope, no))
        if first[0] != scope:
            raise DatasetError(
                cp,
                no,
                "scope",
                f"{_got(scope)}, but session {_got(session)} has scope {_got(first[0])} "
                f"(line {first[1]}); a session belongs to one scope",
            )
        if "title" in obj:
            _str(cp, no, obj, "title", empty_ok=True)
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise DatasetError(
                cp, no, "metadata", f"expected a JSON object, got {_got(obj['metadata'])}"
            )
        memories.append(
            {
                "_id": mid,
                "text": obj["text"],
                "session": session,
                "day": day,
                "scope": scope,
                "kind": kind,
                "source": _str(cp, no, obj, "source", default="", empty_ok=True),
                "turn": turn,
                "evidence": [mid] if evidence is None else evidence,
                "line": no,
            }
        )

    # queries.jsonl
    qp = d / "queries.jsonl"
    queries: list[dict[str, Any]] = []
    q_line: dict[str, int] = {}
    for no, obj in _json_lines(qp, QUERY_KEYS):
        qid = _id(qp, no, obj)
        if qid in q_line:
            raise DatasetError(
                qp, no, "_id", f"duplicate {_got(qid)} (first on line {q_line[qid]})"
            )
        if qid in first_line:
            raise DatasetError(
                qp,
                no,
                "_id",
                f"{_got(qid)} is also a memory id (corpus.jsonl line {first_line[qid]}); "
                "queries and memories share one id space",
            )
        q_line[qid] = no
        _str(qp, no, obj, "text", required=True)
        if categories and "category" not in obj:
            raise DatasetError(
                qp,
                no,
                "category",
                f"missing (required: dataset.json lists categories {', '.join(categories)})",
            )
        cat = str(_str(qp, no, obj, "category", default=DEFAULT_CATEGORY))
        if categories and cat not in categories:
            raise DatasetError(
                qp,
                no,
                "category",
                f"{_got(cat)} is not one of the categories of dataset.json "
                f"({', '.join(categories)})",
            )
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise DatasetError(
                qp, no, "metadata", f"expected a JSON object, got {_got(obj['metadata'])}"
            )
        queries.append(
            {
                "_id": qid,
                "text": obj["text"],
                "category": cat,
                "scope": _str(qp, no, obj, "scope", null_ok=True),
                "evidence": _str_list(qp, no, obj, "evidence", empty_ok=False),
                "line": no,
            }
        )

    # qrels.tsv
    rp = d / "qrels.tsv"
    rows: list[tuple[str, str, int, int]] = []
    issues: list[Issue] = []
    seen_pair: dict[tuple[str, str], int] = {}
    header_seen = False
    for no, text in _lines(rp):
        cols = text.split("\t")
        if not header_seen:
            header_seen = True
            if tuple(c.strip() for c in cols) != QRELS_HEADER:
                raise DatasetError(
                    rp,
                    no,
                    "header",
                    f"expected {_got(chr(9).join(QRELS_HEADER))}, got {_got(text)}",
                )
            continue
        if len(cols) != 3:
            raise DatasetError(
                rp, no, None, f"expected 3 tab-separated columns, got {len(cols)}: {_got(text)}"
            )
        for name, col in zip(QRELS_HEADER, cols, strict=True):
            _check_chars(rp, no, name, col)
        qid, mid, score_text = (c.strip() for c in cols)
        for name, v in (("query-id", qid), ("corpus-id", mid)):
            if not v:
                raise DatasetError(rp, no, name, "empty")
        try:
            score = int(score_text)
        except ValueError:
            score = -1
        if score < 0 or score > MAX_SCORE:
            raise DatasetError(
                rp, no, "score", f"expected an integer 0..{MAX_SCORE}, got {_got(score_text)}"
            )
        if (qid, mid) in seen_pair:
            raise DatasetError(
                rp,
                no,
                "corpus-id",
                f"duplicate pair {qid} / {mid} (first on line {seen_pair[qid, mid]})",
            )
        seen_pair[qid, mid] = no
        if qid not in q_line:
            issues.append(
                Issue(
                    "qrels.tsv", no, "unknown-query", qid, f"query-id {qid} is not in queries.jsonl"
                )
            )
        elif mid not in first_line:
            issues.append(
                Issue(
                    "qrels.tsv",
                    no,
                    "unknown-memory",
                    mid,
                    f"corpus-id {mid} (query {qid}) is not in corpus.jsonl",
                )
            )
        else:
            rows.append((qid, mid, score, no))
    if not header_seen:
        raise DatasetError(rp, 1, "header", f"missing: expected {_got(chr(9).join(QRELS_HEADER))}")

    return _resolve(d, meta, memories, queries, rows, issues)


def _resolve(
    d: Path,
    meta: dict[str, Any],
    memories: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    rows: list[tuple[str, str, int, int]],
    issues: list[Issue],
) -> Dataset:
    """Each query's evidence and the referential issues of queries and qrels."""
    by_id = {m["_id"]: m for m in memories}
    scopes: dict[str | None, set[str]] = {}
    for m in memories:
        for unit in m["evidence"]:
            scopes.setdefault(m["scope"], set()).add(unit)
    all_units = set().union(*scopes.values()) if scopes else set()
    scope_has_memory = {m["scope"] for m in memories}
    relevant: dict[str, list[tuple[str, int]]] = {}
    for qid, mid, score, no in rows:
        if score > 0:
            relevant.setdefault(qid, []).append((mid, no))
    kept: list[dict[str, Any]] = []
    skipped: list[str] = []
    q_issues: list[Issue] = []
    for q in queries:
        qid, scope, no = q["_id"], q["scope"], q["line"]
        rel = relevant.get(qid, [])
        if scope is not None and scope not in scope_has_memory:
            q_issues.append(
                Issue("queries.jsonl", no, "empty-scope", qid, f"no memory has scope {scope}")
            )
        if scope is not None:
            for mid, rno in rel:
                if by_id[mid]["scope"] != scope:
                    issues.append(
                        Issue(
                            "qrels.tsv",
                            rno,
                            "out-of-scope",
                            mid,
                            f"relevant memory {mid} has scope {by_id[mid]['scope']}, "
                            f"query {qid} has scope {scope}",
                        )
                    )
        given = q["evidence"] is not None
        if given:
            evidence = list(q["evidence"])
        else:
            evidence = list(dict.fromkeys(u for mid, _ in rel for u in by_id[mid]["evidence"]))
        if not rel and not evidence:
            q_issues.append(
                Issue(
                    "queries.jsonl",
                    no,
                    "no-relevant",
                    qid,
                    "no qrel with score > 0 to a known memory and no evidence: skipped",
                )
            )
            skipped.append(qid)
            continue
        if not rel:
            q_issues.append(
                Issue(
                    "queries.jsonl",
                    no,
                    "no-qrels",
                    qid,
                    "no qrel with score > 0 to a known memory: scored at evidence level only",
                )
            )
        reachable = all_units if scope is None else scopes.get(scope, set())
        missing = [u for u in evidence if u not in reachable]
        if missing:
            where = "the corpus" if scope is None else f"scope {scope}"
            q_issues.append(
                Issue(
                    "queries.jsonl",
                    no,
                    "uncovered-evidence",
                    qid,
                    f"{len(missing)} of {len(evidence)} evidence units covered by no memory "
                    f"of {where}: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}",
                )
            )
        kept.append(q | {"evidence": evidence, "evidence_given": given})
    skipped_set = set(skipped)
    qrels = [r for r in rows if r[0] not in skipped_set]
    all_issues = sorted(q_issues + issues, key=lambda i: (DATASET_FILES.index(i.file), i.line))
    return Dataset(d, meta, memories, kept, qrels, all_issues, skipped)


def issue_summary(ds: Dataset) -> str:
    """One line: the dataset, its counts and its issues by kind (only the kinds present)."""
    counts = {k: n for k, n in ds.issue_counts().items() if n}
    text = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no issues"
    return (
        f"dataset {ds.name} ({ds.path}): {len(ds.memories)} memories, {len(ds.queries)} "
        f"queries, {len(ds.qrels)} qrels; {text}"
    )


def validate_dataset(path: str | Path) -> Dataset:
    """Validate a dataset directory; log one warning line when it has referential issues.

    Args:
        path: the dataset directory.

    Returns:
        The :class:`Dataset` (as :func:`read_dataset`).

    Raises:
        DatasetError: on the first structural error (file, line and field in the message).
    """
    ds = read_dataset(path)
    if ds.issues:
        log.warning("%s (details: issues.csv of the prepared corpus)", issue_summary(ds))
    return ds


# ------------------------------------------------------------------ writing


def write_dataset(
    out_dir: str | Path,
    meta: Mapping[str, Any],
    memories: Iterable[Mapping[str, Any]],
    queries: Iterable[Mapping[str, Any]],
    qrels: Iterable[tuple[str, str, int]],
) -> Path:
    """Write a dataset directory in the "agentmem-memory" format (each file atomically).

    Args:
        out_dir: the directory to write (created).
        meta: ``dataset.json`` without ``format`` and ``version`` (added): ``name`` and any
            of ``unit``, ``description``, ``license``, ``source``, ``categories``.
        memories: corpus records (``_id``, ``text``, ``session``, ``day`` and optional
            memory fields), written in the order given.
        queries: query records (``_id``, ``text`` and optional fields).
        qrels: ``(query_id, memory_id, score)`` rows.

    Returns:
        ``out_dir`` as a Path. The files are not validated here; :func:`read_dataset` does.

    Raises:
        DatasetError: a string holds a character no UTF-8 file can (a lone surrogate) or
            no arm can store (NUL), naming the file and line the record would have had.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    head = {"format": FORMAT, "version": FORMAT_VERSION, **meta}
    write_text(out / "dataset.json", json.dumps(head, indent=2, ensure_ascii=False) + "\n")

    def jsonl(name: str, rows: Iterable[Mapping[str, Any]]) -> str:
        lines = []
        for no, row in enumerate(rows, start=1):
            for key, value in row.items():
                _check_chars(out / name, no, key, value)
            lines.append(json.dumps(dict(row), ensure_ascii=False) + "\n")
        return "".join(lines)

    write_text(out / "corpus.jsonl", jsonl("corpus.jsonl", memories))
    write_text(out / "queries.jsonl", jsonl("queries.jsonl", queries))
    lines = ["\t".join(QRELS_HEADER)] + [f"{q}\t{m}\t{int(s)}" for q, m, s in qrels]
    write_text(out / "qrels.tsv", "\n".join(lines) + "\n")
    return out
