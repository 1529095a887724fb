"""End-to-end: the real workflow on config/smoke.yaml (the ``smoke_run`` fixture of conftest.py)."""

from __future__ import annotations

import json
import shutil
from html import escape

import polars as pl
import pytest
from support.paths import LOCOMO, REPO
from support.workflow import run_snakemake

from agentmem.arms import ARMS
from agentmem.config import load_config
from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.external import score_dataset
from agentmem.external.score import LEVELS, SCORE_COLUMNS
from agentmem.report.capture import package_versions
from agentmem.report.html import _versions
from agentmem.report.tables import BY_CLASS_COLUMNS
from agentmem.sweeps.postfilter import POSTFILTER_SCHEMA
from agentmem.workflow.plan import FIGURE_NAMES, PARETO_FIGURES
from agentmem.workflow.selection import external_runs

#: every figure the report embeds (the workflow's declaration)
FIGURES = FIGURE_NAMES
#: the external datasets of the smoke run: the tiny one, and LoCoMo's turns when present
EXTERNAL = ["tiny", *(["locomo-turns"] if LOCOMO.is_file() else [])]


def test_outputs_exist(smoke_run):
    cfg = load_config(REPO / "config/smoke.yaml")
    for rel in (
        "results/tables/by_class.csv",
        "results/tables/by_class.md",
        "results/tables/capabilities.md",
        "results/capture.json",
        "results/report/index.html",
        "results/trials/crash.csv",
        "results/trials/lost_update.csv",
        "results/trials/fleet.csv",
    ):
        assert (smoke_run / rel).is_file(), rel
    for arm in cfg.arms:
        build = json.loads((smoke_run / f"results/builds/xs/{arm}.json").read_text())
        assert build["storage_bytes"] > 0 and build["bytes_per_memory"] > 0
        plans = json.loads((smoke_run / f"results/plans/xs/{arm}.json").read_text())
        assert set(plans["plans"]) == set(QUERY_CLASSES)


def test_fleet_table(smoke_run):
    cfg = load_config(REPO / "config/smoke.yaml")
    t = pl.read_csv(smoke_run / "results/trials/fleet.csv", infer_schema_length=None)
    fleet = cfg.trials.fleet
    assert list(dict.fromkeys(t["arm"].to_list())) == fleet.arms
    for arm in ("sqlite-fts", "pg-gin"):  # the DBMS arms: every run and the SIGKILL run
        s = t.filter(pl.col("arm") == arm)
        assert s["processes"].to_list() == [*fleet.processes, fleet.kill_processes]
        assert (s["lost"] == 0).all() and (s["duplicated"] == 0).all()
        assert not s["corrupt"].any() and (s["acknowledged"] > 0).all()
    milvus = t.filter(pl.col("arm") == "milvus-lite").row(0, named=True)
    assert milvus["supported"] is False and "one process" in milvus["reason"]
    html = (smoke_run / "results/report/index.html").read_text()
    assert "fleet" in html and "ops_per_s" in html


def test_by_class_table_long_form(smoke_run):
    cfg = load_config(REPO / "config/smoke.yaml")
    t = pl.read_csv(smoke_run / "results/tables/by_class.csv")
    assert t.columns == BY_CLASS_COLUMNS
    assert t.height == len(cfg.arms) * (len(QUERY_CLASSES) + 1)
    assert t["fill_at_10"].is_between(0, 1).all()
    assert t["ndcg_at_10"].is_between(0, 1).all()
    assert t["stale_exposure"].drop_nulls().is_between(0, 1).all()
    agg = t.filter(pl.col("query_class") == "aggregate")
    rates = dict(zip(agg["arm"], agg["exact_count_rate"], strict=True))
    assert rates["sqlite-fts"] == 1.0 and rates["file-jsonl"] == 0.0
    cur = t.filter(pl.col("query_class") == "currency")
    stale = dict(zip(cur["arm"], cur["stale_exposure"], strict=True))
    # currency's predicate (superseded_by IS NULL) in the engine; file-jsonl has none
    assert stale["sqlite-fts"] == 0.0 and stale["file-jsonl"] > 0
    html = (smoke_run / "results/report/index.html").read_text()
    assert "sqlite-fts" in html and "nDCG@10 by query class" in html
    assert "Stale exposure by query class" in html
    # figures embedded: the study's, one per external dataset, the study's cells (the
    # smoke config runs the study's corpus in small) and the operating points'
    assert html.count("data:image/svg+xml;base64,") == (
        len(FIGURES) + len(EXTERNAL) + 1 + len(PARETO_FIGURES)
    )
    assert 'alt="study_cells"' in html


def test_ablation_sweep_beside_the_by_class_table(smoke_run):
    t = pl.read_csv(smoke_run / "results/sweeps/ablation.csv")
    assert set(t["arm"]) == {"sqlite-gated"}  # the one configured arm that declares ablations
    variants = ["as configured", *ARMS["sqlite-gated"].ablations]
    assert list(dict.fromkeys(t["variant"])) == variants
    assert t.height == len(variants) * (len(QUERY_CLASSES) + 1)
    # the configured rows are the timed run's scores (same store, same parameters)
    bc = pl.read_csv(smoke_run / "results/tables/by_class.csv").filter(arm="sqlite-gated")
    want = dict(zip(bc["query_class"], bc["ndcg_at_10"], strict=True))
    conf = t.filter(variant="as configured")
    for cls, got in zip(conf["query_class"], conf["ndcg_at_10"], strict=True):
        assert got == pytest.approx(want[cls], abs=1e-9), cls
    assert (conf["ndcg_change"] == 0).all()
    row = t.filter(variant="no keys branch", query_class="all").row(0, named=True)
    assert row["overrides"] == "keys=False"
    assert row["ndcg_change"] == pytest.approx(row["ndcg_at_10"] - want["all"])
    assert (
        "| sqlite-gated | no gate (dense scan always) |"
        in (smoke_run / "results/sweeps/ablation.md").read_text()
    )
    # the corpus links memories to entities and holds corrections: every variant was asked
    assert t["inert"].null_count() == t.height


def test_operating_points(smoke_run):
    """The smoke grid: one row per point, the frontier, the budgets and the report section."""
    res = smoke_run / "results/pareto"
    t = pl.read_csv(res / "points.csv")
    assert t["arm"].to_list() == ["pg-hnsw"] * 3 + ["sqlite-gated"] * 4
    assert t["point"].to_list() == [
        "default",
        "ef_search=80",
        "m=32",
        "default",
        "dense_weight=2.0",
        "text_k=100",
        "neighbour_weight=0.0",  # the declared grid of a knob the smoke config leaves alone
    ]
    assert t["stage"].to_list() == ["query", "query", "build"] + ["query"] * 4
    assert json.loads(t.filter(point="m=32")["params"][0]) == {"m": 32}
    assert t["ndcg_at_10"].is_between(0, 1).all() and (t["p50_ms"] > 0).all()
    assert {f"ndcg_at_10_{c}" for c in QUERY_CLASSES} <= set(t.columns)
    # the default point is the headline setting on the headline's store: the same rankings
    bc = pl.read_csv(smoke_run / "results/tables/by_class.csv")
    for arm in ("pg-hnsw", "sqlite-gated"):
        want = bc.filter(arm=arm, query_class="all")["ndcg_at_10"][0]
        got = t.filter(arm=arm, point="default")["ndcg_at_10"][0]
        assert got == pytest.approx(want, abs=1e-9), arm
    # a query-time point shares its arm's store: same build time and bytes as the default
    hnsw = t.filter(arm="pg-hnsw")
    assert hnsw["bytes_per_memory"][0] == hnsw["bytes_per_memory"][1]
    assert hnsw["build_ms"][0] == hnsw["build_ms"][1] != hnsw["build_ms"][2]
    front = pl.read_csv(res / "frontier.csv")
    assert {"all arms", "pg-hnsw", "sqlite-gated"} == set(front["among"])
    assert set(front["cost"]) == {"p50_ms", "bytes_per_memory"}
    budgets = pl.read_csv(res / "budgets.csv")
    assert budgets.height == 3 * (len(QUERY_CLASSES) + 1)
    assert not list((res / "scratch").glob("*"))  # build-time stores removed
    html = (smoke_run / "results/report/index.html").read_text()
    assert '<h2 id="operating">11. Operating points</h2>' in html
    assert "7 points over 2 arms" in html and 'alt="pareto_classes"' in html


def test_capture_and_report_record_the_versions(smoke_run):
    """capture.json names the engines' and libraries' versions; the report shows them."""
    env = json.loads((smoke_run / "results/capture.json").read_text())["environment"]
    assert env["packages"] == {**package_versions(), "sqlite": env["engines"]["sqlite"]}
    pgsql = env["engines"]["postgresql"]
    assert pgsql["server"] and pgsql["pgvector"] and "error" not in pgsql
    html = (smoke_run / "results/report/index.html").read_text()
    assert "Engines and libraries of this run" in html
    for name, version in _versions(env):
        assert f"<td>{escape(name)}</td><td>{escape(version or '–')}</td>" in html, name


def test_sweep_tables(smoke_run):
    cfg = load_config(REPO / "config/smoke.yaml")
    post = pl.read_csv(smoke_run / "results/sweeps/postfilter.csv")
    assert post.columns == list(POSTFILTER_SCHEMA)
    meta = post.filter(pl.col("arm") == "file-vec-meta").sort("overfetch")
    assert meta["overfetch"].to_list() == [1, 4, 16]
    assert meta["fill_rate"].to_list() == sorted(meta["fill_rate"].to_list())
    budget = pl.read_csv(smoke_run / "results/sweeps/budget.csv")
    assert budget.height == len(cfg.arms) * 3
    scaling = pl.read_csv(smoke_run / "results/sweeps/scaling.csv")
    assert scaling.height == len(cfg.arms) and set(scaling["size"]) == {"xs"}
    val = pl.read_csv(smoke_run / "results/tables/validation.csv")
    assert val["query_class"].to_list()[-1] == "random_pairs"
    sem = val.filter(pl.col("query_class") == "semantic")
    assert sem["identifier_overlap"][0] == 0


def test_report_in_a_real_browser(smoke_run):
    """Headless Chromium: every figure loads, no console errors; screenshot kept."""
    from support.browser import chromium_path, inspect_page

    if chromium_path() is None:
        pytest.skip("no Chromium: `make test` installs Debian's chromium package (needs root)")
    shot = smoke_run / "results" / "report" / "screenshot.png"
    page = inspect_page(smoke_run / "results" / "report" / "index.html", shot)
    assert page["title"] == "agentmem report"
    assert len(page["images"]) >= len(FIGURES) + len(EXTERNAL)
    assert all(width > 0 for _alt, width in page["images"]), page["images"]
    assert page["errors"] == []
    assert shot.stat().st_size > 10_000
    keep = REPO / "results" / "report" / "screenshot_smoke.png"
    keep.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, keep)


def test_editing_one_figure_reruns_only_that_figure(smoke_run):
    """Touching one figure's module makes `snakemake <figure>` rerun that job alone (dry run)."""
    import os
    import re
    import time

    module = REPO / "src/agentmem/report/figures/crash.py"
    st = module.stat()
    original = module.read_bytes()
    try:  # an edit: new content (Snakemake 9 also checks checksums, not only mtimes)
        module.write_bytes(original + b"\n# edited by test_e2e\n")
        os.utime(module, (time.time() + 5, time.time() + 5))
        proc = run_snakemake(smoke_run, "-n", "results/figures/crash.svg")
    finally:
        module.write_bytes(original)
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M))
    assert jobs.get("plot_crash") == "1", out[-2000:]
    assert jobs.get("total") == "1", out[-2000:]


def test_second_run_does_nothing(smoke_run):
    proc = run_snakemake(smoke_run, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_tiny_dataset_scores(smoke_run):
    """The hand-made tiny dataset (tests/data/tiny-memory) through every arm, scoped."""
    cfg = load_config(REPO / "config/smoke.yaml")
    t = pl.read_csv(smoke_run / "results/external/tiny/scores.csv", infer_schema_length=None)
    assert tuple(t.columns) == SCORE_COLUMNS
    assert set(t["setting"]) == {"scoped"}
    assert t["arm"].unique(maintain_order=True).to_list() == list(cfg.arms)
    cats = ["fact", "temporal", "multi-hop", "all"]  # dataset.json order, then all
    for arm in cfg.arms:
        rows = t.filter(pl.col("arm") == arm)
        assert rows.select("level", "category").rows() == [
            (level, c) for level in LEVELS for c in cats
        ], arm
        n = dict(zip(rows["category"], rows["n_queries"], strict=False))
        assert n == {"fact": 3, "temporal": 1, "multi-hop": 2, "all": 6}, arm
        build = json.loads(
            (smoke_run / f"results/external/tiny/builds/scoped/{arm}.json").read_text()
        )
        assert build["scoped"] is True and build["memories"] == 14 and build["queries"] == 6
    recall = t.select(f"recall_at_{k}" for k in (5, 10, 25, 50)).to_numpy()
    assert ((recall >= 0) & (recall <= 1)).all()
    # k = 50 reaches every memory of a scope (at most 9): recall@50 is 1 for every arm
    assert (t["recall_at_50"] == 1.0).all()
    html = (smoke_run / "results/report/index.html").read_text()
    assert '<h3 id="external-tiny">tiny</h3>' in html
    assert "no published figures for this dataset" in html


def test_tiny_dataset_known_queries(smoke_run):
    """q1 ("What is the name of Alice's cat?") and q5 ("What does Bob's bakery sell on
    Fridays?") each have one relevant memory sharing their words and meaning (a1-1 "Alice
    adopted a grey cat named Pixel.", b1-2 "Bob's bakery sells sourdough every Friday."):
    the exact lexical and exact dense arms rank it first."""
    for arm in ("file-jsonl", "sqlite-btree", "sqlite-fts", "file-vec", "lancedb"):
        runs = pl.read_parquet(smoke_run / f"results/external/tiny/runs/scoped/{arm}.parquet")
        top = runs.filter(pl.col("rank") == 1).sort("query_id")
        first = dict(top.select("query_id", "memory_id").rows())
        assert (first["q1"], first["q5"]) == ("a1-1", "b1-2"), arm


def test_scoped_runs_stay_in_scope(smoke_run):
    """Scoped: every memory an arm retrieves for a query is in the query's scope."""
    runs_of = external_runs(load_config(REPO / "config/smoke.yaml"))
    for dataset in EXTERNAL:
        d = smoke_run / "results/external" / dataset
        memories = pl.read_parquet(d / "corpus/memories.parquet")
        queries = pl.read_parquet(d / "corpus/queries.parquet")
        scope_of = dict(memories.select("memory_id", "scope_id").rows())
        query_scope = dict(queries.select("query_id", "scope_id").rows())
        for arm in runs_of[dataset].arms:
            runs = pl.read_parquet(d / f"runs/scoped/{arm}.parquet")
            # an empty answer is one row with a null memory_id (a lexical arm finding none
            # of a question's words): nothing retrieved, nothing out of scope
            assert runs.filter(pl.col("memory_id").is_null())["rank"].null_count() == (
                runs["memory_id"].null_count()
            ), (dataset, arm)
            out = [
                (q, m)
                for q, m in runs.select("query_id", "memory_id").rows()
                if m is not None and scope_of[m] != query_scope[q]
            ]
            assert out == [], (dataset, arm, len(out), out[:3])


def test_locomo_turns(smoke_run, tmp_path):
    """LoCoMo's first two conversations as dialog turns, scoped, through the arms of its
    entry; one unscoped run (sqlite-fts) asked for by its target, scored beside its scoped
    run."""
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo file {LOCOMO} absent (a user's clone has no ../shared)")
    turns = external_runs(load_config(REPO / "config/smoke.yaml"))["locomo-turns"]
    d = smoke_run / "results/external/locomo-turns"
    t = pl.read_csv(d / "scores.csv", infer_schema_length=None)
    assert tuple(t.columns) == SCORE_COLUMNS
    assert t.select("setting", "arm").unique(maintain_order=True).rows() == [
        ("scoped", a) for a in turns.arms
    ]
    assert "sqlite-fts" in turns.arms and "pg-hnsw" not in turns.arms  # the entry's arms
    cats = ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial", "held-out"]
    assert t["category"].unique(maintain_order=True).to_list() == [*cats, "all"]
    ev = t.filter((pl.col("level") == "evidence") & (pl.col("category") == "all"))
    # conv-26 and conv-30: 302 questions with usable evidence, adversarial included; the
    # smoke config's tuning_scopes name conv-26, so conv-30's 105 are scored as held-out
    assert set(ev["n_queries"]) == {302}
    assert set(t.filter(level="evidence", category="held-out")["n_queries"]) == {105}
    # the weighted sum stays above its strong branch where RRF falls below it (the
    # conversations sqlite-gated's weights were chosen on: docs/arms/sqlite-gated.md)
    r10 = dict(zip(ev["arm"], ev["recall_at_10"], strict=True))
    assert r10["sqlite-gated"] >= r10["sqlite-fts"] > r10["sqlite-hybrid"]
    md = (d / "vs_published.md").read_text()
    assert "| *DRAGON (LoCoMo paper)* | within one conversation | — | 0.567 | 0.662 |" in md
    assert "| sqlite-gated | scoped, held-out | 105 | " in md
    html = (smoke_run / "results/report/index.html").read_text()
    assert '<h3 id="external-locomo-turns">locomo-turns</h3>' in html
    assert "DRAGON (LoCoMo paper, within one conversation), as quoted by secondary sources" in html
    assert "At or above DRAGON, scoped, all (302 questions): R@5 (DRAGON 0.567): " in html
    assert "At or above DRAGON, scoped, held-out (105 questions): R@5 (DRAGON 0.567): " in html
    # sqlite-gated's ablations on the scoped turns: the session neighbours carry recall
    ab = pl.read_csv(d / "ablation.csv").filter(pl.col("query_class") == "all")
    r10 = dict(zip(ab["variant"], ab["recall_at_10"], strict=True))
    assert set(ab["arm"]) == {"sqlite-gated"} and ab["queries"].to_list()[0] == 302
    assert r10["as configured"] - r10["no session neighbours"] > 0.05
    # LoCoMo links no turn to an entity and corrects none: five variants cannot fire there,
    # and are scored from the configured answers
    inert = ab.filter(pl.col("inert").is_not_null())
    assert set(inert["variant"]) == {
        "no keys branch",
        "no gate (dense scan always)",
        "no recency",
        "no correction lift",
        "no currency signal",
    }
    assert (inert["recall_at_10"] == r10["as configured"]).all()
    assert "\\* inert: the store holds nothing" in (d / "ablation.md").read_text()

    unscoped = d / "runs/unscoped/sqlite-fts.parquet"
    proc = run_snakemake(smoke_run, str(unscoped.relative_to(smoke_run)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for s in ("scoped", "unscoped"):
        build = json.loads((d / f"builds/{s}/sqlite-fts.json").read_text())
        assert build["scoped"] is (s == "scoped") and build["memories"] == 788
    # unscoped pools both conversations: some question retrieves the other one's turns
    conv = pl.read_parquet(unscoped).select(
        pl.col("query_id").str.split(":").list.first().alias("q"),
        pl.col("memory_id").str.split(":").list.first().alias("m"),
    )
    assert conv.filter(pl.col("q") != pl.col("m")).height > 0
    # a scope only removes the other conversation's turns from BM25's ranking: no gold
    # turn ranks lower, so sqlite-fts's scoped recall is never below its unscoped recall
    both = score_dataset(
        d / "corpus",
        {
            ("scoped", "sqlite-fts"): d / "runs/scoped/sqlite-fts.parquet",
            ("unscoped", "sqlite-fts"): unscoped,
        },
        tmp_path / "scores.csv",
        tmp_path / "ci.csv",
        n_boot=10,
    )
    fts = {
        r["setting"]: r
        for r in both.filter(
            (pl.col("level") == "evidence") & (pl.col("category") == "all")
        ).iter_rows(named=True)
    }
    assert (
        fts["scoped"]["recall_at_10"] == ev.filter(pl.col("arm") == "sqlite-fts")["recall_at_10"][0]
    )
    for k in (5, 10, 25, 50):
        assert fts["scoped"][f"recall_at_{k}"] >= fts["unscoped"][f"recall_at_{k}"], k
    assert 0.4 < fts["scoped"]["recall_at_10"] < 0.9


def test_findings_across_corpora(smoke_run):
    """The thirteen findings on the study, the headline run and the further seed corpus."""
    res = smoke_run / "results"
    t = pl.read_csv(res / "tables/findings.csv")
    corpora = ["study", "default", "seed-20260811", "study-corpus"]
    assert list(dict.fromkeys(t["corpus"])) == corpora
    # beside the arms as shipped: the study's choices on the headline and seed corpora, and
    # each alone too on the study's corpus
    runs = {
        c: g["choices"].unique(maintain_order=True).to_list() for (c,), g in t.group_by("corpus")
    }
    assert runs == {
        "study": ["study"],
        "default": ["as-shipped", "study"],
        "seed-20260811": ["as-shipped", "study"],
        "study-corpus": ["as-shipped", "study", "terms", "ties", "normalisation"],
    }
    assert t.height == 13 * 10
    assert set(t["verdict"]) <= {"holds", "weakens", "flips", "n/a"}
    study = t.filter(corpus="study")
    assert set(study.filter(pl.col("finding") <= 12)["verdict"]) == {"holds"}
    assert study.filter(finding=13)["verdict"].to_list() == ["n/a"]  # the study had no such arm
    # finding 13 on the headline run, by hand: sqlite-gated's overall margin
    allc = pl.read_csv(res / "tables/by_class.csv").filter(query_class="all")
    overall = dict(zip(allc["arm"], allc["ndcg_at_10"], strict=True))
    margin = overall.pop("sqlite-gated") - max(overall.values())
    assert t.filter(finding=13, corpus="default")["value"][0] == pytest.approx(margin)
    # finding 1 on the headline run, by hand from its by-class table
    bc = pl.read_csv(res / "tables/by_class.csv").filter(query_class="lexical")
    lex = dict(zip(bc["arm"], bc["ndcg_at_10"], strict=True))
    one = t.filter(finding=1, corpus="default").row(0, named=True)
    assert one["value"] == pytest.approx(lex["sqlite-fts"] - lex["file-vec"])
    # ... and on the seed corpus from that corpus's own table
    sbc = pl.read_csv(res / "robustness/seed-20260811/tables/by_class_xs.csv")
    slex = dict(zip(*sbc.filter(query_class="lexical").select("arm", "ndcg_at_10"), strict=True))
    seed_one = t.filter(finding=1, corpus="seed-20260811")["value"][0]
    assert seed_one == pytest.approx(slex["sqlite-fts"] - slex["file-vec"])
    # a further corpus's runs are one untimed pass (the arms' batch search): no latency
    assert sbc["p50_ms"].null_count() == sbc.height > 0
    # the anomaly probe and the post-filter sweep ran on the seed corpus's stores
    six = t.filter(finding=6, corpus="seed-20260811").row(0, named=True)
    post = pl.read_csv(res / "robustness/seed-20260811/sweeps/postfilter_xs.csv")
    assert six["value"] == post.filter(arm="file-vec-meta", overfetch=1)["fill_rate"][0]
    ten = t.filter(finding=10, corpus="seed-20260811")["value"][0]
    anomaly = pl.read_csv(res / "robustness/seed-20260811/trials/anomaly_xs.csv")
    assert ten == anomaly.filter(arm="pg-hybrid")["stale_fraction"][0]
    # the findings that read no corpus carry the headline run's value
    for num in (8, 9):
        default = t.filter(finding=num, corpus="default").row(0, named=True)
        row = t.filter(finding=num, corpus="seed-20260811").row(0, named=True)
        assert row["carried"] and row["value"] == default["value"], num
    assert not t.filter(corpus="default")["carried"].any()
    manifest = json.loads((res / "robustness/seed-20260811/corpus/xs/manifest.json").read_text())
    assert manifest["options"]["corpus"]["seed"] == 20260811
    # across seeds: the headline run and the one seed, nDCG@10 by hand
    spread = pl.read_csv(res / "tables/by_class_seeds.csv").filter(query_class="all")
    cfg = load_config(REPO / "config/smoke.yaml")
    assert spread["arm"].to_list() == list(cfg.robustness.arms)
    assert set(spread["n_seeds"]) == {2}
    allh = pl.read_csv(res / "tables/by_class.csv").filter(query_class="all")
    alls = sbc.filter(query_class="all")
    fts = spread.filter(arm="sqlite-fts").row(0, named=True)
    head_fts = allh.filter(arm="sqlite-fts")["ndcg_at_10"][0]
    want = (head_fts + alls.filter(arm="sqlite-fts")["ndcg_at_10"][0]) / 2
    assert fts["ndcg_mean"] == pytest.approx(want)
    assert fts["ndcg_ci_low"] <= fts["ndcg_mean"] <= fts["ndcg_ci_high"]
    assert fts["boot_ci_low"] <= fts["boot_mean"] <= fts["boot_ci_high"]
    # the study's corpus file (here its format in small), imported and run like a seed
    study = json.loads((res / "robustness/study-corpus/corpus/xs/manifest.json").read_text())
    assert (study["memories"], study["queries"], study["corrections"]) == (4, 8, 1)
    assert study["options"]["study_corpus"]["path"].endswith("tests/data/study-corpus-tiny.json")
    cbc = pl.read_csv(res / "robustness/study-corpus/tables/by_class_xs.csv")
    assert set(cbc["arm"]) == set(cfg.robustness.arms)
    clex = dict(zip(*cbc.filter(query_class="lexical").select("arm", "ndcg_at_10"), strict=True))
    c_one = t.filter(finding=1, corpus="study-corpus").row(0, named=True)
    assert c_one["kind"] == "study-corpus" and not c_one["carried"]
    assert c_one["value"] == pytest.approx(clex["sqlite-fts"] - clex["file-vec"])
    spec = pl.read_csv(res / "robustness/study-corpus/tables/corpus_spec_xs.csv")
    assert spec.filter(statistic="memories")["ours"][0] == 4
    html = (res / "report/index.html").read_text()
    assert "9. Do the findings survive other seeds and corpus designs?" in html
    assert "seed-20260811" in html
    assert "Reproducing the study exactly" in html


def test_the_study_choices_sweep_and_cell_table(smoke_run):
    """The study's implementation choices rerun the arms that declare them; the cell table."""
    res = smoke_run / "results"
    # headline: the robustness arms that declare choices, under all of them
    head = pl.read_csv(res / "tables/choices.csv")
    assert set(head["arm"]) == {"sqlite-fts", "pg-hybrid"}
    assert set(head["choices"]) == {"study"}
    # an untimed pass: the configurations' tables keep the timed runs' latency
    assert head["p50_ms"].null_count() == head.height
    bc = pl.read_csv(res / "tables/by_class.csv")
    assert head.filter(arm="sqlite-fts")["n_queries"].to_list() == (
        bc.filter(arm="sqlite-fts")["n_queries"].to_list()
    )
    # finding 1 under the study's choices reads sqlite-fts's lexical cell from the sweep
    t = pl.read_csv(res / "tables/findings.csv")
    lex_fts = head.filter(arm="sqlite-fts", query_class="lexical")["ndcg_at_10"][0]
    lex_vec = bc.filter(arm="file-vec", query_class="lexical")["ndcg_at_10"][0]
    one = t.filter(finding=1, corpus="default", choices="study")["value"][0]
    assert one == pytest.approx(lex_fts - lex_vec)
    # the study's corpus: every configuration; normalisation changes pg-hybrid alone
    sweep = pl.read_csv(res / "robustness/study-corpus/tables/choices_xs.csv")
    assert set(sweep["choices"]) == {"study", "terms", "ties", "normalisation"}
    assert set(sweep.filter(choices="normalisation")["arm"]) == {"pg-hybrid"}
    assert set(sweep.filter(choices="terms")["arm"]) == {"sqlite-fts", "pg-hybrid"}
    cells = pl.read_csv(res / "tables/study_cells.csv")
    assert cells.columns[:5] == ["arm", "query_class", "published", "as_shipped", "study_choices"]
    # the robustness arms that are study arms, eight classes each
    assert cells["arm"].unique(maintain_order=True).to_list() == [
        "file-vec",
        "file-vec-meta",
        "sqlite-fts",
        "pg-hybrid",
    ]
    assert cells.height == 4 * 8
    cbc = pl.read_csv(res / "robustness/study-corpus/tables/by_class_xs.csv")
    for r in cells.filter(arm="sqlite-fts").iter_rows(named=True):
        want = cbc.filter(arm="sqlite-fts", query_class=r["query_class"])["ndcg_at_10"][0]
        assert r["as_shipped"] == pytest.approx(want)
        got = sweep.filter(choices="study", arm="sqlite-fts", query_class=r["query_class"])
        assert r["study_choices"] == pytest.approx(got["ndcg_at_10"][0])
    # file-vec declares no choices: under every configuration it is the arm as shipped
    fv = cells.filter(arm="file-vec")
    assert fv["as_shipped"].to_list() == fv["study_choices"].to_list()
    hnsw = dict(zip(cells["arm"], cells["hnsw"], strict=False))
    assert hnsw == {"file-vec": True, "file-vec-meta": True, "sqlite-fts": False, "pg-hybrid": True}
    assert "The study's cells on the study's corpus" in (res / "tables/vs_reference.md").read_text()
    assert (res / "figures/study_cells.svg").stat().st_size > 0
    assert (res / "figures/study_cells.png").stat().st_size > 0
