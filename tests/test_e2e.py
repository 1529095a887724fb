"""End-to-end: the real workflow on config/smoke.yaml (the ``smoke_run`` fixture of conftest.py)."""

from __future__ import annotations

import json
import shutil
from html import escape

import polars as pl
import pytest
from support.paths import REPO
from support.workflow import copy_workflow_config, run_snakemake

from agentmem.config import load_config
from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.report.capture import package_versions
from agentmem.report.html import _versions

FIGURES = (
    "ndcg_heatmap",
    "crash",
    "lost_update",
    "anomaly",
    "postfilter",
    "budget",
    "scaling",
    "validation",
    "er_diagram",
    "overall",
    "latency",
    "storage",
    "capabilities",
    "conversation",
    "decay",
)


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
    ):
        assert (smoke_run / rel).is_file(), rel
    for arm in cfg.arms:
        build = json.loads((smoke_run / f"results/builds/xs/{arm}.json").read_text())
        assert build["storage_bytes"] > 0 and build["bytes_per_memory"] > 0
        plans = json.loads((smoke_run / f"results/plans/xs/{arm}.json").read_text())
        assert set(plans["plans"]) == set(QUERY_CLASSES)


def test_by_class_table_long_form(smoke_run):
    cfg = load_config(REPO / "config/smoke.yaml")
    t = pl.read_csv(smoke_run / "results/tables/by_class.csv")
    assert t.columns == [
        "arm",
        "query_class",
        "n_queries",
        "ndcg_at_10",
        "recall_at_10",
        "mrr",
        "precision_at_10",
        "exact_count_rate",
        "p50_ms",
        "p95_ms",
    ]
    assert t.height == len(cfg.arms) * (len(QUERY_CLASSES) + 1)
    assert t["ndcg_at_10"].is_between(0, 1).all()
    agg = t.filter(pl.col("query_class") == "aggregate")
    rates = dict(zip(agg["arm"], agg["exact_count_rate"], strict=True))
    assert rates["sqlite-fts"] == 1.0 and rates["file-jsonl"] == 0.0
    html = (smoke_run / "results/report/index.html").read_text()
    assert "sqlite-fts" in html and "nDCG@10 by query class" in html
    assert html.count("data:image/svg+xml;base64,") == len(FIGURES)  # figures embedded


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
    assert post.columns == [
        "arm",
        "overfetch",
        "fetched",
        "mean_slots_filled",
        "fill_rate",
        "recall_at_10",
        "mean_ms",
        "scan_fraction",
    ]
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
    assert len(page["images"]) >= len(FIGURES)
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


def test_bad_config_stops_before_any_job(tmp_path):
    wd = copy_workflow_config(tmp_path)
    (wd / "config" / "bad.yaml").write_text("run: {k: 0}\nbogus_key: 1\n")
    proc = run_snakemake(wd, config="config/bad.yaml")
    assert proc.returncode != 0
    assert "bogus_key" in proc.stderr
    assert not (wd / "results").exists()


@pytest.mark.parametrize(
    ("resources", "got"),
    [(["background_slot=6"], "None"), (["bench_slot=0"], "0"), (["bench_slot=2"], "2")],
)
def test_resources_flag_without_bench_slot_1_stops_before_any_job(tmp_path, resources, got):
    """--resources replaces the profile's list; the cap that keeps timing jobs apart must stay."""
    wd = copy_workflow_config(tmp_path)
    proc = run_snakemake(wd, "--resources", *resources)
    assert proc.returncode != 0
    assert f"bench_slot must be 1 (got {got})" in proc.stderr
    assert "--resources bench_slot=1 background_slot=<N>" in proc.stderr
    assert not (wd / "results").exists()
    ok = run_snakemake(wd, "-n", "--resources", "bench_slot=1", "background_slot=6")
    assert ok.returncode == 0, ok.stderr[-3000:]


def test_locomo_targets(tmp_path):
    """LoCoMo through the workflow (first conversation), when ../shared is present."""
    from support.paths import LOCOMO

    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo file {LOCOMO} absent (a user's clone has no ../shared)")
    wd = copy_workflow_config(tmp_path)
    # the default config with two of its arms (the smoke run takes LoCoMo through all)
    (wd / "config" / "loc.yaml").write_text(
        "arms: [sqlite-fts, lancedb-hybrid]\n"
        f"external:\n  locomo:\n    path: {LOCOMO}\n    limit_conversations: 1\n"
    )
    proc = run_snakemake(
        wd,
        "results/external/locomo/scores.csv",
        "results/figures/locomo.svg",
        config="config/loc.yaml",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    scores = pl.read_csv(wd / "results/external/locomo/scores.csv")
    assert set(scores["arm"]) == {"sqlite-fts", "lancedb-hybrid"}
    assert set(scores["level"]) == {"turn", "session"}
    assert "all" in set(scores["category"])
    fts = scores.filter(
        (pl.col("arm") == "sqlite-fts")
        & (pl.col("level") == "session")
        & (pl.col("category") == "all")
    )
    assert fts["n_queries"][0] == 150
    assert 0.6 < fts["recall_at_5"][0] <= 1.0


def test_locomo_target_without_file_says_where_to_get_it(tmp_path):
    wd = copy_workflow_config(tmp_path)
    proc = run_snakemake(
        wd, "results/external/locomo/corpus/manifest.json", config="config/config.yaml"
    )
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "skipping the LoCoMo targets" in out
    assert "snap-research/LoCoMo" in out
