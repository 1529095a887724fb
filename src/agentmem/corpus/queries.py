"""Queries of the eight classes and their definitional qrels (docs/STUDY.md §2).

Relevance is by construction, never by judgement: a class fixes the question, the relevant
memories and the structured predicate for the fact it targets (lexical, semantic,
temporal, provenance, currency, aggregate, negation, hybrid). Each fact is used by at most
one query across classes; within a class the target facts are a systematic sample of the
eligible ones ordered by their number of relevant memories. The class table and the
sampling are in ``docs/CORPUS.md``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from agentmem.corpus import templates as T
from agentmem.corpus.generate import Fact, semantic_question, temporal_question
from agentmem.types import QUERY_SCHEMA

if TYPE_CHECKING:
    from agentmem.config import CorpusConfig

QUERY_CLASSES = (
    "lexical",
    "semantic",
    "temporal",
    "provenance",
    "currency",
    "aggregate",
    "negation",
    "hybrid",
)
SIMILARITY_EXPRESSIBLE = {"lexical", "semantic", "hybrid"}


def make_queries(
    memories: pl.DataFrame,
    facts: list[Fact],
    per_class: int,
    opts: CorpusConfig,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Draw ``per_class`` queries of each class (fewer where too few targets exist).

    Args:
        memories: the generated memories (needs fact_id, form, created_day, session_id,
            superseded_by, memory_id, entity_ids).
        facts: fact objects from the generator (same seed order).
        per_class: queries wanted per class.
        opts: generator options (seed, temporal cutoff).

    Returns:
        ``(queries, qrels)``: queries has query_id, class, text, predicate_field,
        predicate_op, predicate_value, expected_count, similarity_expressible; qrels has
        query_id, memory_id, grade (1).
    """
    rng = random.Random(opts.seed + 1)
    by_fact: dict[str, list[dict]] = defaultdict(list)
    for row in memories.iter_rows(named=True):
        if row["fact_id"] is not None:
            by_fact[row["fact_id"]].append(row)
    by_id = sorted(facts, key=lambda f: f.fact_id)
    used: set[str] = set()
    queries: list[dict] = []
    qrels: list[tuple[str, str]] = []

    def take(
        ok: Callable, relevant: Callable, wanted: int = per_class
    ) -> list[tuple[Fact, list[dict]]]:
        """Systematic sample of ``wanted`` eligible unused facts, stratified by size.

        Eligible facts are ordered by how many relevant memories they have (ties in random
        order) and every ``len / wanted``-th is taken from a random start, so a class's
        relevant memories per question follow those of all its eligible facts instead of
        the luck of a 40-question draw.
        """
        pool = []
        for f in by_id:
            rows = by_fact[f.fact_id]
            if f.fact_id not in used and ok(f, rows):
                pool.append((len(relevant(f, rows)), rng.random(), f))
        pool.sort(key=lambda t: t[:2])
        n = min(wanted, len(pool))
        step = len(pool) / n if n else 0.0
        start = rng.random() * step
        out = []
        for i in range(n):
            f = pool[int(start + i * step)][2]
            used.add(f.fact_id)
            out.append((f, relevant(f, by_fact[f.fact_id])))
        return out

    def add(cls: str, text: str, rel: list[dict], pred=(None, None, None), count=None) -> None:  # noqa: ANN001
        qid = f"{cls}-{sum(q['class'] == cls for q in queries) + 1:03d}"
        queries.append(
            {
                "query_id": qid,
                "class": cls,
                "text": text,
                "predicate_field": pred[0],
                "predicate_op": pred[1],
                "predicate_value": pred[2],
                "expected_count": count,
                "similarity_expressible": cls in SIMILARITY_EXPRESSIBLE,
            }
        )
        qrels.extend((qid, m) for m in sorted(r["memory_id"] for r in rel))

    def forms(rows: list[dict]) -> set[str]:
        return {r["form"] for r in rows}

    def sup(f: Fact, rows: list[dict]) -> bool:
        return "correction" in forms(rows)

    def every(f: Fact, rows: list[dict]) -> list[dict]:
        return rows

    def correction(f: Fact, rows: list[dict]) -> list[dict]:
        return [r for r in rows if r["form"] == "correction"]

    def paraphrases(f: Fact, rows: list[dict]) -> list[dict]:
        return [r for r in rows if r["form"] == "para"]

    cut = opts.temporal_cutoff_day

    def early(f: Fact, rows: list[dict]) -> list[dict]:
        return [r for r in rows if r["created_day"] <= cut]

    # order of drawing = scarcest targets first
    for f, rel in take(sup, correction):
        text = rng.choice(T.CURRENCY_QUESTIONS).format(rid=f.rid)
        add("currency", text, rel, ("superseded_by", "is_null", None))
    for f, rel in take(sup, correction):
        text = rng.choice(T.NEGATION_QUESTIONS).format(rid=f.rid)
        add("negation", text, rel, ("superseded_by", "is_null", None))
    # incidents noted at least twice by the cut-off; in a small corpus with too few of
    # them, incidents noted once make up the class
    temporal = take(lambda f, rows: f.rtype == "incident" and len(early(f, rows)) >= 2, early)
    if len(temporal) < per_class:
        temporal += take(
            lambda f, rows: f.rtype == "incident" and len(early(f, rows)) == 1,
            early,
            per_class - len(temporal),
        )
    for f, rel in temporal:
        add("temporal", temporal_question(f, cut), rel, ("created_day", "<=", str(cut)))
    for f, rel in take(lambda f, rows: len(rows) >= 4, every):
        text = rng.choice(T.AGGREGATE_QUESTIONS).format(rid=f.rid)
        add("aggregate", text, rel, ("fact_id", "=", f.fact_id), len(rel))
    for f, rel in take(
        lambda f, rows: len(rows) >= 3 and {"id", "para"} <= forms(rows),
        every,
    ):
        add("hybrid", semantic_question(f, lead=T.HYBRID_PREFIX.format(rid=f.rid)), rel)
    for f, rel in take(lambda f, rows: len(rows) >= 1, every):
        add("lexical", rng.choice(T.LEXICAL_QUESTIONS).format(rid=f.rid), rel)
    for f, rel in take(lambda f, rows: not sup(f, rows) and "para" in forms(rows), paraphrases):
        add("semantic", semantic_question(f), rel)
    sessions = sorted(set(memories["session_id"].to_list()))
    by_session: dict[str, list[str]] = defaultdict(list)
    for sid, mid in zip(memories["session_id"], memories["memory_id"], strict=True):
        by_session[sid].append(mid)
    for sid in rng.sample(sessions, min(per_class, len(sessions))):
        add(
            "provenance",
            rng.choice(T.PROVENANCE_QUESTIONS).format(session=sid),
            [{"memory_id": m} for m in by_session[sid]],
            ("session_id", "=", sid),
        )

    rank = {c: i for i, c in enumerate(QUERY_CLASSES)}
    queries.sort(key=lambda q: (rank[q["class"]], q["query_id"]))
    qdf = pl.DataFrame(queries, schema=QUERY_SCHEMA)
    rdf = pl.DataFrame(
        qrels, schema={"query_id": pl.String, "memory_id": pl.String}, orient="row"
    ).with_columns(grade=pl.lit(1, dtype=pl.Int8))
    return qdf, rdf.sort("query_id", "memory_id")
