"""Forgetting over simulated time: ``sqlite-graph``'s decay job across a year.

Builds :class:`~agentmem.arms.graph.SqliteGraphArm` (default parameters) on a corpus
once, then for each simulated day in ascending order runs the seed's decay job
(:meth:`~agentmem.arms.graph.SqliteGraphArm.decay`, docs/STUDY.md §5) and measures the
pruned fraction, context tokens per query, currency and lexical nDCG@k and the share of
facts whose current value is still stored (:data:`DECAY_SCHEMA`). The decay rule, the
clock (last access = the day a memory was written) and the measures are in
``docs/experiments/decay.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import apsw
import polars as pl

from agentmem.arms.graph import DB_NAME, SqliteGraphArm
from agentmem.config import DecayConfig
from agentmem.corpus.io import load_corpus, load_qrels, load_queries
from agentmem.embeddings import load_embeddings
from agentmem.io import write_csv
from agentmem.jobs import CORPUS_TABLES, corpus_dir
from agentmem.metrics import ndcg_at_k
from agentmem.sweeps.budget import memory_tokens

#: Query classes evaluated each day (their nDCG columns follow).
EVALUATED_CLASSES: tuple[str, ...] = ("currency", "lexical")
#: Columns of the decay table (``results/sweeps/decay.csv``).
DECAY_SCHEMA: dict[str, pl.DataType] = {
    "day": pl.Int64,
    "pruned_fraction": pl.Float64,
    "context_tokens_per_query": pl.Float64,
    "currency_ndcg": pl.Float64,
    "lexical_ndcg": pl.Float64,
    "valid_fact_recall": pl.Float64,
}

_VALID_FACTS_SQL = (
    "SELECT count(DISTINCT fact_id), "
    "count(DISTINCT CASE WHEN pruned_day IS NULL THEN fact_id END) "
    "FROM nodes WHERE fact_id IS NOT NULL AND superseded_by IS NULL"
)


def valid_fact_recall(db: apsw.Connection) -> float | None:
    """Share of facts with at least one live, non-superseded memory node.

    Args:
        db: a connection to a ``sqlite-graph`` store's ``graph.db``.

    Returns:
        ``live valid facts / valid facts``; ``None`` when no node has a fact.
    """
    total, live = db.execute(_VALID_FACTS_SQL).fetchall()[0]
    return live / total if total else None


def decay_sweep(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    work_dir: str | Path,
    days: Iterable[int] = range(0, 366, 7),
    k: int = 10,
    rerun_unchanged: bool = False,
) -> pl.DataFrame:
    """Run the graph arm's decay job day by day and measure retrieval (module docstring).

    A day on which the job prunes nothing leaves the store's searchable rows as they were
    (the job otherwise only rewrites ``confidence``, which the arm's ranking does not
    read), so its measures are those of the day before and the queries are not rerun.

    Args:
        corpus_dir: corpus directory (memories, queries, qrels Parquet files).
        embeddings_path: embeddings Parquet holding every memory and query id.
        work_dir: directory for the store (``work_dir/sqlite-graph/graph.db``, replaced).
        days: simulated days (deduplicated and processed in ascending order; >= 0).
        k: result length per query and the nDCG cut-off.
        rerun_unchanged: run every query on every day, pruned or not (the check that
            carrying the measures over changes nothing).

    Returns:
        One row per day with the columns of :data:`DECAY_SCHEMA`, ascending ``day``.

    Raises:
        ValueError: on a negative day, no day, or ``k < 1``.
        agentmem.arms.base.ArmError: when the store fails.
    """
    todo = sorted({int(d) for d in days})
    if not todo or todo[0] < 0:
        raise ValueError(f"days must be non-empty and >= 0, got {todo[:5]}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    corpus = load_corpus(corpus_dir)
    vectors = load_embeddings(embeddings_path)
    tokens = memory_tokens(corpus.memories)
    queries = [q for q in load_queries(corpus_dir, vectors) if q.query_class in EVALUATED_CLASSES]
    qrels = load_qrels(corpus_dir)
    relevant: dict[str, set[str]] = {}
    for qid, mid in zip(qrels["query_id"], qrels["memory_id"], strict=True):
        relevant.setdefault(qid, set()).add(mid)
    n_nodes = corpus.memories.height
    store = Path(work_dir) / SqliteGraphArm.name
    arm = SqliteGraphArm()
    rows = []
    try:
        arm.build(corpus, vectors, store)
        db = apsw.Connection(str(store / DB_NAME), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            for day in todo:
                stats = arm.decay(day)
                if rows and not stats["pruned"] and not rerun_unchanged:
                    rows.append({**rows[-1], "day": day})
                    continue
                ndcg: dict[str, list[float]] = {c: [] for c in EVALUATED_CLASSES}
                toks: list[int] = []
                for q in queries:
                    ids = arm.query(q, k).memory_ids[:k]
                    toks.append(sum(tokens[m] for m in ids))
                    ndcg[q.query_class].append(ndcg_at_k(ids, relevant[q.query_id], k))
                rows.append(
                    {
                        "day": day,
                        "pruned_fraction": 1.0 - stats["live"] / n_nodes if n_nodes else 0.0,
                        "context_tokens_per_query": sum(toks) / len(toks) if toks else None,
                        "currency_ndcg": (
                            sum(ndcg["currency"]) / len(ndcg["currency"])
                            if ndcg["currency"]
                            else None
                        ),
                        "lexical_ndcg": (
                            sum(ndcg["lexical"]) / len(ndcg["lexical"]) if ndcg["lexical"] else None
                        ),
                        "valid_fact_recall": valid_fact_recall(db),
                    }
                )
        finally:
            db.close()
    finally:
        arm.close()
    return pl.DataFrame(rows, schema=DECAY_SCHEMA, orient="row")


def decay_job(input: Any, output: Any, params: Any) -> None:
    """The decay sweep as a workflow job (:func:`agentmem.jobs.run_entry`).

    Args:
        input: the corpus files (``memories``, ``sessions``, ``facts``, ``entities``,
            ``queries``, ``qrels``) and ``embeddings``, that corpus's vectors.
        output: ``table``, the CSV written (:data:`DECAY_SCHEMA`), and ``work_dir``, where
            the graph store is built.
        params: ``settings``, config ``seed_systems.decay`` whole (a mapping validated
            through :class:`~agentmem.config.DecayConfig`: its days and ``k``).

    Raises:
        pydantic.ValidationError: when ``settings`` is not a valid decay section.
    """
    cfg = DecayConfig.model_validate(params.settings)
    table = decay_sweep(
        corpus_dir(input, *CORPUS_TABLES, "queries", "qrels"),
        input.embeddings,
        output.work_dir,
        days=cfg.days(),
        k=cfg.k,
    )
    write_csv(output.table, table)
