"""Bootstrap statistics on hand-made per-query scores, and the figure built from them."""

import math

import numpy as np
import polars as pl
import pytest
from support.paths import REPO

from agentmem.metrics import METRICS
from agentmem.report.stats import (
    CI_SCHEMA,
    PAIRED_SCHEMA,
    bootstrap_table,
    paired_bootstrap,
    seed_spread,
    write_bootstrap,
)


def scores(values: dict[str, list[float]], shift: float = 0.0) -> pl.DataFrame:
    """Per-query scores: class -> nDCG values; other metrics derived (recall = nDCG / 2)."""
    rows = []
    for cls, vals in values.items():
        for i, v in enumerate(vals):
            rows.append(
                {
                    "query_id": f"{cls}-{i:03d}",
                    "query_class": cls,
                    "ndcg_at_10": v + shift,
                    "recall_at_10": (v + shift) / 2,
                    "mrr": 1.0 if v + shift > 0.5 else 0.0,
                    "precision_at_10": 0.1,
                }
            )
    return pl.DataFrame(rows)


LEX = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.3, 0.9]
SEM = [0.5, 0.5, 0.5, 0.5]


def test_bootstrap_ci_brackets_the_mean_and_has_the_right_shape():
    t = bootstrap_table({"a": scores({"lexical": LEX, "semantic": SEM})}, n_boot=500, seed=3)
    assert t.schema == pl.Schema(CI_SCHEMA)
    # classes in study order, then all; metrics in METRICS order
    assert t["query_class"].unique(maintain_order=True).to_list() == ["lexical", "semantic", "all"]
    assert t.height == 3 * len(METRICS)
    lex = t.filter(query_class="lexical", metric="ndcg_at_10").row(0, named=True)
    assert lex["mean"] == pytest.approx(sum(LEX) / 8)  # 0.525
    assert lex["n"] == 8
    assert lex["ci_low"] < lex["mean"] < lex["ci_high"]
    assert 0.0 <= lex["ci_low"] and lex["ci_high"] <= 1.0
    everything = t.filter(query_class="all", metric="ndcg_at_10").row(0, named=True)
    assert everything["n"] == 12
    assert everything["mean"] == pytest.approx((sum(LEX) + 2.0) / 12)
    # a constant group has a zero-width interval at its value
    sem = t.filter(query_class="semantic", metric="ndcg_at_10").row(0, named=True)
    assert sem["ci_low"] == pytest.approx(0.5) and sem["ci_high"] == pytest.approx(0.5)
    # recall = nDCG / 2 on every query, and the metrics share the resamples
    rec = t.filter(query_class="lexical", metric="recall_at_10").row(0, named=True)
    assert rec["ci_low"] == pytest.approx(lex["ci_low"] / 2)
    assert rec["ci_high"] == pytest.approx(lex["ci_high"] / 2)


def test_bootstrap_is_seeded_and_independent_of_the_other_arms():
    a = scores({"lexical": LEX})
    t1 = bootstrap_table({"a": a}, n_boot=300, seed=7)
    t2 = bootstrap_table({"a": a}, n_boot=300, seed=7)
    assert t1.equals(t2)
    t3 = bootstrap_table({"a": a}, n_boot=300, seed=8)
    assert not t1.equals(t3)
    # adding another arm in front does not change arm a's intervals
    t4 = bootstrap_table({"b": scores({"lexical": SEM}), "a": a}, n_boot=300, seed=7)
    assert t4.filter(arm="a").equals(t1)


def test_bootstrap_interval_matches_a_direct_percentile_bootstrap_in_width():
    # a 0/1 metric with p = 0.5 over 100 queries: the 95 % CI half-width is about
    # 1.96 * sqrt(0.25 / 100) = 0.098
    vals = [0.0, 1.0] * 50
    row = (
        bootstrap_table({"a": scores({"lexical": vals})}, n_boot=2000, seed=0)
        .filter(query_class="all", metric="ndcg_at_10")
        .row(0, named=True)
    )
    assert row["mean"] == pytest.approx(0.5)
    assert (row["ci_high"] - row["ci_low"]) / 2 == pytest.approx(0.098, abs=0.012)


def test_bootstrap_rejects_bad_input():
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_table({"a": scores({"lexical": LEX})}, n_boot=0)
    with pytest.raises(ValueError, match="lack columns"):
        bootstrap_table({"a": scores({"lexical": LEX}).drop("mrr")})


def test_paired_bootstrap_of_a_constant_difference_is_that_constant():
    b = scores({"lexical": [0.1, 0.2, 0.3, 0.4], "hybrid": [0.0, 0.5]})
    a = scores({"lexical": [0.1, 0.2, 0.3, 0.4], "hybrid": [0.0, 0.5]}, shift=0.25)
    t = paired_bootstrap({"a": a, "b": b}, [("a", "b")], n_boot=400, seed=1)
    assert t.schema == pl.Schema(PAIRED_SCHEMA)
    assert t["query_class"].to_list() == ["all", "lexical", "hybrid"]
    assert t["n"].to_list() == [6, 4, 2]
    for r in t.iter_rows(named=True):
        assert r["mean_diff"] == pytest.approx(0.25)
        assert r["ci_low"] == pytest.approx(0.25) and r["ci_high"] == pytest.approx(0.25)
        assert r["ci_high"] - r["ci_low"] < 1e-12
        assert r["p_value"] == 0.0  # every bootstrap difference is above 0
    # reversed pair: the sign flips, still p = 0
    r = paired_bootstrap({"a": a, "b": b}, [("b", "a")], n_boot=100).row(0, named=True)
    assert r["mean_diff"] == pytest.approx(-0.25) and r["p_value"] == 0.0


def test_paired_bootstrap_pairs_by_query_id_and_gives_p_one_for_no_difference():
    a = scores({"lexical": LEX})
    shuffled = a.reverse()  # same queries, other row order
    t = paired_bootstrap({"a": a, "b": shuffled}, [("a", "b")], n_boot=200)
    r = t.filter(query_class="all").row(0, named=True)
    assert r["mean_diff"] == 0.0 and r["ci_low"] == 0.0 and r["ci_high"] == 0.0
    assert r["p_value"] == 1.0


def test_paired_bootstrap_p_value_is_the_two_sided_share_beyond_zero():
    # differences: one query +1, three queries 0 -> mean 0.25; a resample mean is 0 only
    # when the +1 query is never drawn: P = (3/4)^4 = 0.3164, so p = 2 * 0.3164 = 0.633
    b = scores({"lexical": [0.0, 0.0, 0.0, 0.0]})
    a = scores({"lexical": [1.0, 0.0, 0.0, 0.0]})
    r = paired_bootstrap({"a": a, "b": b}, [("a", "b")], n_boot=20000, seed=5).row(0, named=True)
    assert r["mean_diff"] == pytest.approx(0.25)
    assert r["p_value"] == pytest.approx(2 * 0.75**4, abs=0.03)
    assert r["ci_low"] == 0.0


def test_paired_bootstrap_errors():
    a = scores({"lexical": LEX})
    with pytest.raises(KeyError, match="zzz"):
        paired_bootstrap({"a": a}, [("a", "zzz")])
    other = a.with_columns(pl.col("query_id") + "-x")
    with pytest.raises(ValueError, match="no query in common"):
        paired_bootstrap({"a": a, "b": other}, [("a", "b")])
    with pytest.raises(ValueError, match="metric"):
        paired_bootstrap({"a": a, "b": a}, [("a", "b")], metric="latency_ms")


def test_configured_pairs_are_the_studys_and_ours_and_keep_only_configured_arms():
    from agentmem.config import load_config
    from agentmem.workflow.selection import paired_tests

    cfg = load_config(REPO / "config" / "config.yaml")
    assert paired_tests(cfg) == [
        ["sqlite-fts", "sqlite-hybrid"],
        ["sqlite-gated", "sqlite-fts"],
        ["sqlite-gated", "sqlite-hybrid"],
        ["sqlite-fts", "pg-gin"],
        ["pg-hybrid", "pg-hnsw"],
        ["sqlite-fts", "file-jsonl"],
        ["pg-hnsw-iterative", "pg-hnsw"],
        ["sqlite-hybrid", "pg-hybrid"],
        ["lancedb-hybrid", "sqlite-hybrid"],
        ["chroma", "pg-hnsw"],
    ]
    few = cfg.model_copy(update={"arms": ["sqlite-fts", "sqlite-hybrid", "pg-hnsw"]})
    assert paired_tests(few) == [["sqlite-fts", "sqlite-hybrid"]]


def test_write_bootstrap_from_parquet_files(tmp_path):
    paths = {}
    for arm, shift in (("sqlite-fts", 0.1), ("sqlite-hybrid", 0.0), ("file-jsonl", -0.2)):
        p = tmp_path / f"{arm}.parquet"
        scores({"lexical": [0.3, 0.5, 0.7], "semantic": [0.4, 0.6]}, shift).write_parquet(p)
        paths[arm] = p
    pairs = [
        ["sqlite-fts", "sqlite-hybrid"],
        ["sqlite-fts", "pg-gin"],
        ["sqlite-fts", "file-jsonl"],
    ]
    ci, paired = write_bootstrap(
        paths, tmp_path / "ci.csv", tmp_path / "paired.csv", pairs=pairs, n_boot=200
    )
    assert pl.read_csv(tmp_path / "ci.csv").height == 3 * 3 * len(METRICS)
    got = pl.read_csv(tmp_path / "paired.csv")
    # the pairs whose arms have scores: fts vs hybrid and fts vs jsonl
    assert got.select("arm_a", "arm_b").unique(maintain_order=True).rows() == [
        ("sqlite-fts", "sqlite-hybrid"),
        ("sqlite-fts", "file-jsonl"),
    ]
    d = got.filter(arm_b="file-jsonl", query_class="all")["mean_diff"][0]
    assert d == pytest.approx(0.3)
    # explicit pairs naming a missing arm are dropped, not fatal
    _, p2 = write_bootstrap(
        paths,
        tmp_path / "ci2.csv",
        tmp_path / "p2.csv",
        pairs=[["sqlite-hybrid", "file-jsonl"], ["pg-hybrid", "pg-hnsw"]],
        n_boot=50,
    )
    assert p2.select("arm_a", "arm_b").unique().rows() == [("sqlite-hybrid", "file-jsonl")]
    # no pairs: a paired table with its columns and no rows
    _, p3 = write_bootstrap(paths, tmp_path / "ci3.csv", tmp_path / "p3.csv", pairs=None, n_boot=5)
    assert p3.height == 0 and p3.columns == list(PAIRED_SCHEMA)
    assert pl.read_csv(tmp_path / "p3.csv").columns == list(PAIRED_SCHEMA)


def test_seed_spread_by_hand():
    def table(v_all: float, v_lex: float) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "arm": ["a", "a"],
                "query_class": ["lexical", "all"],
                "ndcg_at_10": [v_lex, v_all],
            }
        )

    t = seed_spread({1: table(0.5, 0.2), 2: table(0.7, 0.4), 3: table(0.6, 0.3)})
    r = t.filter(query_class="all").row(0, named=True)
    assert r["n_seeds"] == 3
    assert r["ndcg_mean"] == pytest.approx(0.6)
    assert r["ndcg_min"] == pytest.approx(0.5) and r["ndcg_max"] == pytest.approx(0.7)
    assert r["ndcg_std"] == pytest.approx(0.1)  # sample std of 0.5, 0.6, 0.7
    lex = t.filter(query_class="lexical").row(0, named=True)
    assert lex["ndcg_mean"] == pytest.approx(0.3)
    one = seed_spread({1: table(0.5, 0.2)}).filter(query_class="all").row(0, named=True)
    assert one["n_seeds"] == 1 and one["ndcg_std"] is None
    with pytest.raises(ValueError):
        seed_spread({})


def test_seed_spread_reads_csv_files(tmp_path):
    for s, v in ((11, 0.25), (12, 0.75)):
        pl.DataFrame({"arm": ["x"], "query_class": ["all"], "ndcg_at_10": [v]}).write_csv(
            tmp_path / f"{s}.csv"
        )
    t = seed_spread({s: tmp_path / f"{s}.csv" for s in (11, 12)})
    r = t.row(0, named=True)
    assert r["ndcg_mean"] == pytest.approx(0.5)
    assert r["ndcg_std"] == pytest.approx(math.sqrt(0.125))


def test_overall_figure_from_the_bootstrap_table(tmp_path):
    from agentmem.report.figures.overall import plot

    metrics = {
        "sqlite-fts": scores({"lexical": LEX}),
        "three-tier": scores({"lexical": LEX}, shift=-0.1),  # not one of the study's arms
    }
    ci = bootstrap_table(metrics, n_boot=100)
    ci.write_csv(tmp_path / "ci.csv")
    plot(tmp_path / "ci.csv", tmp_path / "overall.svg")
    svg = (tmp_path / "overall.svg").read_text()
    assert "sqlite-fts" in svg and "three-tier" in svg and "published" in svg
    png = (tmp_path / "overall.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    with pytest.raises(ValueError, match="no rows"):
        plot(tmp_path / "ci.csv", tmp_path / "x.svg", query_class="negation")
    assert np.isfinite(ci["ci_low"].to_numpy()).all()
