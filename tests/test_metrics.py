"""Metrics against hand-computed values and against trec_eval / MS MARCO (ir-measures)."""

import math
from pathlib import Path

import ir_measures
import polars as pl
import pytest
from ir_measures import RR, P as Precision, R, nDCG

from agentmem.metrics import (
    bootstrap_ci,
    bootstrap_cis,
    fill_rate,
    ndcg_at_k,
    per_query,
    precision_at_k,
    query_filters,
    recall_at_k,
    reciprocal_rank,
    searchable_counts,
    stale_exposure,
    summarize,
    superseded_ids,
)
from agentmem.types import Predicate


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


def test_fill_rate_by_hand():
    # an HNSW scan capped at 40 rows, asked for 50 of 5,000 memories: 40 / 50
    assert fill_rate(40, 50, 5000) == 0.8
    assert fill_rate(40, 50) == 0.8  # searchable set unknown: k slots
    # a scope of 7 memories answered in full: 7 / min(50, 7)
    assert fill_rate(7, 50, 7) == 1.0
    assert fill_rate(3, 50, 7) == pytest.approx(3 / 7)
    assert fill_rate(60, 50, 5000) == 1.0  # only the first k count
    assert fill_rate(0, 10, 0) == 1.0  # no slot: nothing missed
    assert fill_rate(0, 10, 4) == 0.0
    with pytest.raises(ValueError):
        fill_rate(1, 0)
    with pytest.raises(ValueError):
        fill_rate(-1, 10)


def test_searchable_counts_follow_scope_and_predicate():
    mem = pl.DataFrame(
        {
            "memory_id": ["m1", "m2", "m3", "m4"],
            "created_day": [1, 5, 9, 2],
            "superseded_by": [None, "m3", None, None],
            "scope_id": ["u", None, "u", "v"],
        }
    )
    queries = pl.DataFrame(
        {
            "query_id": ["plain", "scoped", "day", "current", "nobody"],
            "predicate_field": [None, None, "created_day", "superseded_by", None],
            "predicate_op": [None, None, "<=", "is_null", None],
            "predicate_value": [None, None, "5", None, None],
            "scope_id": [None, "u", "u", None, "w"],
        }
    )
    f = query_filters(queries)
    assert f["day"] == (Predicate("scope_id", "=", "u"), Predicate("created_day", "<=", 5))
    assert f["plain"] == ()
    # by hand: plain all 4; scope u = m1, m3; u and day <= 5 = m1; not superseded = m1, m3,
    # m4; scope w holds none
    assert searchable_counts(mem, f) == {
        "plain": 4,
        "scoped": 2,
        "day": 1,
        "current": 3,
        "nobody": 0,
    }
    unscoped = searchable_counts(mem, query_filters(queries, scoped=False))
    assert unscoped == {"plain": 4, "scoped": 4, "day": 3, "current": 3, "nobody": 4}
    # a missing column reads as null, as Predicate.matches does
    assert searchable_counts(mem.drop("scope_id"), f)["scoped"] == 0


def test_per_query_fill_and_short_share():
    # k = 2; q1 returns 2 of 3 searchable (fill 1), q2 1 of 3 (1/2), q3 nothing of 0 (1),
    # q4 1 with its searchable set unknown (k slots: 1/2)
    runs = pl.DataFrame(
        {
            "query_id": ["q1", "q1", "q2", "q3", "q4"],
            "rank": [1, 2, 1, None, 1],
            "memory_id": ["a", "b", "a", None, "c"],
            "count": [None] * 5,
            "latency_ms": [1.0] * 5,
        },
        schema_overrides={"rank": pl.Int32, "count": pl.Int64},
    )
    qrels = pl.DataFrame({"query_id": ["q1", "q2", "q3", "q4"], "memory_id": ["a"] * 4})
    queries = pl.DataFrame(
        {
            "query_id": ["q1", "q2", "q3", "q4"],
            "class": ["semantic", "semantic", "temporal", "temporal"],
            "expected_count": [None] * 4,
        },
        schema_overrides={"expected_count": pl.Int32},
    )
    s = per_query(runs, qrels, queries, k=2, searchable={"q1": 3, "q2": 3, "q3": 0})
    assert s["fill_at_10"].to_list() == [1.0, 0.5, 1.0, 0.5]
    summ = {r["query_class"]: r for r in summarize(s).iter_rows(named=True)}
    assert (summ["semantic"]["fill_at_10"], summ["semantic"]["short_at_10"]) == (0.75, 0.5)
    assert (summ["temporal"]["fill_at_10"], summ["temporal"]["short_at_10"]) == (0.75, 0.5)
    assert (summ["all"]["fill_at_10"], summ["all"]["short_at_10"]) == (0.75, 0.5)
    # per-query scores written without the column: the summary leaves both null
    old = summarize(s.drop("fill_at_10"))
    assert old["fill_at_10"].null_count() == old["short_at_10"].null_count() == old.height


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


def test_stale_exposure_two_of_four_superseded():
    # s1 and s2 are superseded; z is superseded but not returned
    assert stale_exposure(["a", "s1", "b", "s2"], {"s1", "s2", "z"}) == 0.5
    assert stale_exposure(["a", "b"], {"s1"}) == 0.0
    assert stale_exposure(["s1"], {"s1"}) == 1.0


def test_stale_exposure_respects_the_cutoff():
    ranked = ["a", "b", "s1", "s2"]
    assert stale_exposure(ranked, {"s1", "s2"}, k=2) == 0.0  # both stale ones below k
    assert stale_exposure(ranked, {"s1", "s2"}, k=3) == pytest.approx(1 / 3)
    assert stale_exposure(ranked, {"s1", "s2"}, k=10) == 0.5  # fewer than k: ÷ returned
    assert stale_exposure(["s1", "a", "b"], {"s1"}, k=1) == 1.0


def test_stale_exposure_of_an_empty_result_is_undefined():
    assert math.isnan(stale_exposure([], {"s1"}))
    assert math.isnan(stale_exposure(["s1"], {"s1"}, k=0))


def test_superseded_ids_are_the_rows_with_superseded_by():
    mem = pl.DataFrame(
        {"memory_id": ["m1", "m2", "m3"], "superseded_by": ["m3", None, None]},
        schema_overrides={"superseded_by": pl.String},
    )
    assert superseded_ids(mem) == {"m1"}


def test_per_query_stale_exposure_excludes_empty_results_from_the_mean():
    runs = pl.DataFrame(
        {
            "query_id": ["q1", "q1", "q1", "q1", "q2", "q3", "q3"],
            "rank": [1, 2, 3, 4, None, 1, 2],
            "memory_id": ["s1", "a", "s2", "b", None, "a", "b"],
            "count": [None] * 7,
            "latency_ms": [1.0] * 7,
        },
        schema_overrides={"rank": pl.Int32, "count": pl.Int64},
    )
    qrels = pl.DataFrame({"query_id": ["q1", "q2", "q3"], "memory_id": ["a", "a", "a"]})
    queries = pl.DataFrame(
        {"query_id": ["q1", "q2", "q3"], "class": ["currency"] * 3, "expected_count": [None] * 3},
        schema_overrides={"expected_count": pl.Int32},
    )
    s = per_query(runs, qrels, queries, superseded={"s1", "s2"})
    stale = dict(zip(s["query_id"], s["stale_exposure"], strict=True))
    assert stale == {"q1": 0.5, "q2": None, "q3": 0.0}
    summ = {r["query_class"]: r for r in summarize(s).iter_rows(named=True)}
    # (0.5 + 0.0) / 2 over the two queries that returned something, not / 3
    assert summ["currency"]["stale_exposure"] == 0.25
    assert summ["all"]["stale_exposure"] == 0.25
    assert summ["currency"]["n_queries"] == 3
    # k = 1 cuts q1 to [s1]
    s1 = per_query(runs, qrels, queries, k=1, superseded={"s1", "s2"})
    assert s1.filter(pl.col("query_id") == "q1")["stale_exposure"].item() == 1.0
    # without the superseded set the metric is not measured
    assert per_query(runs, qrels, queries)["stale_exposure"].null_count() == 3


def test_bootstrap_ci_brackets_mean_and_is_seeded():
    vals = [0.0, 1.0] * 50
    lo, hi = bootstrap_ci(vals, seed=3)
    assert lo < 0.5 < hi
    assert (lo, hi) == bootstrap_ci(vals, seed=3)
    assert bootstrap_ci([0.7] * 10) == (pytest.approx(0.7), pytest.approx(0.7))


def test_bootstrap_cis_match_one_at_a_time_and_scipy():
    a = [0.0, 1.0, 1.0, 0.5] * 25
    b = [1.0, 0.0, 0.25, 0.0] * 25
    both = bootstrap_cis([a, b], n_boot=500, seed=4)
    one_each = [bootstrap_ci(a, n_boot=500, seed=4), bootstrap_ci(b, n_boot=500, seed=4)]
    assert both == [pytest.approx(ci, abs=1e-12) for ci in one_each]
    assert bootstrap_cis([[], []]) == [(pytest.approx(math.nan, nan_ok=True),) * 2] * 2
    with pytest.raises(ValueError, match="one length"):
        bootstrap_cis([a, b[:-1]])
    # the same resamples drawn as indices and averaged one by one: the same interval
    import numpy as np

    idx = np.random.default_rng(4).integers(0, len(a), size=(500, len(a)))
    for x, (lo, hi) in zip((a, b), both, strict=True):
        direct = np.asarray(x)[idx].mean(axis=1)
        assert (lo, hi) == pytest.approx(tuple(np.quantile(direct, [0.025, 0.975])), abs=1e-12)
    # the percentile interval of scipy's own resampler: the same within resampling noise
    from scipy.stats import bootstrap

    ref = bootstrap((np.array(a),), np.mean, n_resamples=4000, method="percentile", rng=1)
    lo, hi = bootstrap_ci(a, n_boot=4000, seed=1)
    assert lo == pytest.approx(ref.confidence_interval.low, abs=0.02)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=0.02)


def _library_scores(runs: pl.DataFrame, qrels: pl.DataFrame, k: int) -> dict[str, dict]:
    """Per query: trec_eval's nDCG@k, R@k, P@k and RR, MS MARCO's RR@k (ir-measures)."""
    judged = {}
    for q, m in zip(qrels["query_id"], qrels["memory_id"], strict=True):
        judged.setdefault(q, {})[m] = 1  # binary: every qrels row is relevant
    ranked = runs.filter(pl.col("memory_id").is_not_null()).sort("query_id", "rank")
    run: dict[str, dict[str, float]] = {}
    for q, m, rank in ranked.select("query_id", "memory_id", "rank").iter_rows():
        assert m not in run.get(q, {}), (q, m)  # an arm returns each id once
        run.setdefault(q, {})[m] = -float(rank)  # distinct scores: the arm's own order
    out: dict[str, dict] = {}
    trec = ir_measures.pytrec_eval.iter_calc([nDCG @ k, R @ k, Precision @ k, RR], judged, run)
    for measure in (*trec, *ir_measures.msmarco.iter_calc([RR @ k], judged, run)):
        out.setdefault(measure.query_id, {})[str(measure.measure)] = measure.value
    return out


def test_smoke_run_scores_equal_trec_eval_and_ms_marco(smoke_run: Path):
    """The smoke run's per-query scores, every arm, against ir-measures to 1e-9.

    Conventions, ours -> the library's (ir-measures 0.4.3):

    - qrels are binary: every qrels row is relevant with gain 1 (trec_eval's ``rel = 1``).
    - nDCG@10 = trec_eval ``ndcg_cut_10`` (gain = rel, discount log2(rank + 1), ideal DCG of
      the judged relevant set cut at 10): equal.
    - recall@10 = trec_eval ``recall_10``: equal.
    - MRR is cut at k = 10 (``per_query`` passes k): MS MARCO's ``RR@10`` (its MRR@10
      script); ``reciprocal_rank`` without a cut-off equals trec_eval's ``recip_rank``.
    - precision@10 divides by the number returned, trec_eval's ``P_10`` by 10:
      ours = P_10 * 10 / min(returned, 10), and 0 when nothing is returned.
    - The run is handed over as scores -rank, so trec_eval's sort by score keeps the arm's
      ranking; a query with nothing returned scores 0 on every measure in both.
    """
    k = 10
    qrels = pl.read_parquet(smoke_run / "results/corpus/xs/qrels.parquet")
    relevant: dict[str, set[str]] = {}
    for q, m in zip(qrels["query_id"], qrels["memory_id"], strict=True):
        relevant.setdefault(q, set()).add(m)
    runs_dir = smoke_run / "results/runs/xs"
    arms = sorted(p.stem for p in runs_dir.glob("*.parquet"))
    assert len(arms) >= 5
    compared = 0
    partial = 0
    for arm in arms:
        runs = pl.read_parquet(runs_dir / f"{arm}.parquet")
        ours = pl.read_parquet(smoke_run / f"results/metrics/xs/{arm}.parquet")
        lib = _library_scores(runs, qrels, k)
        ranked: dict[str, list[str]] = {}
        for q, m in runs.sort("query_id", "rank").select("query_id", "memory_id").iter_rows():
            ranked.setdefault(q, [])
            if m is not None:
                ranked[q].append(m)
        for row in ours.iter_rows(named=True):
            q = row["query_id"]
            got = lib.get(q, {})
            want_p = got.get(f"P@{k}", 0.0) * k / row["returned"] if row["returned"] else 0.0
            pairs = [
                ("ndcg_at_10", row["ndcg_at_10"], got.get(f"nDCG@{k}", 0.0)),
                ("recall_at_10", row["recall_at_10"], got.get(f"R@{k}", 0.0)),
                ("mrr", row["mrr"], got.get(f"RR@{k}", 0.0)),
                ("precision_at_10", row["precision_at_10"], want_p),
                ("rr uncut", reciprocal_rank(ranked[q], relevant[q]), got.get("RR", 0.0)),
            ]
            for name, a, b in pairs:
                assert a == pytest.approx(b, abs=1e-9, rel=0), (arm, q, name, a, b)
            compared += 1
            partial += 0 < row["ndcg_at_10"] < 1
    # not vacuous: every arm's every query, many of them neither 0 nor 1
    assert compared == len(arms) * qrels["query_id"].n_unique()
    assert partial > 20
