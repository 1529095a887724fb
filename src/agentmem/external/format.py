"""The "agentmem-memory" dataset format (version 1): reading, validating and writing it.

Its files, keys and records are in :mod:`agentmem.external.schema`, the line-level
readers in :mod:`agentmem.external.reading`.

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

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentmem.external.reading import (
    check_chars,
    check_keys,
    file_lines,
    got,
    id_field,
    int_field,
    json_lines,
    key_line,
    no_duplicate_keys,
    str_field,
    str_list_field,
)
from agentmem.external.schema import (
    CORPUS_KEYS,
    DATASET_FILES,
    DATASET_KEYS,
    DEFAULT_CATEGORY,
    FORMAT,
    FORMAT_VERSION,
    KINDS,
    MAX_SCORE,
    NAME_PATTERN,
    QRELS_HEADER,
    QUERY_KEYS,
    Dataset,
    DatasetError,
    Issue,
)
from agentmem.io import write_text

log = logging.getLogger(__name__)


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
        meta = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except UnicodeDecodeError as exc:
        raise DatasetError(p, None, None, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise DatasetError(p, getattr(exc, "lineno", 1), None, f"not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise DatasetError(p, 1, None, f"expected a JSON object, got {got(meta)}")
    for key in meta:
        if key not in DATASET_KEYS:
            check_keys(p, key_line(text, key), {key: None}, DATASET_KEYS)

    def at(key: str) -> int | None:
        return key_line(text, key) if key in meta else 1

    for key, value in meta.items():
        check_chars(p, at(key), key, value)

    if meta.get("format") != FORMAT:
        raise DatasetError(
            p, at("format"), "format", f"expected {got(FORMAT)}, got {got(meta.get('format'))}"
        )
    if "version" not in meta:
        raise DatasetError(p, 1, "version", "missing (required)")
    if meta["version"] != FORMAT_VERSION or isinstance(meta["version"], bool):
        raise DatasetError(
            p, at("version"), "version", f"expected {FORMAT_VERSION}, got {got(meta['version'])}"
        )
    name = str_field(p, at("name"), meta, "name", required=True)
    if not NAME_PATTERN.fullmatch(str(name)):
        raise DatasetError(
            p,
            at("name"),
            "name",
            f"expected letters, digits, '.', '_' or '-' (a file name), got {got(name)}",
        )
    for key in ("unit", "description", "license", "source"):
        str_field(p, at(key), meta, key, empty_ok=key != "unit")
    if "categories" in meta:
        cats = str_list_field(p, at("categories"), meta, "categories", empty_ok=False) or []
        if DEFAULT_CATEGORY in cats:
            raise DatasetError(
                p,
                at("categories"),
                "categories",
                f"{got(DEFAULT_CATEGORY)} is reserved (the score row over every query)",
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
    for no, obj in json_lines(cp, CORPUS_KEYS):
        mid = id_field(cp, no, obj)
        if mid in first_line:
            raise DatasetError(
                cp, no, "_id", f"duplicate {got(mid)} (first on line {first_line[mid]})"
            )
        first_line[str(mid)] = no
        str_field(cp, no, obj, "text", required=True)
        session = str(str_field(cp, no, obj, "session", required=True))
        day = int_field(cp, no, obj, "day", required=True)
        kind = obj.get("kind", "episodic")
        if kind not in KINDS:
            raise DatasetError(
                cp, no, "kind", f"expected one of {', '.join(KINDS)}, got {got(kind)}"
            )
        turn = int_field(cp, no, obj, "turn", default=turns_in[session])
        turns_in[session] += 1
        evidence = str_list_field(cp, no, obj, "evidence", empty_ok=True)
        scope = str_field(cp, no, obj, "scope", null_ok=True)
        first = session_scope.setdefault(session, (scope, no))
        if first[0] != scope:
            raise DatasetError(
                cp,
                no,
                "scope",
                f"{got(scope)}, but session {got(session)} has scope {got(first[0])} "
                f"(line {first[1]}); a session belongs to one scope",
            )
        if "title" in obj:
            str_field(cp, no, obj, "title", empty_ok=True)
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise DatasetError(
                cp, no, "metadata", f"expected a JSON object, got {got(obj['metadata'])}"
            )
        memories.append(
            {
                "_id": mid,
                "text": obj["text"],
                "session": session,
                "day": day,
                "scope": scope,
                "kind": kind,
                "source": str_field(cp, no, obj, "source", default="", empty_ok=True),
                "turn": turn,
                "evidence": [mid] if evidence is None else evidence,
                "line": no,
            }
        )

    # queries.jsonl
    qp = d / "queries.jsonl"
    queries: list[dict[str, Any]] = []
    q_line: dict[str, int] = {}
    for no, obj in json_lines(qp, QUERY_KEYS):
        qid = id_field(qp, no, obj)
        if qid in q_line:
            raise DatasetError(qp, no, "_id", f"duplicate {got(qid)} (first on line {q_line[qid]})")
        if qid in first_line:
            raise DatasetError(
                qp,
                no,
                "_id",
                f"{got(qid)} is also a memory id (corpus.jsonl line {first_line[qid]}); "
                "queries and memories share one id space",
            )
        q_line[qid] = no
        str_field(qp, no, obj, "text", required=True)
        if categories and "category" not in obj:
            raise DatasetError(
                qp,
                no,
                "category",
                f"missing (required: dataset.json lists categories {', '.join(categories)})",
            )
        cat = str(str_field(qp, no, obj, "category", default=DEFAULT_CATEGORY))
        if categories and cat not in categories:
            raise DatasetError(
                qp,
                no,
                "category",
                f"{got(cat)} is not one of the categories of dataset.json "
                f"({', '.join(categories)})",
            )
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise DatasetError(
                qp, no, "metadata", f"expected a JSON object, got {got(obj['metadata'])}"
            )
        queries.append(
            {
                "_id": qid,
                "text": obj["text"],
                "category": cat,
                "scope": str_field(qp, no, obj, "scope", null_ok=True),
                "evidence": str_list_field(qp, no, obj, "evidence", empty_ok=False),
                "line": no,
            }
        )

    # qrels.tsv
    rp = d / "qrels.tsv"
    rows: list[tuple[str, str, int, int]] = []
    issues: list[Issue] = []
    seen_pair: dict[tuple[str, str], int] = {}
    header_seen = False
    for no, text in file_lines(rp):
        cols = text.split("\t")
        if not header_seen:
            header_seen = True
            if tuple(c.strip() for c in cols) != QRELS_HEADER:
                raise DatasetError(
                    rp,
                    no,
                    "header",
                    f"expected {got(chr(9).join(QRELS_HEADER))}, got {got(text)}",
                )
            continue
        if len(cols) != 3:
            raise DatasetError(
                rp, no, None, f"expected 3 tab-separated columns, got {len(cols)}: {got(text)}"
            )
        for name, col in zip(QRELS_HEADER, cols, strict=True):
            check_chars(rp, no, name, col)
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
                rp, no, "score", f"expected an integer 0..{MAX_SCORE}, got {got(score_text)}"
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
        raise DatasetError(rp, 1, "header", f"missing: expected {got(chr(9).join(QRELS_HEADER))}")

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
                check_chars(out / name, no, key, value)
            lines.append(json.dumps(dict(row), ensure_ascii=False) + "\n")
        return "".join(lines)

    write_text(out / "corpus.jsonl", jsonl("corpus.jsonl", memories))
    write_text(out / "queries.jsonl", jsonl("queries.jsonl", queries))
    lines = ["\t".join(QRELS_HEADER)] + [f"{q}\t{m}\t{int(s)}" for q, m, s in qrels]
    write_text(out / "qrels.tsv", "\n".join(lines) + "\n")
    return out
