"""The published numbers as data, the comparison with ours, and the reference-marked figures."""

import json
import re
from pathlib import Path

import polars as pl
import pytest

from agentmem.report import reference as R
from agentmem.report.reference.render import _SECTION_TITLES

STUDY_MD = Path(__file__).resolve().parents[1] / "docs" / "STUDY.md"


def pub(ref):
    return R.published_lookup()[ref]


# ---------------------------------------------------------------------------------------
# the published data
# ---------------------------------------------------------------------------------------


def test_ten_arm_table_has_ten_arms_times_seven_columns():
    assert len(R.OVERALL) == 10
    assert all(len(v) == 7 for v in R.OVERALL.values())
    overall = [p for p in R.PUBLISHED if p.group == "Ten arms: overall"]
    assert len(overall) == 70
    assert {p.section for p in overall} == {"§3"}
    assert pub(("by_class", "sqlite-fts", "all", "ndcg_at_10")) == 0.723
    assert pub(("by_class", "pg-btree", "all", "p95_ms")) == 198
    assert pub(("build", "pg-hybrid", "bytes_per_memory")) == 4177
    assert pub(("budget", "file-vec", 10, "mean_tokens")) == 254
    assert pub(("by_class", "sqlite-fts", "all", "p50_ms")) == 0.54
    assert R.overall_published("mrr")["pg-gin"] == 0.882
    with pytest.raises(ValueError):
        R.overall_published("nope")


def test_by_class_grid_is_ten_arms_times_eight_with_a_shared_btree_row():
    assert len(R.BY_CLASS) == 9  # the two B-tree arms share one published row
    assert sum(len(arms) for arms in R.BY_CLASS) == 10
    assert all(len(v) == 8 for v in R.BY_CLASS.values())
    grid = [p for p in R.PUBLISHED if p.group == "nDCG@10 by class"]
    assert len(grid) == 80
    for c in R.CLASSES:
        assert pub(("by_class", "sqlite-btree", c, "ndcg_at_10")) == pub(
            ("by_class", "pg-btree", c, "ndcg_at_10")
        )
    assert pub(("by_class", "pg-gin", "lexical", "ndcg_at_10")) == 0.817
    assert pub(("by_class", "pg-hnsw", "lexical", "ndcg_at_10")) == 0
    assert pub(("by_class", "sqlite-hybrid", "provenance", "ndcg_at_10")) == 1
    assert pub(("by_class", "file-jsonl", "currency", "ndcg_at_10")) == 1


def test_section_two_and_four_figures():
    assert sum(R.QUERY_COUNTS.values()) == 313
    assert R.QUERY_COUNTS["temporal"] == 33
    assert R.VALIDATION_COSINE["random_pairs"] == 0.266 and len(R.VALIDATION_COSINE) == 9
    assert R.DENSE_PROBE["median_rank"] == 271
    assert len(R.POSTFILTER) == 8 and R.POSTFILTER[128] == (0.701, 0.225, 0.155)
    assert R.POSTFILTER[1] == (0.489, 0.089, 0.0012)
    assert R.SCALING_NDCG["pg-hnsw"] == (0.602, 0.488, 0.398, 0.429)
    assert pub(("scaling", "file-jsonl", "l", "p50_ms")) == 131
    assert pub(("scaling", "pg-hybrid", "l", "storage_mb")) == 137
    assert pub(("scaling", "pg-hnsw", "l", "ingest_s")) == 34.9
    assert pub(("budget", "sqlite-fts", 1, "ndcg")) == 0.866
    assert R.CRASH == {
        "file-append": (0, 20),
        "file-rewrite": (1, 20),
        "sqlite": (0, 20),
        "postgres-writer": (0, 8),
    }
    assert R.LOST_UPDATE["json_kept"] == 25 and R.LOST_UPDATE["json_lost_share"] == 0.875
    assert R.ANOMALY == {
        "facts_probed": 120,
        "k": 10,
        "mean_reached": 1.52,
        "mean_total": 4.2,
        "stale_fraction": 0.639,
    }
    # exact-count claim: the seven DBMS arms 1, the three file arms 0
    assert sorted(R.EXACT_COUNT.values()) == [0.0] * 3 + [1.0] * 7


def test_study_roles_come_from_the_arms_declarations():
    """The study's arm groups, derived from capabilities, are the study's own groups."""
    assert R.FILE_ARMS == ("file-jsonl", "file-vec", "file-vec-meta")
    assert R.DBMS_ARMS == tuple(a for a in R.REFERENCE_ARMS if a not in R.FILE_ARMS)
    assert R.TEXT_ONLY_ARMS == ("file-jsonl", "sqlite-btree", "sqlite-fts", "pg-btree", "pg-gin")
    assert R.VECTOR_ARMS == ("file-vec", "file-vec-meta", "sqlite-hybrid", "pg-hnsw", "pg-hybrid")
    assert R.DBMS_TEXT_ARMS == ("sqlite-btree", "sqlite-fts", "pg-btree", "pg-gin")
    assert {a for a, v in R.EXACT_COUNT.items() if v == 0.0} == set(R.FILE_ARMS)
    # a role is a test on the class: arms outside the study never enter a group
    assert R.study_arms(lambda c: True) == R.REFERENCE_ARMS
    assert R.study_arms(lambda c: c.family == "postgres") == (
        "pg-btree",
        "pg-gin",
        "pg-hnsw",
        "pg-hybrid",
    )
    dense = [f for f in R.FINDINGS if f.statistic.startswith("min nDCG of ")]
    assert [f.statistic for f in dense] == [
        "min nDCG of sqlite-btree/sqlite-fts/pg-btree/pg-gin − file-vec"
    ]


def test_every_record_is_well_formed_and_keys_are_unique():
    refs = [p.ref for p in R.PUBLISHED]
    assert len(refs) == len(set(refs))
    assert {p.section for p in R.PUBLISHED} == {"§1", "§2", "§3", "§4"}
    for p in R.PUBLISHED:
        assert p.source.startswith(p.section), p
        assert p.kind in R.TOLERANCES, p
        assert p.item and p.group


def _numbers(text: str) -> list[tuple[str, float]]:
    out = []
    for m in re.finditer(r"(?<![\w.\-])(\d[\d,]*\.?\d*|\.\d+)(%?)", text):
        v = float(m.group(1).replace(",", "").rstrip("."))
        out.append((m.group(0), v / 100 if m.group(2) else v))
    return out


def test_every_number_of_reference_sections_two_to_four_is_transcribed():
    text = STUDY_MD.read_text()
    body = text[text.index("## 2.") : text.index("## 5.")]
    body = "\n".join(line for line in body.splitlines() if not line.startswith("#"))
    have = {round(p.value, 6) for p in R.PUBLISHED} | set(R.POSTFILTER)  # ×2 … ×128
    missing = [tok for tok, v in _numbers(body) if round(v, 6) not in have]
    assert missing == []
    # §1 corpus counts too
    for tok in ("2,500", "8,282", "7,064", "1,218", "844", "333", "313", "210,568", "25.4"):
        assert round(float(tok.replace(",", "")), 6) in have, tok


def test_every_finding_holds_on_the_published_numbers():
    look = R.published_lookup()
    for f in R.FINDINGS:
        v = f.stat(look.get)
        assert v is not None, f.claim
        assert f.holds(look.get), (f.claim, v)
    assert {f.section for f in R.FINDINGS} == {"§1", "§2", "§3", "§4"}


def test_tolerances():
    score = R.TOLERANCES["score"][1]
    assert score(0.5, 0.6) and not score(0.5, 0.61)
    lat = R.TOLERANCES["latency"][1]
    assert lat(10, 30) and lat(10, 3.4) and not lat(10, 31) and not lat(10, 3.2)
    assert not lat(10, 0) and lat(0, 0)
    outcome = R.TOLERANCES["outcome"][1]
    assert outcome(1, 20) and outcome(0, 0) and not outcome(0, 2)
    count = R.TOLERANCES["count"][1]
    assert count(100, 110) and not count(100, 111)


# ---------------------------------------------------------------------------------------
# comparison with a hand-made results tree
# ---------------------------------------------------------------------------------------

BY_CLASS_COLS = ["arm", "query_class", "n_queries", "ndcg_at_10", "recall_at_10", "mrr"]
BY_CLASS_COLS += ["precision_at_10", "exact_count_rate", "p50_ms", "p95_ms"]


def _by_class_rows() -> list[dict]:
    """Two arms; sqlite-fts close to the study, file-vec far off on lexical."""
    rows = []
    fts = dict(zip(R.CLASSES, (0.80, 0.70, 0.50, 0.55, 1.0, 0.70, 1.0, 0.55), strict=True))
    vec = dict(zip(R.CLASSES, (0.90, 0.60, 0.20, 0.0, 0.05, 0.02, 0.03, 0.45), strict=True))
    for arm, grid, allrow, exact in (
        ("sqlite-fts", fts, (0.70, 0.66, 0.88, 1.5, 4.0), 1.0),
        ("file-vec", vec, (0.30, 0.20, 0.20, 0.5, 0.9), 0.0),
    ):
        for c, v in grid.items():
            rows.append(
                {
                    "arm": arm,
                    "query_class": c,
                    "n_queries": 10,
                    "ndcg_at_10": v,
                    "recall_at_10": v,
                    "mrr": v,
                    "precision_at_10": 0.1,
                    "exact_count_rate": exact if c == "aggregate" else None,
                    "p50_ms": 1.0,
                    "p95_ms": 2.0,
                }
            )
        n, r, m, p50, p95 = allrow
        rows.append(
            {
                "arm": arm,
                "query_class": "all",
                "n_queries": 80,
                "ndcg_at_10": n,
                "recall_at_10": r,
                "mrr": m,
                "precision_at_10": 0.1,
                "exact_count_rate": exact,
                "p50_ms": p50,
                "p95_ms": p95,
            }
        )
    return rows


@pytest.fixture
def tree(tmp_path):
    res = tmp_path / "results"
    (res / "tables").mkdir(parents=True)
    pl.DataFrame(_by_class_rows(), infer_schema_length=None).select(BY_CLASS_COLS).write_csv(
        res / "tables" / "by_class.csv"
    )
    (res / "corpus" / "m").mkdir(parents=True)
    manifest = {
        "facts": 2500,
        "memories": 8324,
        "rendered": 7102,
        "distractors": 1222,
        "superseded": 825,
        "sessions": 334,
        "queries": 320,
        "tokens": 188381,
        "tokens_per_memory": 22.63,
        "superseded_facts": 300,
        "similarity_expressible": 120,
        "queries_by_class": {c: 40 for c in R.CLASSES},
        "options": {"corpus": {"seed": 20260809, "restatements": {"light_max": 3}}},
    }
    (res / "corpus" / "m" / "manifest.json").write_text(json.dumps(manifest))
    (res / "builds" / "m").mkdir(parents=True)
    for arm, bpm in (("sqlite-fts", 385.3), ("file-vec", 1713.7)):
        b = {
            "arm": arm,
            "family": "sqlite" if "sqlite" in arm else "vector",
            "bytes_per_memory": bpm,
            "params": {},
        }
        (res / "builds" / "m" / f"{arm}.json").write_text(json.dumps(b))
    (res / "trials").mkdir()
    crash = [
        "family,trial,kill_after_ms,readable,committed,present,missing_committed,"
        "integrity_ok,detail"
    ]
    for fam in ("file-append", "file-rewrite", "sqlite", "postgres-writer"):
        for t in range(2):
            bad = fam == "file-rewrite" and t == 0
            crash.append(
                f"{fam},{t},100,{str(not bad).lower()},500,{0 if bad else 500},"
                f"{500 if bad else 0},{str(not bad).lower()},x"
            )
    (res / "trials" / "crash.csv").write_text("\n".join(crash) + "\n")
    return res


def test_compare_on_a_hand_made_tree(tree):
    t = R.compare(tree)
    assert t.schema == pl.Schema(R.COMPARE_SCHEMA)
    assert t.height == len(R.PUBLISHED) + len(R.FINDINGS)
    assert set(t["verdict"]) <= {
        "reproduced",
        "differs",
        "not measured",
        "same setting",
        "other setting",
    }

    def row(item, group=None):
        s = t.filter(pl.col("item") == item)
        if group:
            s = s.filter(pl.col("group") == group)
        assert s.height == 1, item
        return s.row(0, named=True)

    r = row("sqlite-fts nDCG@10")
    assert r["ours"] == 0.70 and r["difference"] == pytest.approx(0.70 - 0.723)
    assert r["verdict"] == "reproduced"
    r = row("file-vec lexical")
    assert r["ours"] == 0.90 and r["verdict"] == "differs"
    assert row("sqlite-fts p50 ms")["verdict"] == "reproduced"  # 1.5 vs 0.54: within ×3
    r = row("sqlite-fts p95 ms")  # 4.0 vs 2.20
    assert r["verdict"] == "reproduced" and "×1.82" in r["note"]
    assert row("file-vec p50 ms")["verdict"] == "differs"  # 0.5 vs 6.49
    assert row("sqlite-fts bytes/memory")["verdict"] == "reproduced"
    assert row("memories", "Corpus counts (main size)")["verdict"] == "reproduced"  # 8,324 vs 8,282
    r = row("tokens per memory")
    assert r["verdict"] == "differs" and "shorter" in r["note"]
    assert row("seed")["verdict"] == "same setting"
    assert row("light max")["verdict"] == "other setting"
    assert row("temporal queries")["verdict"] == "differs"  # 40 vs 33
    assert row("file-rewrite: trials unreadable")["ours"] == 1
    assert row("file-rewrite: trials unreadable")["verdict"] == "reproduced"
    assert row("postgres-writer: trials")["verdict"] == "other setting"  # 2 vs 8
    # missing inputs are not measured, never an error
    for item in (
        "pg-gin nDCG@10",
        "×4 fill rate",
        "mean cosine: lexical",
        "sqlite-fts nDCG at k = 1",
        "json kept",
        "stale fraction",
    ):
        r = row(item)
        assert r["ours"] is None and r["verdict"] == "not measured", item
    f = t.filter(pl.col("group") == R.FINDING_GROUP)
    assert f.height == len(R.FINDINGS)
    lexical_gap = f.filter(pl.col("item").str.starts_with("Identifier questions")).row(
        0, named=True
    )
    assert lexical_gap["ours"] == pytest.approx(0.80 - 0.90)
    assert lexical_gap["verdict"] == "differs"
    exact = f.filter(pl.col("item").str.starts_with("Every DBMS arm")).row(0, named=True)
    assert exact["ours"] == 1.0 and exact["verdict"] == "reproduced"
    crash_safe = f.filter(pl.col("item").str.starts_with("Appending")).row(0, named=True)
    assert crash_safe["ours"] == 0 and crash_safe["verdict"] == "reproduced"
    assert f.filter(pl.col("item").str.contains("lose no increment"))["verdict"][0] == (
        "not measured"
    )


def test_bootstrap_ci_widens_the_score_verdict(tree):
    # file-vec-meta is absent; give sqlite-fts recall a CI that contains the published 0.653
    # and an nDCG far from the study (0.40) whose CI does not
    t = pl.read_csv(tree / "tables" / "by_class.csv")
    t = t.with_columns(
        ndcg_at_10=pl.when((pl.col("arm") == "sqlite-fts") & (pl.col("query_class") == "all"))
        .then(0.40)
        .otherwise(pl.col("ndcg_at_10")),
        recall_at_10=pl.when((pl.col("arm") == "sqlite-fts") & (pl.col("query_class") == "all"))
        .then(0.50)
        .otherwise(pl.col("recall_at_10")),
    )
    t.write_csv(tree / "tables" / "by_class.csv")
    pl.DataFrame(
        {
            "arm": ["sqlite-fts", "sqlite-fts"],
            "query_class": ["all", "all"],
            "metric": ["recall_at_10", "ndcg_at_10"],
            "mean": [0.50, 0.40],
            "ci_low": [0.30, 0.35],
            "ci_high": [0.70, 0.45],
            "n": [80, 80],
        }
    ).write_csv(tree / "tables" / "bootstrap_ci.csv")
    c = R.compare(tree)
    rec = c.filter(pl.col("item") == "sqlite-fts recall@10").row(0, named=True)
    assert rec["difference"] == pytest.approx(0.50 - 0.653)  # outside ±0.10 ...
    assert rec["verdict"] == "reproduced"  # ... but inside our interval
    assert "CI [0.300, 0.700]" in rec["note"]
    nd = c.filter(pl.col("item") == "sqlite-fts nDCG@10").row(0, named=True)
    assert nd["verdict"] == "differs"


def test_compare_on_an_empty_tree_measures_nothing(tmp_path):
    t = R.compare(tmp_path / "nothing-here")
    assert t.height == len(R.PUBLISHED) + len(R.FINDINGS)
    assert set(t["verdict"]) == {"not measured"}
    assert t["ours"].null_count() == t.height


def test_write_vs_reference(tree, tmp_path):
    out_md, out_csv = tmp_path / "out" / "vs_reference.md", tmp_path / "out" / "vs_reference.csv"
    t = R.write_vs_reference(tree, out_md, out_csv)
    assert pl.read_csv(out_csv).height == t.height
    md = out_md.read_text()
    for title in _SECTION_TITLES.values():
        assert f"## {title}" in md
    assert "### nDCG@10 by class" in md and "### Findings (§3)" in md
    assert "| sqlite-fts nDCG@10 | 0.723 | 0.700 | -0.023 | reproduced |" in md
    assert "**differs** — Identifier questions" in md
    # the missing inputs are named
    assert "`sweeps/postfilter.csv`" in md and "`tables/validation.csv`" in md
    assert "`tables/by_class.csv`" not in md.split("## §1")[0]


def test_main_size_is_taken_from_the_only_corpus(tmp_path):
    (tmp_path / "corpus" / "xs").mkdir(parents=True)
    (tmp_path / "corpus" / "xs" / "manifest.json").write_text(
        json.dumps({"memories": 124, "queries": 27})
    )
    res = R.OurResults(tmp_path)
    assert res.main == "xs"
    assert res.get(("manifest", "memories")) == 124
    assert res.get(("size", "xs", "queries")) == 27
    assert res.get(("size", "l", "queries")) is None
    with pytest.raises(KeyError):
        res.get(("no-such-key",))


# ---------------------------------------------------------------------------------------
# figures with published markers
# ---------------------------------------------------------------------------------------


def _png_ok(svg: Path) -> None:
    png = svg.with_suffix(".png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_latency_figure(tree, tmp_path):
    from agentmem.report.figures.latency import plot

    plot(tree / "tables" / "by_class.csv", tmp_path / "latency.svg")
    svg = (tmp_path / "latency.svg").read_text()
    assert "sqlite-fts" in svg and "published p50" in svg
    _png_ok(tmp_path / "latency.svg")


def test_storage_figure_from_builds_and_from_scaling(tree, tmp_path):
    from agentmem.report.figures.storage import plot, read_bytes_per_memory

    builds = sorted((tree / "builds" / "m").glob("*.json"))
    t = read_bytes_per_memory(builds)
    assert dict(zip(t["arm"], t["bytes_per_memory"], strict=True)) == {
        "file-vec": 1713.7,
        "sqlite-fts": 385.3,
    }
    plot(builds, tmp_path / "storage.svg", arms=["sqlite-fts", "file-vec"])
    assert "published" in (tmp_path / "storage.svg").read_text()
    _png_ok(tmp_path / "storage.svg")
    scaling = tmp_path / "scaling.csv"
    pl.DataFrame(
        {"arm": ["a", "a", "b"], "size": ["xs", "m", "m"], "bytes_per_memory": [1.0, 2.0, 3.0]}
    ).write_csv(scaling)
    assert read_bytes_per_memory(scaling, size="m")["bytes_per_memory"].to_list() == [2.0, 3.0]
    with pytest.raises(ValueError, match="size"):
        read_bytes_per_memory(scaling)
    plot(scaling, tmp_path / "s2.svg", size="m")
    _png_ok(tmp_path / "s2.svg")


def test_capability_figure_matches_the_registry(tmp_path):
    from agentmem.arms import ARMS
    from agentmem.report.figures.capabilities import grid, plot

    rows = grid(["file-jsonl", "sqlite-fts"])
    assert rows[0]["predicate"] is False and rows[0]["aggregate"] is False
    assert rows[1]["predicate"] is True and rows[1]["text_access"] == "fts5-bm25"
    plot(list(ARMS), tmp_path / "capabilities.svg")
    svg = (tmp_path / "capabilities.svg").read_text()
    for name in ARMS:
        assert name in svg
    _png_ok(tmp_path / "capabilities.svg")
    with pytest.raises(KeyError):
        grid(["no-such-arm"])
