"""The twelve headline findings: the study's values by hand, verdict rules, carried values."""

from __future__ import annotations

import math

import polars as pl
import pytest

from agentmem.report.headline import (
    across_seeds,
    by_class_seeds,
    findings_table,
    trees_from,
)
from agentmem.report.reference import published_lookup
from agentmem.report.reference.findings import DESIGN_FINDINGS, HEADLINE_FINDINGS
from agentmem.report.stats import seed_interval

FINDING = {f.number: f for f in HEADLINE_FINDINGS + DESIGN_FINDINGS}


def lookup(values: dict) -> callable:
    return lambda ref: values.get(ref)


def test_twelve_findings_in_reference_order():
    assert [f.number for f in HEADLINE_FINDINGS] == list(range(1, 13))
    assert {f.number for f in HEADLINE_FINDINGS if not f.corpus_dependent} == {7, 8, 9}


def test_the_study_values_by_hand_and_every_one_holds():
    pub = published_lookup()
    v = lookup(pub)
    expected = {
        1: 0.791 - 0.002,  # sqlite-fts − file-vec, lexical
        # pg-hnsw (.231 + 1 + .043 + 1 + .009) / 5 − file-vec (.164 + 0 + .074 + .015 + .034) / 5
        2: 2.283 / 5 - 0.287 / 5,
        3: 0.651 - 1.0,  # sqlite-hybrid − sqlite-btree (pg: .621 − 1, lower)
        4: 1.0,
        5: 0.723 / 0.726,
        6: 0.489,
        7: math.log(131 / 3.0) / math.log(33197 / 609),
        8: 1.0,
        9: 0.875,
        10: 0.639,
        11: 0.617,
        12: 0.277 - 0.266,
    }
    for num, want in expected.items():
        assert FINDING[num].stat(v) == pytest.approx(want, abs=1e-9), num
        assert FINDING[num].verdict(v) == "holds", num


def test_verdict_rules_hold_weaken_flip():
    f1 = FINDING[1]
    key = lambda arm: ("by_class", arm, "lexical", "ndcg_at_10")  # noqa: E731
    assert f1.verdict(lookup({key("sqlite-fts"): 0.8, key("file-vec"): 0.1})) == "holds"
    assert f1.verdict(lookup({key("sqlite-fts"): 0.4, key("file-vec"): 0.1})) == "weakens"
    assert f1.verdict(lookup({key("sqlite-fts"): 0.1, key("file-vec"): 0.2})) == "flips"
    assert f1.verdict(lookup({key("sqlite-fts"): 0.8})) == "n/a"
    # hybrid currency equal to the B-tree twin's: the drop is gone, the finding flips
    cur = lambda arm: ("by_class", arm, "currency", "ndcg_at_10")  # noqa: E731
    both = {cur("sqlite-hybrid"): 1.0, cur("sqlite-btree"): 1.0}
    assert FINDING[3].stat(lookup(both)) == 0.0
    assert FINDING[3].verdict(lookup(both)) == "flips"
    # the larger gap of the two pairs decides: sqlite −0.05, pg −0.4 -> −0.05, weakens
    mixed = {**both, cur("sqlite-hybrid"): 0.95, cur("pg-hybrid"): 0.6, cur("pg-btree"): 1.0}
    assert FINDING[3].stat(lookup(mixed)) == pytest.approx(-0.05)
    assert FINDING[3].verdict(lookup(mixed)) == "weakens"


def test_the_recommended_design_rule():
    nd = lambda arm, cls="all": ("by_class", arm, cls, "ndcg_at_10")  # noqa: E731
    best = lambda cls="all": ("best_other", "sqlite-gated", cls, "ndcg_at_10")  # noqa: E731
    classes = ("temporal", "provenance", "currency", "aggregate", "negation", "lexical")
    classes += ("semantic", "hybrid")
    even = {nd("sqlite-gated", c): 0.8 for c in classes} | {best(c): 0.8 for c in classes}
    first = {**even, nd("sqlite-gated"): 0.9, best(): 0.76}
    f = FINDING[13]
    assert f.stat(lookup(first)) == pytest.approx(0.14)
    assert f.verdict(lookup(first)) == "holds"
    # first overall but 0.05 below the best other arm on one class: weakens
    assert f.verdict(lookup({**first, nd("sqlite-gated", "temporal"): 0.75})) == "weakens"
    # 0.03 below is still within the slack
    assert f.verdict(lookup({**first, nd("sqlite-gated", "temporal"): 0.77})) == "holds"
    assert f.verdict(lookup({**first, best(): 0.95})) == "flips"
    assert f.verdict(lookup({nd("sqlite-gated"): 0.9})) == "n/a"
    assert published_lookup().get(best()) is None  # the study has no such arm: n/a


def test_best_other_reads_the_by_class_table(tmp_path):
    from agentmem.report.reference import OurResults

    (tmp_path / "tables").mkdir()
    pl.DataFrame(
        {
            "arm": ["sqlite-gated", "sqlite-fts", "pg-gin", "sqlite-gated", "sqlite-fts"],
            "query_class": ["all", "all", "all", "lexical", "lexical"],
            "ndcg_at_10": [0.91, 0.61, 0.64, 0.94, None],
        }
    ).write_csv(tmp_path / "tables/by_class.csv")
    ours = OurResults(tmp_path, "m")
    assert ours.get(("best_other", "sqlite-gated", "all", "ndcg_at_10")) == 0.64
    assert ours.get(("best_other", "pg-gin", "all", "ndcg_at_10")) == 0.91
    assert ours.get(("best_other", "sqlite-gated", "lexical", "ndcg_at_10")) is None  # no value
    assert ours.get(("best_other", "sqlite-gated", "all", "mrr")) is None  # no such column
    assert FINDING[13].stat(ours.get) == pytest.approx(0.27)
    assert FINDING[13].verdict(ours.get) == "n/a"  # no class has two arms: no class gap


def test_compound_rules():
    bpm = lambda arm: ("build", arm, "bytes_per_memory")  # noqa: E731
    overall = lambda arm: ("by_class", arm, "all", "ndcg_at_10")  # noqa: E731
    base = {overall("sqlite-fts"): 0.76, overall("pg-hybrid"): 0.70, bpm("sqlite-fts"): 500}
    # sqlite-fts is the best arm (share 1) but pg-hybrid is only 1.5x its bytes: weakens
    assert FINDING[5].stat(lookup({**base, bpm("pg-hybrid"): 750})) == 1.0
    assert FINDING[5].verdict(lookup({**base, bpm("pg-hybrid"): 750})) == "weakens"
    assert FINDING[5].verdict(lookup({**base, bpm("pg-hybrid"): 4000})) == "holds"
    assert FINDING[5].verdict(lookup({**base, bpm("pg-hybrid"): 400})) == "flips"
    crash = lambda fam: ("crash", fam, "unreadable")  # noqa: E731
    safe = {crash("file-append"): 0, crash("sqlite"): 0, crash("postgres-writer"): 0}
    assert FINDING[8].verdict(lookup({**safe, crash("file-rewrite"): 3})) == "holds"
    assert FINDING[8].verdict(lookup({**safe, crash("file-rewrite"): 0})) == "weakens"
    assert FINDING[8].verdict(lookup({**safe, crash("sqlite"): 1, crash("file-rewrite"): 3})) == (
        "flips"
    )
    cos = lambda cls: ("validation", cls, "mean_cosine")  # noqa: E731
    near = {cos("lexical"): 0.30, cos("semantic"): 0.70, cos("random_pairs"): 0.27}
    assert FINDING[12].verdict(lookup(near)) == "holds"
    assert FINDING[12].verdict(lookup({**near, cos("lexical"): 0.45})) == "weakens"
    assert FINDING[12].verdict(lookup({**near, cos("lexical"): 0.75})) == "flips"


def test_seed_interval_by_hand():
    # mean 2, s = 1, t(0.975, 2) = 4.302653: 2 ± 4.302653 / sqrt(3)
    lo, hi = seed_interval([1.0, 2.0, 3.0])
    assert lo == pytest.approx(2 - 4.302653 / math.sqrt(3), abs=1e-5)
    assert hi == pytest.approx(2 + 4.302653 / math.sqrt(3), abs=1e-5)
    assert seed_interval([0.5, 0.5]) == (0.5, 0.5)
    assert seed_interval([0.5]) is None
    assert seed_interval([0.5, None, float("nan")]) is None


def _tree(root, size: str, fts_lexical: float) -> None:
    tables = root / "tables"
    tables.mkdir(parents=True)
    rows = [
        ("sqlite-fts", "lexical", fts_lexical),
        ("file-vec", "lexical", 0.05),
    ]
    pl.DataFrame(rows, schema=["arm", "query_class", "ndcg_at_10"], orient="row").write_csv(
        tables / f"by_class_{size}.csv" if size else tables / "by_class.csv"
    )


def test_findings_table_on_trees_and_carried_findings(tmp_path):
    head, seed = tmp_path / "results", tmp_path / "results" / "robustness" / "seed-1"
    _tree(head, "", 0.80)
    _tree(seed, "m", 0.30)
    trials = head / "trials"
    trials.mkdir()
    pl.DataFrame(
        {
            "family": ["file-append", "file-rewrite", "sqlite", "postgres-writer"],
            "readable": [True, False, True, True],
            "integrity_ok": [True, True, True, True],
            "missing_committed": [0, 50, 0, 0],
        }
    ).write_csv(trials / "crash.csv")
    # under the study's choices sqlite-fts's lexical cell of the headline run is 0.40; the
    # seed corpus has no choices table, so its findings under them are n/a
    pl.DataFrame(
        {
            "choices": ["study", "terms"],
            "arm": ["sqlite-fts", "sqlite-fts"],
            "query_class": ["lexical", "lexical"],
            "ndcg_at_10": [0.40, 0.10],
        }
    ).write_csv(head / "tables" / "choices.csv")
    trees = trees_from({"seed-1": ("seed", "m", seed)}, head, "m")
    assert [(x.corpus, x.choices) for x in trees] == [
        ("study", "study"),
        ("default", "as-shipped"),
        ("default", "study"),
        ("seed-1", "as-shipped"),
        ("seed-1", "study"),
    ]
    t = findings_table(trees, head, "m")
    assert t.height == 13 * 5
    under = t.filter(finding=1, choices="study").sort("corpus")
    assert under["value"].to_list() == [pytest.approx(0.35), None, pytest.approx(0.789)]
    assert under["verdict"].to_list() == ["weakens", "n/a", "holds"]
    t = t.filter(pl.col("kind").eq("study") | pl.col("choices").eq("as-shipped"))
    cell = lambda num, corpus: t.filter(finding=num, corpus=corpus).row(0, named=True)  # noqa: E731
    assert cell(1, "study")["value"] == pytest.approx(0.789)
    assert cell(1, "default")["value"] == pytest.approx(0.75)
    assert cell(1, "default")["verdict"] == "holds"
    assert cell(1, "seed-1")["value"] == pytest.approx(0.25)
    assert cell(1, "seed-1")["verdict"] == "weakens"
    # the crash finding reads no corpus: the seed column carries the headline run's value
    assert cell(8, "default")["value"] == 1.0 and not cell(8, "default")["carried"]
    assert cell(8, "seed-1")["value"] == 1.0 and cell(8, "seed-1")["carried"]
    assert cell(8, "seed-1")["verdict"] == "holds"
    assert cell(2, "seed-1")["verdict"] == "n/a"  # no structural classes in these tables
    spread = across_seeds(t)
    # a finding that reads no corpus has no spread over seeds
    eight = spread.filter(finding=8).row(0, named=True)
    assert (eight["seed_verdicts"], eight["seed_mean"], eight["seed_ci_low"]) == (
        "carried",
        1.0,
        None,
    )
    seeds = spread.filter(finding=1).row(0, named=True)
    assert seeds["n_seeds"] == 2
    assert seeds["seed_mean"] == pytest.approx(0.5)
    assert seeds["seed_verdicts"] == "1 holds, 1 weakens"
    # two values 0.75 and 0.25: s = 0.353553, t(0.975, 1) = 12.7062
    half = 12.7062 * 0.353553 / math.sqrt(2)
    assert seeds["seed_ci_low"] == pytest.approx(0.5 - half, abs=1e-3)


def test_by_class_seeds_beside_the_bootstrap(tmp_path):
    def table(v):
        return pl.DataFrame({"arm": ["a", "b"], "query_class": ["all", "all"], "ndcg_at_10": v})

    boot = tmp_path / "boot.csv"
    pl.DataFrame(
        {
            "arm": ["a"],
            "query_class": ["all"],
            "metric": ["ndcg_at_10"],
            "mean": [0.6],
            "ci_low": [0.5],
            "ci_high": [0.7],
            "n": [40],
        }
    ).write_csv(boot)
    t = by_class_seeds({"1": table([0.6, 0.2]), "2": table([0.8, 0.4])}, ["b", "a"], boot)
    assert t["arm"].to_list() == ["b", "a"]
    a = t.filter(arm="a").row(0, named=True)
    assert a["ndcg_mean"] == pytest.approx(0.7)
    assert (a["boot_mean"], a["boot_ci_low"], a["boot_ci_high"]) == (0.6, 0.5, 0.7)
    assert t.filter(arm="b")["boot_mean"][0] is None


def test_seeds_at_another_size_leave_the_headline_run_out_of_the_spread(tmp_path):
    head = tmp_path / "results"
    _tree(head, "", 0.80)
    for i, v in enumerate((0.6, 0.4)):
        _tree(head / "robustness" / f"seed-{i}", "s", v)
    corpora = {f"seed-{i}": ("seed", "s", head / "robustness" / f"seed-{i}") for i in range(2)}
    t = findings_table(trees_from(corpora, head, "m"), head, "m")
    one = across_seeds(t).filter(finding=1).row(0, named=True)
    assert one["n_seeds"] == 2
    assert one["seed_mean"] == pytest.approx((0.55 + 0.35) / 2)
