"""Metrics against hand-computed values."""

import math

import polars as pl
import pytest

from agentmem.metrics import (
    bootstrap_ci,
    ndcg_at_k,
    per_query,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    summarize,
)


def test_mixed_ranking_by_hand():
    ranked = ["a", "x", "b", "y"]
    rel = {"a", "b", "c"}
    assert precision_at_k(ranked, rel) == 0.5  # 2 relevant of 4 returned
    assert recall_at_k(ranked, rel) == pytest.approx(2 / 3)
    assert reciprocal_rank(ranked, rel) == 1.0
    # DCG = 1/log2(2) + 1/log2(4) = 1.5 ; IDCG = 1 + 1/log2(3) + 1/log2(4) = 2.1309297535714578
    assert ndcg_at_k(ranked, rel) == pytest.approx(1.5 / 2.1309297535714578)
    assert ndcg_at_k(ranked, rel) == pytest.approx(0.70392, abs=1e-5)


def test_single_relevant_at_rank_three():
    ranked = ["x", "y", "a"]
    assert reciprocal_rank(ranked, {"a"}) == pytest.approx(1 / 3)
    assert ndcg_at_k(ranked, {"a"}) == pytest.approx(0.5)  # 1/log2(4)
    assert precision_at_k(ranked, {"a"}) == pytest.approx(1 / 3)


def test_empty_result_scores_zero():
    assert precision_at_k([], {"a"}) == 0.0
    assert recall_at_k([], {"a"}) == 0.0
    assert ndcg_at_k([], {"a"}) == 0.0
    assert reciprocal_rank([], {"a"}) == 0.0


def test_cutoff_excludes_rank_eleven():
    ranked = [f"x{i}" for i in range(10)] + ["a"]
    assert recall_at_k(ranked, {"a"}, k=10) == 0.0
    assert reciprocal_rank(ranked, {"a"}, k=10) == 0.0
    assert reciprocal_rank(ranked, {"a"}) == pytest.approx(1 / 11)


def test_ideal_dcg_capped_at_k():
    rel = {f"r{i}" for i in range(15)}
    ranked = sorted(rel)[:10]
    assert ndcg_at_k(ranked, rel) == pytest.approx(1.0)
    assert recall_at_k(ranked, rel) == pytest.approx(10 / 15)


def test_duplicates_count_once():
    assert ndcg_at_k(["a", "a"], {"a", "b"}) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_undefined_without_relevant():
    with pytest.raises(ValueError, match="no relevant"):
        ndcg_at_k(["a"], set())
    with pytest.raises(ValueError, match="no relevant"):
        recall_at_k(["a"], set())


def test_per_query_and_summary():
    runs = pl.DataFrame(
        {
            "query_id": ["q1", "q1", "q2", "q3"],
            "rank": [1, 2, None, 1],
            "memory_id": ["a", "b", None, "c"],
            "count": [None, None, None, 4],
            "latency_ms": [1.0, 1.0, 3.0, 2.0],
        },
        schema_overrides={"rank": pl.Int32, "count": pl.Int64},
    )
    qrels = pl.DataFrame({"query_id": ["q1", "q2", "q3", "q3"], "memory_id": ["b", "z", "c", "d"]})
    queries = pl.DataFrame(
        {
            "query_id": ["q1", "q2", "q3"],
            "class": ["lexical", "lexical", "aggregate"],
            "expected_count": [None, None, 4],
        },
        schema_overrides={"expected_count": pl.Int32},
    )
    s = per_query(runs, qrels, queries)
    row = {r["query_id"]: r for r in s.iter_rows(named=True)}
    assert row["q1"]["mrr"] == 0.5
    assert row["q1"]["ndcg_at_10"] == pytest.approx(1 / math.log2(3))
    assert row["q2"]["returned"] == 0 and row["q2"]["ndcg_at_10"] == 0.0
    assert row["q3"]["exact_count"] is True and row["q3"]["recall_at_10"] == 0.5
    assert row["q1"]["exact_count"] is None
    summ = {r["query_class"]: r for r in summarize(s).iter_rows(named=True)}
    assert summ["lexical"]["n_queries"] == 2
    assert summ["lexical"]["mrr"] == 0.25
    assert summ["lexical"]["exact_count_rate"] is None
    assert summ["aggregate"]["exact_count_rate"] == 1.0
    assert summ["all"]["n_queries"] == 3
    assert summ["all"]["p50_ms"] == 2.0


def test_per_query_rejects_missing_run():
    runs = pl.DataFrame(
        {"query_id": ["q1"], "rank": [1], "memory_id": ["a"], "count": [None], "latency_ms": [1.0]}
    )
    qrels = pl.DataFrame({"query_id": ["q1", "q2"], "memory_id": ["a", "b"]})
    queries = pl.DataFrame(
        {"query_id": ["q1", "q2"], "class": ["lexical"] * 2, "expected_count": [None, None]}
    )
    with pytest.raises(ValueError, match="q2 has no rows"):
        per_query(runs, qrels, queries)


def test_bootstrap_ci_brackets_mean_and_is_seeded():
    vals = [0.0, 1.0] * 50
    lo, hi = bootstrap_ci(vals, seed=3)
    assert lo < 0.5 < hi
    assert (lo, hi) == bootstrap_ci(vals, seed=3)
    assert bootstrap_ci([0.7] * 10) == (pytest.approx(0.7), pytest.approx(0.7))
