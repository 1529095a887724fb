"""The study's own generated corpus, read into the corpus layout every arm reads.

The study ("Persistent memory architecture in agents using DBMS") generates its corpus with
its ``tools/corpus.mjs`` (``npm run corpus``, default seed 20260809), which writes one JSON
file, ``data/corpus.json``: ``options``, ``world``, ``facts``, ``sessions``, ``memories``,
``supersessions``, ``queries`` and ``stats``. :func:`import_study_corpus` validates that
file (plain or ``.xz``) and writes it as a corpus directory (docs/DATA.md §1), so the
robustness check runs it through its arms like any further corpus. Which field becomes
which column: docs/ROBUSTNESS.md, "The study's own corpus".
"""

from __future__ import annotations

import hashlib
import json
import lzma
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentmem.types import ENTITY_SCHEMA, FACT_SCHEMA, MEMORY_SCHEMA, QRELS_SCHEMA, QUERY_SCHEMA

#: the study's predicates, ``(field, op)``, as ours ``(field, op)``; ``factId count``
#: is an aggregate: our ``fact_id =`` with the expected count
PREDICATES: dict[tuple[str, str], tuple[str, str]] = {
    ("day", "<="): ("created_day", "<="),
    ("sessionId", "="): ("session_id", "="),
    ("supersededBy", "is null"): ("superseded_by", "is_null"),
    ("factId", "count"): ("fact_id", "="),
}
#: the study's world collections and the entity type each holds (our ``entities.type``)
WORLD_TYPES = {
    "services": "service",
    "people": "person",
    "repos": "repo",
    "incidents": "incident",
    "decisions": "decision",
    "configs": "config",
    "procedures": "runbook",
}
#: the record field that names an entity of each collection (the id when absent)
_NAME_FIELDS = ("name", "topic", "key")


class StudyCorpusError(ValueError):
    """The study's corpus file is missing, not JSON, or not the generator's layout.

    The message names the file and, for a bad record, its place (e.g. ``memories[12].day``).
    """


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Memory(_Record):
    id: str
    seq: int
    session_id: str = Field(alias="sessionId")
    turn: int
    kind: str
    body: str
    fact_id: str | None = Field(alias="factId")
    lexical: bool
    entities: list[str]
    day: int
    source: str
    confidence: float
    superseded_by: str | None = Field(alias="supersededBy")


class _Fact(_Record):
    id: str
    kind: str
    subject: str
    predicate: str
    object: str | int | float
    day: int
    slots: dict[str, Any] = Field(default_factory=dict)


class _Session(_Record):
    id: str
    day: int
    agent: str


class _Supersession(_Record):
    fact_id: str = Field(alias="factId")
    current: str
    superseded: list[str]


class _Predicate(_Record):
    field: str
    op: str
    value: str | int | None = None


class _Query(_Record):
    id: str
    class_: str = Field(alias="class")
    text: str
    relevant: list[str]
    predicate: _Predicate | None = None
    similarity_expressible: bool = Field(alias="similarityExpressible")
    expected_count: int | None = Field(None, alias="expectedCount")


class _StudyCorpus(_Record):
    options: dict[str, Any]
    world: dict[str, list[dict[str, Any]]]
    facts: list[_Fact]
    sessions: list[_Session]
    memories: list[_Memory]
    supersessions: list[_Supersession]
    queries: list[_Query]
    stats: dict[str, Any] = Field(default_factory=dict)


def read_study_json(path: str | Path) -> dict[str, Any]:
    """The generator's JSON file as a dict; ``.xz`` files are decompressed.

    Raises:
        StudyCorpusError: when the file is missing, not valid xz, or not JSON.
    """
    return _load(Path(path))[1]


def _load(p: Path) -> tuple[bytes, dict[str, Any]]:
    """The file's bytes (read once: the manifest keeps their sha256) and its JSON."""
    if not p.is_file():
        raise StudyCorpusError(f"study corpus file {p} not found")
    raw = p.read_bytes()
    try:
        text = lzma.decompress(raw) if p.suffix == ".xz" else raw
        data = json.loads(text.decode("utf-8"))
    except (lzma.LZMAError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StudyCorpusError(f"{p}: not the study's corpus JSON ({exc})") from None
    if not isinstance(data, dict):
        raise StudyCorpusError(f"{p}: the top level is not a JSON object")
    return raw, data


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _parse(data: dict[str, Any], path: Path) -> _StudyCorpus:
    try:
        return _StudyCorpus.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        lines = [f"{_where(e['loc'])}: {e['msg']}" for e in errors[:5]]
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise StudyCorpusError(f"{path}: " + "; ".join(lines) + more) from None


def _check(sc: _StudyCorpus, path: Path) -> None:
    """Cross-references: ids unique, every id a record names exists, predicates known."""
    mem_ids = [m.id for m in sc.memories]
    if len(set(mem_ids)) != len(mem_ids):
        raise StudyCorpusError(f"{path}: memories: duplicate ids")
    known, facts = set(mem_ids), {f.id for f in sc.facts}
    sessions = {s.id for s in sc.sessions}
    for i, m in enumerate(sc.memories):
        for what, value, pool in (
            ("sessionId", m.session_id, sessions),
            ("factId", m.fact_id, facts),
            ("supersededBy", m.superseded_by, known),
        ):
            if value is not None and value not in pool:
                raise StudyCorpusError(f"{path}: memories[{i}].{what} {value!r} names nothing")
    for i, s in enumerate(sc.supersessions):
        for mid in (s.current, *s.superseded):
            if mid not in known:
                raise StudyCorpusError(f"{path}: supersessions[{i}] names memory {mid!r}, absent")
    qids = [q.id for q in sc.queries]
    if len(set(qids)) != len(qids):
        raise StudyCorpusError(f"{path}: queries: duplicate ids")
    for i, q in enumerate(sc.queries):
        missing = [mid for mid in q.relevant if mid not in known]
        if missing:
            raise StudyCorpusError(
                f"{path}: queries[{i}] ({q.id}).relevant names memory {missing[0]!r}, absent"
            )
        p = q.predicate
        if p is None:
            continue
        where = f"{path}: queries[{i}] ({q.id}).predicate {p.field} {p.op}"
        if (p.field, p.op) not in PREDICATES:
            raise StudyCorpusError(
                f"{where}: not one of " + ", ".join(f"{f} {o}" for f, o in PREDICATES)
            )
        want = {"day": int, "sessionId": str, "factId": str}.get(p.field)
        if want is not None and (not isinstance(p.value, want) or isinstance(p.value, bool)):
            kind = "an integer" if want is int else "a string"
            raise StudyCorpusError(f"{where}: needs {kind} value, got {p.value!r}")


def _record_id(fact: _Fact) -> str:
    """The world record a fact is about: ``F-cfg-CFG-700`` -> ``CFG-700``."""
    parts = fact.id.split("-", 2)
    return parts[2] if len(parts) == 3 else fact.subject


def study_tables(
    data: dict[str, Any], path: str | Path = "<study corpus>"
) -> dict[str, pl.DataFrame]:
    """The corpus tables (docs/DATA.md §1) of the generator's JSON.

    Memories keep the study's ids, sequence, sessions, days, sources, confidences and
    supersession links; ``form`` is ``distractor`` (no fact), ``correction`` (the current
    memory of a supersession), ``id`` (``lexical``: it states the identifier) or ``para``;
    tokens are counted in o200k_base. A fact's ``corrected_value`` is its object (a
    correction restates the fact) and ``corrected_day`` the correcting memory's day.
    Queries keep the study's ids, texts and predicates (:data:`PREDICATES`); the qrels are
    the study's ``relevant`` lists, grade 1.

    Raises:
        StudyCorpusError: a record lacks a field, has one of the wrong type, or names an id
            that does not exist (the message names the record).
    """
    from agentmem.tokens import count_tokens

    p = Path(path)
    sc = _parse(data, p)
    _check(sc, p)
    mems = sorted(sc.memories, key=lambda m: m.seq)
    corrections = {s.current for s in sc.supersessions}
    bodies = [m.body for m in mems]
    memories = pl.DataFrame(
        {
            "memory_id": [m.id for m in mems],
            "session_id": [m.session_id for m in mems],
            "turn_no": [m.turn for m in mems],
            "seq": [m.seq for m in mems],
            "kind": [m.kind for m in mems],
            "body": bodies,
            "fact_id": [m.fact_id for m in mems],
            "created_day": [m.day for m in mems],
            "source": [m.source for m in mems],
            "confidence": [m.confidence for m in mems],
            "superseded_by": [m.superseded_by for m in mems],
            "tokens": count_tokens(bodies),
            "entity_ids": [m.entities for m in mems],
            "form": [
                "distractor"
                if m.fact_id is None
                else "correction"
                if m.id in corrections
                else "id"
                if m.lexical
                else "para"
                for m in mems
            ],
            "scope_id": [None] * len(mems),
        },
        schema=MEMORY_SCHEMA,
    )
    records = {
        str(r["id"]): (WORLD_TYPES.get(coll, coll), r)
        for coll, rows in sc.world.items()
        for r in rows
        if "id" in r
    }
    day_of = {m.id: m.day for m in mems}
    correction_of = {s.fact_id: s.current for s in sc.supersessions}
    fact_rows = []
    for f in sc.facts:
        rid = _record_id(f)
        rtype, rec = records.get(rid, (None, {}))
        current = correction_of.get(f.id)
        fact_rows.append(
            (
                f.id,
                rid,
                rtype,
                f.slots.get("svcId") or rec.get("service"),
                f.predicate,
                str(f.object),
                f.kind,
                f.day,
                None if current is None else str(f.object),
                None if current is None else day_of[current],
                current,
            )
        )
    facts = pl.DataFrame(fact_rows, schema=FACT_SCHEMA, orient="row").sort("fact_id")
    entities = pl.DataFrame(
        [
            (
                rid,
                rtype,
                str(next((rec[k] for k in _NAME_FIELDS if rec.get(k) is not None), rid)),
                rid if rtype == "service" else rec.get("service"),
            )
            for rid, (rtype, rec) in records.items()
        ],
        schema=ENTITY_SCHEMA,
        orient="row",
    )
    per_session = memories.group_by("session_id").agg(
        pl.len().cast(pl.Int32).alias("memories"),
        pl.col("created_day").max().alias("last_day"),
    )
    sessions = (
        pl.DataFrame(
            [(s.id, s.agent, s.day) for s in sc.sessions],
            schema={"session_id": pl.String, "agent_id": pl.String, "start_day": pl.Int32},
            orient="row",
        )
        .join(per_session, on="session_id", how="left", maintain_order="left")
        .select(
            "session_id",
            "agent_id",
            "start_day",
            pl.max_horizontal("start_day", "last_day").cast(pl.Int32).alias("end_day"),
            pl.col("memories").fill_null(0),
        )
    )
    agent_ids = list(dict.fromkeys(s.agent for s in sc.sessions))
    agents = pl.DataFrame({"agent_id": agent_ids, "role": agent_ids})
    query_rows, qrel_rows = [], []
    for q in sc.queries:
        field = op = value = None
        if q.predicate is not None:
            field, op = PREDICATES[(q.predicate.field, q.predicate.op)]
            value = None if op == "is_null" else str(q.predicate.value)
        query_rows.append(
            (q.id, q.class_, q.text, field, op, value, q.expected_count, q.similarity_expressible)
        )
        qrel_rows += [(q.id, mid, 1) for mid in dict.fromkeys(q.relevant)]
    queries = pl.DataFrame(query_rows, schema=QUERY_SCHEMA, orient="row")
    qrels = pl.DataFrame(qrel_rows, schema=QRELS_SCHEMA, orient="row")
    return {
        "memories": memories,
        "facts": facts,
        "entities": entities,
        "sessions": sessions,
        "agents": agents,
        "queries": queries,
        "qrels": qrels,
    }


def import_study_corpus(path: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Read the study's corpus file and write it as a corpus directory.

    Args:
        path: the generator's ``corpus.json`` (or ``corpus.json.xz``).
        out_dir: the corpus directory to write (created).

    Returns:
        The manifest (:func:`agentmem.corpus.io.write_tables`); its ``options`` hold the
        source file, its sha256, the generator's options and its own ``stats``.

    Raises:
        StudyCorpusError: as :func:`read_study_json` and :func:`study_tables`; nothing is
            written then.
    """
    from agentmem.corpus.io import write_tables

    p = Path(path)
    raw, data = _load(p)
    tables = study_tables(data, p)
    source = {
        "path": str(p),
        "sha256": hashlib.sha256(raw).hexdigest(),
        "generator_options": data.get("options"),
        "generator_stats": data.get("stats"),
    }
    return write_tables(out_dir, tables, {"study_corpus": source})


def import_job(input: Any, output: Any, params: Any) -> None:
    """The import as a workflow job (:func:`agentmem.jobs.run_entry`).

    Args:
        input: ``source``, the study's corpus file (a path, or a list of one).
        output: the corpus files (``memories`` ... ``qrels``, ``manifest``), in one directory.
        params: unused.

    Raises:
        StudyCorpusError: as :func:`import_study_corpus`, or when ``source`` is not one file.
    """
    from agentmem.corpus.io import FILES
    from agentmem.jobs import corpus_dir

    sources = [input.source] if isinstance(input.source, str) else list(input.source)
    if len(sources) != 1:
        raise StudyCorpusError(f"the import needs one study corpus file, got {sources}")
    import_study_corpus(sources[0], corpus_dir(output, *FILES, "manifest"))
