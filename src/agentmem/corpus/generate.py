"""Seeded, byte-reproducible generation of the synthetic agent-memory corpus (docs/CORPUS.md).

Pipeline: world (:mod:`.world`: services, records, one fact per record) → 1..N
renderings per fact (identifier-bearing and paraphrase forms) → distractors (mention an
identifier, assert nothing) → supersessions (a correction memory on ``correction_day``
marks every earlier rendering ``superseded_by`` it; with ``restated_after_correction`` a
share of corrected facts is restated once more, with the old value, after the correction,
and superseded too) → memories ordered in time and cut
into sessions → queries of eight classes with definitional qrels (:mod:`.queries`).

How many memories a fact gets (:func:`light_restatements`, every n-th fact heavy), which
carry its identifier (:data:`ID_FORM_SHARE`) and how they name its service
(:data:`SERVICE_NAMED_SHARE`) give the corpus the study's restatement distribution and
validation table (``docs/VALIDATION.md``). Everything is drawn from one
``random.Random(seed)``; iteration orders are fixed, so the same seed gives the same bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from agentmem.corpus import templates as T
from agentmem.corpus.world import RECORD_TYPES, Fact, build_world
from agentmem.tokens import count_tokens
from agentmem.types import FACT_SCHEMA, MEMORY_SCHEMA

if TYPE_CHECKING:
    from agentmem.config import CorpusConfig, SizeConfig

#: chance that a restatement after the first is identifier-bearing (the first always is)
ID_FORM_SHARE = 0.4
#: chance that a memory writes the hyphenated name of the service it is about
#: (``billing-api``); the others spell it out (``billing api``) or give only its identifier
SERVICE_NAMED_SHARE = 0.72
AGENT_NAMES = ["planner", "coder", "reviewer", "operator", "researcher", "triager"]


@dataclass
class Mem:
    """A memory before ids and sessions are assigned."""

    body: str
    day: int
    kind: str
    fact_id: str | None
    source: str
    confidence: float
    entity_ids: list[str]
    form: str  # "id", "para", "correction", "distractor"
    tie: float
    superseded: bool = False
    memory_id: str = ""


def _fields(
    f: Fact, value: str, value_para: str, rng: random.Random | None = None
) -> dict[str, str]:
    """Template fields of ``f``.

    With ``rng`` the rendering writes the service's hyphenated name with probability
    :data:`SERVICE_NAMED_SHARE` (``{svc}`` = ``billing-api``, ``{svcid}`` =
    ``billing-api (SVC-…)``) and otherwise not (``{svc}`` spelled out, ``billing api``;
    ``{svcid}`` the service identifier alone); without ``rng`` (questions) it always does.
    """
    named = rng is None or rng.random() < SERVICE_NAMED_SHARE
    return {
        "rid": f.rid,
        "sid": f.sid,
        "svc": f.svc if named else f.svc.replace("-", " "),
        "svcid": f"{f.svc} ({f.sid})" if named else f.sid,
        "slug": f.svc,
        "when": str(f.valid_from_day),
        "v": value,
        "vp": value_para,
        **f.extra,
    }


def render_id(rng: random.Random, f: Fact) -> str:
    """An identifier-bearing sentence for fact ``f`` (carries ``f.rid`` and ``f.sid``)."""
    forms = {
        "config": T.CONFIG_ID_FORMS,
        "incident": T.INCIDENT_ID_FORMS,
        "decision": T.DECISION_ID_FORMS,
        "person": T.PERSON_ID_FORMS,
        "runbook": T.RUNBOOK_ID_FORMS,
    }[f.rtype]
    form = rng.choice(forms)
    return form.format(**_fields(f, f.value, f.value_para, rng))


def render_para(rng: random.Random, f: Fact) -> str:
    """A paraphrase of fact ``f``: descriptive service name, value in words, no identifier."""
    if f.rtype == "config":
        forms = T.CONFIG_ATTRIBUTES[f.predicate]["para"]
    else:
        forms = {
            "incident": T.INCIDENT_PARA,
            "decision": T.DECISION_PARA,
            "person": T.PERSON_PARA,
            "runbook": T.RUNBOOK_PARA,
        }[f.rtype]
    form = rng.choice(forms)
    return form.format(**_fields(f, f.value, f.value_para, rng))


def semantic_question(f: Fact, lead: str = T.SEMANTIC_PREFIX) -> str:
    """The class-``semantic`` question for ``f`` (paraphrase, no identifier).

    ``lead`` opens the question (``"Remind me, "``); the rest starts lower-case after it.
    """
    if f.rtype == "config":
        q = T.CONFIG_ATTRIBUTES[f.predicate]["question"]
    else:
        q = {
            "incident": T.INCIDENT_QUESTION,
            "decision": T.DECISION_QUESTION,
            "person": T.PERSON_QUESTION,
            "runbook": T.RUNBOOK_QUESTION,
        }[f.rtype]
    q = q.format(**_fields(f, f.value, f.value_para))
    return lead + q[0].lower() + q[1:] if lead else q


def _pick_new_value(rng: random.Random, f: Fact, people: list[str]) -> tuple[str, str]:
    if f.rtype == "config":
        pool = T.CONFIG_ATTRIBUTES[f.predicate]["values"]
    elif f.rtype == "incident":
        pool = T.INCIDENT_CAUSES
    elif f.rtype == "decision":
        pool = T.DECISION_CHOICES
    elif f.rtype == "runbook":
        pool = T.RUNBOOK_STEPS
    else:
        other = rng.choice([p for p in people if p != f.rid] or [f.rid])
        return other, other
    return rng.choice([p for p in pool if p[0] != f.value])


def temporal_question(f: Fact, day: int) -> str:
    """The class-``temporal`` question for incident ``f``: its service's name, no identifier."""
    return T.INCIDENT_TEMPORAL.format(day=day, **_fields(f, f.value, f.value_para))


def render_correction(rng: random.Random, f: Fact) -> str:
    """The correction memory: identifier, new value, and the value it replaces."""
    d = _fields(f, f.new_value or "", f.new_value_para or "", rng)
    d["old"] = f.value
    d["new_rid"] = f.new_value or ""
    form = {
        "config": T.CONFIG_CORRECTION,
        "incident": T.INCIDENT_CORRECTION,
        "decision": T.DECISION_CORRECTION,
        "person": T.PERSON_CORRECTION,
        "runbook": T.RUNBOOK_CORRECTION,
    }[f.rtype]
    return form.format(**d)


def light_restatements(rng: random.Random, lo: int, hi: int) -> int:
    """Renderings of a light fact: ``lo + round((hi - lo) · u²)``, ``u`` uniform in [0, 1).

    Squaring skews the count toward ``lo`` (most facts are mentioned once or twice, a few
    more often): for 1–4, P(1) = P(u < √(1/6)) ≈ 0.41, P(2) ≈ 0.30, P(3) ≈ 0.21,
    P(4) ≈ 0.09. With every 11th fact heavy (6–14) and 12 % corrected this gives the
    restatement distribution of docs/STUDY.md §1 (over facts with more than one memory:
    mean ≈ 3.7, median 3, p90 8, max 15; ≈ 1/3 of facts with a single memory).
    """
    return lo + round((hi - lo) * rng.random() ** 2)


def _source_and_prefix(rng: random.Random) -> tuple[str, str]:
    source = rng.choice(T.SOURCES)
    return source, rng.choice(T.SOURCE_PREFIXES[source])


def _stale_restatement(rng: random.Random, f: Fact, opts: CorpusConfig) -> Mem:
    """An identifier-bearing restatement of ``f``'s old value written after its correction.

    It is superseded (the correction holds the current value) yet newer than the correction,
    so a ranking that takes the newest memory for the current one returns it.
    """
    source, prefix = _source_and_prefix(rng)
    return Mem(
        prefix + render_id(rng, f),
        rng.randint(opts.correction_day + 1, opts.days - 1),
        RECORD_TYPES[f.rtype][2],
        f.fact_id,
        source,
        round(rng.uniform(0.5, 1.0), 3),
        [f.rid, f.sid],
        "id",
        rng.random(),
        True,
    )


@dataclass
class Generated:
    """Everything the generator produced, as DataFrames ready to write."""

    memories: pl.DataFrame
    facts: pl.DataFrame
    entities: pl.DataFrame
    sessions: pl.DataFrame
    agents: pl.DataFrame
    fact_objects: list[Fact]


def generate(size: SizeConfig, opts: CorpusConfig) -> Generated:
    """Generate the memories, facts, entities, sessions and agents for one size.

    Args:
        size: facts to generate and queries per class.
        opts: generator options (seed, restatements, distractor ratio, supersession).

    Returns:
        :class:`Generated`; queries are made separately by :func:`.queries.make_queries`.
    """
    rng = random.Random(opts.seed)
    facts, entities = build_world(rng, size.facts, opts)
    people = [f.rid for f in facts if f.rtype == "person"]
    rs = opts.restatements

    n_sup = round(len(facts) * opts.superseded_fraction)
    superseded_ids = {f.fact_id for f in rng.sample(facts, n_sup)}
    mems: list[Mem] = []
    for i, f in enumerate(facts):
        heavy = rs.every_nth_heavy > 0 and (i + 1) % rs.every_nth_heavy == 0
        n = (
            rng.randint(rs.heavy_min, rs.heavy_max)
            if heavy
            else light_restatements(rng, rs.light_min, rs.light_max)
        )
        sup = f.fact_id in superseded_ids
        end = opts.correction_day - 1 if sup else opts.days - 1
        kind = RECORD_TYPES[f.rtype][2]
        has_para = False
        for j in range(n):
            form = "id" if j == 0 or rng.random() < ID_FORM_SHARE else "para"
            if j == n - 1 and n >= 3 and not has_para:
                form = "para"  # facts restated 3+ times always have a paraphrase
            has_para = has_para or form == "para"
            text = render_id(rng, f) if form == "id" else render_para(rng, f)
            source, prefix = _source_and_prefix(rng)
            day = f.valid_from_day if j == 0 else rng.randint(f.valid_from_day, end)
            ents = [f.rid, f.sid]
            mems.append(
                Mem(
                    prefix + text,
                    day,
                    kind,
                    f.fact_id,
                    source,
                    round(rng.uniform(0.5, 1.0), 3),
                    ents,
                    form,
                    rng.random(),
                    sup,
                )
            )
        if sup:
            f.new_value, f.new_value_para = _pick_new_value(rng, f, people)
            ents = [f.rid, f.sid] + ([f.new_value] if f.rtype == "person" else [])
            mems.append(
                Mem(
                    render_correction(rng, f),
                    opts.correction_day,
                    kind,
                    f.fact_id,
                    "agent_summary",
                    round(rng.uniform(0.5, 1.0), 3),
                    ents,
                    "correction",
                    rng.random(),
                )
            )
            # drawn only when asked for, so that the default corpus keeps its bytes
            if opts.restated_after_correction > 0 and rng.random() < opts.restated_after_correction:
                mems.append(_stale_restatement(rng, f, opts))

    n_distractors = round(len(mems) * opts.distractor_ratio)
    for _ in range(n_distractors):
        f = rng.choice(facts)
        source, _prefix = _source_and_prefix(rng)
        mems.append(
            Mem(
                rng.choice(T.DISTRACTORS).format(rid=f.rid, svc=f.svc),
                rng.randrange(opts.days),
                "episodic",
                None,
                source,
                round(rng.uniform(0.5, 1.0), 3),
                [f.rid],
                "distractor",
                rng.random(),
            )
        )

    # time order -> ids, sessions
    mems.sort(key=lambda m: (m.day, m.tie))
    for seq, m in enumerate(mems):
        m.memory_id = f"M{seq + 1:06d}"
    correction_of = {m.fact_id: m.memory_id for m in mems if m.form == "correction"}

    session_rows = []
    session_of: list[str] = []
    turn_of: list[int] = []
    mps = opts.memories_per_session
    i = 0
    agents = [f"AG{n + 1:02d}" for n in range(len(AGENT_NAMES))]
    while i < len(mems):
        n = rng.randint(max(1, mps - mps // 3), mps + mps // 3)
        chunk = mems[i : i + n]
        sid = f"S{len(session_rows) + 1:05d}"
        session_rows.append((sid, rng.choice(agents), chunk[0].day, chunk[-1].day, len(chunk)))
        session_of.extend([sid] * len(chunk))
        turn_of.extend(range(len(chunk)))
        i += n

    bodies = [m.body for m in mems]
    memories = pl.DataFrame(
        {
            "memory_id": [m.memory_id for m in mems],
            "session_id": session_of,
            "turn_no": turn_of,
            "seq": list(range(len(mems))),
            "kind": [m.kind for m in mems],
            "body": bodies,
            "fact_id": [m.fact_id for m in mems],
            "created_day": [m.day for m in mems],
            "source": [m.source for m in mems],
            "confidence": [m.confidence for m in mems],
            "superseded_by": [
                correction_of[m.fact_id] if m.superseded and m.form != "correction" else None
                for m in mems
            ],
            "tokens": count_tokens(bodies),
            "entity_ids": [m.entity_ids for m in mems],
            "form": [m.form for m in mems],
            "scope_id": [None] * len(mems),  # one agent's memory: no scopes
        },
        schema=MEMORY_SCHEMA,
    )
    facts_df = pl.DataFrame(
        {
            "fact_id": [f.fact_id for f in facts],
            "subject_id": [f.rid for f in facts],
            "subject_type": [f.rtype for f in facts],
            "service_id": [f.sid for f in facts],
            "predicate": [f.predicate for f in facts],
            "object_value": [f.value for f in facts],
            "memory_kind": [RECORD_TYPES[f.rtype][2] for f in facts],
            "valid_from_day": [f.valid_from_day for f in facts],
            "corrected_value": [f.new_value for f in facts],
            "corrected_day": [opts.correction_day if f.new_value else None for f in facts],
            "correction_memory_id": [correction_of.get(f.fact_id) for f in facts],
        },
        schema=FACT_SCHEMA,
    ).sort("fact_id")
    sessions = pl.DataFrame(
        session_rows,
        schema={
            "session_id": pl.String,
            "agent_id": pl.String,
            "start_day": pl.Int32,
            "end_day": pl.Int32,
            "memories": pl.Int32,
        },
        orient="row",
    )
    agents_df = pl.DataFrame({"agent_id": agents, "role": AGENT_NAMES})
    return Generated(memories, facts_df, entities, sessions, agents_df, facts)


def generated_paths(out_dir: Path) -> dict[str, Path]:
    """The files a corpus directory holds, by logical name."""
    names = ["memories", "facts", "entities", "sessions", "agents", "queries", "qrels"]
    return {n: out_dir / f"{n}.parquet" for n in names}
