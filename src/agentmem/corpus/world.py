"""The generator's world: services, records and one fact per record (docs/CORPUS.md).

Proportions follow docs/STUDY.md §1 (per 2,500 facts: 1,000 config records, 650 incidents,
475 decisions, 200 people, 175 runbooks, 250 services). Identifiers are sparse and
fixed-width; every draw comes from the generator's one ``random.Random``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from agentmem.corpus import templates as T
from agentmem.types import ENTITY_SCHEMA

if TYPE_CHECKING:
    from agentmem.config import CorpusConfig

#: record type -> (identifier prefix, share of facts, memory kind)
RECORD_TYPES: dict[str, tuple[str, float, str]] = {
    "config": ("CFG", 0.40, "semantic"),
    "incident": ("INC", 0.26, "episodic"),
    "decision": ("ADR", 0.19, "semantic"),
    "person": ("PER", 0.08, "semantic"),
    "runbook": ("RUN", 0.07, "procedural"),
}
SERVICES_PER_FACT = 0.10


@dataclass
class Fact:
    """One subject–predicate–object triple and the text pieces to render it."""

    fact_id: str
    rtype: str
    rid: str
    sid: str
    svc: str
    predicate: str
    value: str
    value_para: str
    valid_from_day: int
    extra: dict[str, str] = field(default_factory=dict)
    new_value: str | None = None
    new_value_para: str | None = None


def _id_width(count: int) -> int:
    """Digits so that ``9·10^(w-1) >= 4·count`` (identifiers stay sparse and fixed-width)."""
    return max(3, math.ceil(math.log10(max(4 * count, 1) / 9 + 1)) + 1)


def _identifiers(rng: random.Random, prefix: str, count: int) -> list[str]:
    w = _id_width(count)
    lo, hi = 10 ** (w - 1), 10**w
    return [f"{prefix}-{n}" for n in rng.sample(range(lo, hi), count)]


def _unique_pairs(rng: random.Random, a: int, b: int, count: int) -> list[tuple[int, int]]:
    """``count`` distinct (i, j) with i < a, j < b, in random order."""
    if count > a * b:
        raise ValueError(f"cannot draw {count} distinct pairs from {a} x {b}")
    return [divmod(x, b) for x in rng.sample(range(a * b), count)]


def build_world(
    rng: random.Random, n_facts: int, opts: CorpusConfig
) -> tuple[list[Fact], pl.DataFrame]:
    """Draw the entities and one fact per non-service record.

    Returns:
        ``(facts, entities)``; ``entities`` has columns entity_id, type, name, service_id.

    Raises:
        ValueError: when the vocabulary cannot give unique names at this size.
    """
    n_services = max(4, round(n_facts * SERVICES_PER_FACT))
    base = len(T.SERVICE_NOUNS) * len(T.SERVICE_ROLES)
    generations = math.ceil(n_services / base)
    services = []
    for sid, (gen, x) in zip(
        _identifiers(rng, "SVC", n_services),
        _unique_pairs(rng, generations, base, n_services),
        strict=True,
    ):
        noun, role = divmod(x, len(T.SERVICE_ROLES))
        # billing-api, then billing-api-2, billing-api-3 ... once every pair is taken
        name = f"{T.SERVICE_NOUNS[noun]}-{T.SERVICE_ROLES[role]}" + (f"-{gen + 1}" if gen else "")
        services.append((sid, name))

    counts = {t: round(n_facts * share) for t, (_, share, _) in RECORD_TYPES.items()}
    counts["config"] += n_facts - sum(counts.values())
    entity_rows = [(sid, "service", name, None) for sid, name in services]
    facts: list[Fact] = []
    horizon = opts.correction_day - 40

    def day() -> int:
        return rng.randrange(0, horizon)

    # config: unique (service, attribute)
    attrs = list(T.CONFIG_ATTRIBUTES)
    ids = _identifiers(rng, "CFG", counts["config"])
    for rid, (si, ai) in zip(
        ids, _unique_pairs(rng, n_services, len(attrs), len(ids)), strict=True
    ):
        sid, svc = services[si]
        attr = attrs[ai]
        v, vp = rng.choice(T.CONFIG_ATTRIBUTES[attr]["values"])
        facts.append(Fact("", "config", rid, sid, svc, attr, v, vp, day(), {"attr": attr}))
        entity_rows.append((rid, "config", f"{attr} of {svc}", sid))
    # incidents: unique (service, cause)
    ids = _identifiers(rng, "INC", counts["incident"])
    pairs = _unique_pairs(rng, n_services, len(T.INCIDENT_CAUSES), len(ids))
    for rid, (si, ci) in zip(ids, pairs, strict=True):
        sid, svc = services[si]
        v, vp = T.INCIDENT_CAUSES[ci]
        facts.append(Fact("", "incident", rid, sid, svc, "root_cause", v, vp, day()))
        entity_rows.append((rid, "incident", f"incident on {svc}", sid))
    # decisions: unique (service, choice)
    ids = _identifiers(rng, "ADR", counts["decision"])
    pairs = _unique_pairs(rng, n_services, len(T.DECISION_CHOICES), len(ids))
    for rid, (si, ci) in zip(ids, pairs, strict=True):
        sid, svc = services[si]
        v, vp = T.DECISION_CHOICES[ci]
        facts.append(Fact("", "decision", rid, sid, svc, "decides", v, vp, day()))
        entity_rows.append((rid, "decision", f"decision for {svc}", sid))
    # people: each owns a distinct service
    ids = _identifiers(rng, "PER", counts["person"])
    if len(ids) > n_services:
        raise ValueError(f"{len(ids)} people but only {n_services} services to own")
    names = _unique_pairs(rng, len(T.FIRST_NAMES), len(T.LAST_NAMES), len(ids))
    owned = rng.sample(range(n_services), len(ids))
    for rid, (fi, li), si in zip(ids, names, owned, strict=True):
        sid, svc = services[si]
        name = f"{T.FIRST_NAMES[fi]} {T.LAST_NAMES[li]}"
        facts.append(Fact("", "person", rid, sid, svc, "owns", sid, name, day(), {"name": name}))
        entity_rows.append((rid, "person", name, sid))
    # runbooks: unique (service, task)
    ids = _identifiers(rng, "RUN", counts["runbook"])
    pairs = _unique_pairs(rng, n_services, len(T.RUNBOOK_TASKS), len(ids))
    for rid, (si, ti) in zip(ids, pairs, strict=True):
        sid, svc = services[si]
        task, taskp = T.RUNBOOK_TASKS[ti]
        v, vp = rng.choice(T.RUNBOOK_STEPS)
        facts.append(
            Fact(
                "",
                "runbook",
                rid,
                sid,
                svc,
                "first_step",
                v,
                vp,
                day(),
                {"task": task, "taskp": taskp},
            )
        )
        entity_rows.append((rid, "runbook", f"{task} runbook for {svc}", sid))

    rng.shuffle(facts)
    for i, f in enumerate(facts):
        f.fact_id = f"F{i + 1:06d}"
    entities = pl.DataFrame(entity_rows, schema=ENTITY_SCHEMA, orient="row").sort("entity_id")
    return facts, entities
