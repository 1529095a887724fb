"""Queries of the eight classes and their definitional qrels (REFERENCE §2).

Relevance is by construction, never by judgement:

=========== ===================================== =========================================
class       relevant memories                     structured predicate
=========== ===================================== =========================================
lexical     every memory of the fact              none
semantic    the fact's paraphrase renderings      none
temporal    the fact's renderings with day <= N   created_day <= N
provenance  every memory of the session           session_id = S
currency    the correction                        superseded_by IS NULL
aggregate   every memory of the fact (>= 4)       fact_id = F, count
negation    the correction                        superseded_by IS NULL
hybrid      every memory of the fact (>= 3)       none
=========== ===================================== =========================================

Each fact is used by at most one query across classes, so classes do not share targets.
"""

from __future__ import annotations

import random
from collections import defaultdict

import polars as pl

from agentmem.config import CorpusConfig
from agentmem.corpus import templates as T
from agentmem.corpus.generate import Fact, semantic_question

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
    distracted: set[str] = set()
    for row in memories.iter_rows(named=True):
        if row["fact_id"] is not None:
            by_fact[row["fact_id"]].append(row)
        elif row["form"] == "distractor":
            distracted.update(row["entity_ids"])
    order = sorted(facts, key=lambda f: f.fact_id)
    rng.shuffle(order)
    used: set[str] = set()
    queries: list[dict] = []
    qrels: list[tuple[str, str]] = []

    def take(cls: str, ok) -> list[Fact]:  # noqa: ANN001
        out = []
        for f in order:
            if len(out) >= per_class:
                break
            if f.fact_id not in used and ok(f, by_fact[f.fact_id]):
                used.add(f.fact_id)
                out.append(f)
        return out

    def add(cls: str, text: str, rel: list[str], pred=(None, None, None), count=None) -> None:  # noqa: ANN001
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
        qrels.extend((qid, m) for m in sorted(rel))

    def forms(rows: list[dict]) -> set[str]:
        return {r["form"] for r in rows}

    sup = lambda f, rows: any(r["form"] == "correction" for r in rows)  # noqa: E731

    # order of drawing = scarcest targets first
    for f in take("currency", sup):
        rel = [r["memory_id"] for r in by_fact[f.fact_id] if r["form"] == "correction"]
        text = T.CURRENCY_QUESTIONS[f.rtype].format(rid=f.rid, **f.extra)
        add("currency", text, rel, ("superseded_by", "is_null", None))
    for f in take("negation", sup):
        rel = [r["memory_id"] for r in by_fact[f.fact_id] if r["form"] == "correction"]
        add(
            "negation",
            rng.choice(T.NEGATION_QUESTIONS).format(rid=f.rid),
            rel,
            ("superseded_by", "is_null", None),
        )
    cut = opts.temporal_cutoff_day
    for f in take(
        "temporal",
        lambda f, rows: (
            f.rtype == "config"
            and not sup(f, rows)
            and any(r["created_day"] <= cut for r in rows)
            and any(r["created_day"] > cut for r in rows)
        ),
    ):
        rel = [r["memory_id"] for r in by_fact[f.fact_id] if r["created_day"] <= cut]
        add(
            "temporal",
            T.TEMPORAL_QUESTION.format(day=cut, attr=f.predicate, sid=f.sid),
            rel,
            ("created_day", "<=", str(cut)),
        )
    for f in take("aggregate", lambda f, rows: len(rows) >= 4):
        rows = by_fact[f.fact_id]
        add(
            "aggregate",
            rng.choice(T.AGGREGATE_QUESTIONS).format(rid=f.rid),
            [r["memory_id"] for r in rows],
            ("fact_id", "=", f.fact_id),
            len(rows),
        )
    for f in take(
        "hybrid",
        lambda f, rows: len(rows) >= 3 and not sup(f, rows) and {"id", "para"} <= forms(rows),
    ):
        text = T.HYBRID_PREFIX.format(rid=f.rid) + semantic_question(f)
        add("hybrid", text, [r["memory_id"] for r in by_fact[f.fact_id]])
    for f in take(
        "lexical", lambda f, rows: len(rows) >= 2 and not sup(f, rows) and f.rid in distracted
    ):
        add(
            "lexical",
            rng.choice(T.LEXICAL_QUESTIONS).format(rid=f.rid),
            [r["memory_id"] for r in by_fact[f.fact_id]],
        )
    for f in take("semantic", lambda f, rows: not sup(f, rows) and "para" in forms(rows)):
        rel = [r["memory_id"] for r in by_fact[f.fact_id] if r["form"] == "para"]
        add("semantic", semantic_question(f), rel)
    sessions = sorted(set(memories["session_id"].to_list()))
    by_session: dict[str, list[str]] = defaultdict(list)
    for sid, mid in zip(memories["session_id"], memories["memory_id"], strict=True):
        by_session[sid].append(mid)
    for sid in rng.sample(sessions, min(per_class, len(sessions))):
        add(
            "provenance",
            rng.choice(T.PROVENANCE_QUESTIONS).format(session=sid),
            by_session[sid],
            ("session_id", "=", sid),
        )

    rank = {c: i for i, c in enumerate(QUERY_CLASSES)}
    queries.sort(key=lambda q: (rank[q["class"]], q["query_id"]))
    qdf = pl.DataFrame(
        queries,
        schema={
            "query_id": pl.String,
            "class": pl.String,
            "text": pl.String,
            "predicate_field": pl.String,
            "predicate_op": pl.String,
            "predicate_value": pl.String,
            "expected_count": pl.Int32,
            "similarity_expressible": pl.Boolean,
        },
    )
    rdf = pl.DataFrame(
        qrels, schema={"query_id": pl.String, "memory_id": pl.String}, orient="row"
    ).with_columns(grade=pl.lit(1, dtype=pl.Int8))
    return qdf, rdf.sort("query_id", "memory_id")
