"""Scoring runs on the LoCoMo corpus at turn and session level (no LLM).

Session level keeps each session at the rank of its best turn (``docs/LOCOMO.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from agentmem.external.locomo.prepare import QUERY_CLASSES
from agentmem.external.locomo.published import write_comparison_md
from agentmem.io import write_csv
from agentmem.metrics import bootstrap_ci, ndcg_at_k, recall_at_k, reciprocal_rank

LEVELS = ("turn", "session")
METRIC_COLUMNS = (
    "recall_at_1",
    "recall_at_5",
    "recall_at_10",
    "ndcg_at_10",
    "mrr",
    "hit_at_1",
    "ndcg_at_5",
)
SCORE_COLUMNS = ("arm", "level", "category", "n_queries", *METRIC_COLUMNS)


def session_ranking(ranked_turns: Sequence[str], session_of: Mapping[str, str]) -> list[str]:
    """Sessions of ``ranked_turns`` best-first, each at the rank of its best (first) turn.

    Raises:
        KeyError: when a ranked memory id is not in ``session_of``.
    """
    out: list[str] = []
    seen: set[str] = set()
    for m in ranked_turns:
        s = session_of[m]
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def level_scores(ranked: Sequence[str], relevant: set[str]) -> dict[str, float]:
    """The metric columns for one ranked list (turns or sessions) against its gold set.

    recall@k = |gold ∩ top k| / |gold|; nDCG@k binary (Järvelin & Kekäläinen 2002); MRR =
    1/rank of the first gold item in the list (0 if none; Voorhees, TREC-8 QA); Hit@1 = 1
    when the first item is gold.

    Raises:
        ValueError: when ``relevant`` is empty.
    """
    return {
        "recall_at_1": recall_at_k(ranked, relevant, 1),
        "recall_at_5": recall_at_k(ranked, relevant, 5),
        "recall_at_10": recall_at_k(ranked, relevant, 10),
        "ndcg_at_10": ndcg_at_k(ranked, relevant, 10),
        "mrr": reciprocal_rank(ranked, relevant),
        "hit_at_1": float(bool(ranked) and ranked[0] in relevant),
        "ndcg_at_5": ndcg_at_k(ranked, relevant, 5),
    }


def _gold(df: pl.DataFrame, col: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for q, v in zip(df["query_id"], df[col], strict=True):
        out.setdefault(q, set()).add(v)
    return out


def per_query_scores(corpus_dir: str | Path, runs: pl.DataFrame, arm: str = "") -> pl.DataFrame:
    """Score every query of one run at turn and session level.

    Args:
        corpus_dir: a directory written by :func:`prepare_locomo`.
        runs: the runner's rows (query_id, rank, memory_id; a null memory_id marks an
            empty result).
        arm: arm name, for error messages and the ``arm`` column.

    Returns:
        One row per (query, level): arm, query_id, category, level and the metric columns.

    Raises:
        ValueError: a corpus query has no run rows, the run holds a query the corpus lacks,
            or a ranked memory id is not in the corpus.
    """
    d = Path(corpus_dir)
    queries = pl.read_parquet(d / "queries.parquet", columns=["query_id", "class"])
    mem = pl.read_parquet(d / "memories.parquet", columns=["memory_id", "session_id"])
    session_of = dict(zip(mem["memory_id"], mem["session_id"], strict=True))
    gold_turn = _gold(pl.read_parquet(d / "qrels.parquet"), "memory_id")
    gold_session = _gold(pl.read_parquet(d / "qrels_session.parquet"), "session_id")
    ranked: dict[str, list[str]] = {}
    for row in runs.sort("query_id", "rank", nulls_last=True).iter_rows(named=True):
        lst = ranked.setdefault(row["query_id"], [])
        if row["memory_id"] is not None:
            lst.append(row["memory_id"])
    extra = set(ranked) - set(queries["query_id"])
    if extra:
        raise ValueError(
            f"run of {arm or 'an arm'} holds {len(extra)} queries not in {d} "
            f"(e.g. {sorted(extra)[0]}): run and corpus differ"
        )
    rows = []
    for qid, cls in queries.iter_rows():
        if qid not in ranked:
            raise ValueError(f"query {qid} has no rows in the run of {arm or 'an arm'}")
        turns = ranked[qid]
        unknown = [m for m in turns if m not in session_of]
        if unknown:
            raise ValueError(f"run of {arm or 'an arm'}: {unknown[0]} is not a memory of {d}")
        sess = session_ranking(turns, session_of)
        for level, r, gold in (
            ("turn", turns, gold_turn[qid]),
            ("session", sess, gold_session[qid]),
        ):
            rows.append(
                {"arm": arm, "query_id": qid, "category": cls, "level": level}
                | level_scores(r, gold)
            )
    schema = {
        "arm": pl.String,
        "query_id": pl.String,
        "category": pl.String,
        "level": pl.String,
    } | dict.fromkeys(METRIC_COLUMNS, pl.Float64)
    return pl.DataFrame(rows, schema=schema)


def _categories(present: Sequence[str]) -> list[str]:
    order = [*QUERY_CLASSES, "adversarial"]
    return [c for c in order if c in present] + sorted(set(present) - set(order)) + ["all"]


def score_locomo(
    corpus_dir: str | Path,
    runs: Mapping[str, str | Path],
    out_csv: str | Path,
    n_boot: int = 1000,
    seed: int = 0,
    ci_csv: str | Path | None = None,
    comparison_md: str | Path | None = None,
) -> pl.DataFrame:
    """Score each arm's run at turn and session level, per category and overall.

    Args:
        corpus_dir: a directory written by :func:`prepare_locomo`.
        runs: arm name -> runs Parquet of the runner (``results/runs/...``), in table order.
        out_csv: the scores table to write (columns exactly :data:`SCORE_COLUMNS`).
        n_boot: bootstrap resamples for the confidence intervals.
        seed: bootstrap seed (the same for every group, so the CIs are reproducible).
        ci_csv: where to write the CIs (default: ``<out_csv stem>_ci.csv`` beside it):
            arm, level, category, n_queries and, per metric, ``<m>``, ``<m>_lo``,
            ``<m>_hi`` (95 % percentile bootstrap over queries, Efron & Tibshirani 1993).
        comparison_md: when given, also write :func:`write_comparison_md` there.

    Returns:
        The scores table: one row per arm × level (turn, session) × category (each class
        present, then ``all``); metrics are means over the category's queries.

    Raises:
        ValueError: no runs given, or as :func:`per_query_scores`.
    """
    parts = [per_query_scores(corpus_dir, pl.read_parquet(p), arm=arm) for arm, p in runs.items()]
    if not parts:
        raise ValueError("score_locomo needs at least one run")
    pq = pl.concat(parts)
    cats = _categories(pq["category"].unique().to_list())
    rows, ci_rows = [], []
    for arm in runs:
        for level in LEVELS:
            sub = pq.filter((pl.col("arm") == arm) & (pl.col("level") == level))
            for cat in cats:
                g = sub if cat == "all" else sub.filter(pl.col("category") == cat)
                base = {"arm": arm, "level": level, "category": cat, "n_queries": g.height}
                means = {m: (float(g[m].mean()) if g.height else math.nan) for m in METRIC_COLUMNS}
                rows.append(base | means)
                ci = dict(base)
                for m in METRIC_COLUMNS:
                    lo, hi = bootstrap_ci(g[m].to_list(), n_boot=n_boot, seed=seed)
                    ci |= {m: means[m], f"{m}_lo": lo, f"{m}_hi": hi}
                ci_rows.append(ci)
    key_schema = {
        "arm": pl.String,
        "level": pl.String,
        "category": pl.String,
        "n_queries": pl.Int64,
    }
    scores = pl.DataFrame(rows, schema=key_schema | dict.fromkeys(METRIC_COLUMNS, pl.Float64))
    ci_schema = dict(key_schema)
    for m in METRIC_COLUMNS:
        ci_schema |= {m: pl.Float64, f"{m}_lo": pl.Float64, f"{m}_hi": pl.Float64}
    cis = pl.DataFrame(ci_rows, schema=ci_schema)
    out = Path(out_csv)
    write_csv(out, scores)
    write_csv(ci_csv or out.with_name(f"{out.stem}_ci.csv"), cis)
    if comparison_md is not None:
        write_comparison_md(out, comparison_md)
    return scores
