"""The workflow refuses what it cannot run: each test starts Snakemake on config/ and profiles/
copied into a working directory of its own, without the smoke run of tests/test_e2e.py.

A bad configuration, flag or dataset stops Snakemake before any job (no ``results/``); a
LoCoMo target without its file fails in its job, saying where to get the file. The slots and
priorities of the jobs planned are those profiles/default/config.yaml describes.
"""

from __future__ import annotations

import shutil

import pytest
from support.paths import REPO
from support.workflow import copy_workflow_config, planned_jobs, run_snakemake


def test_dataset_with_no_configured_arm_is_skipped_and_its_target_refused(tmp_path):
    """An external entry whose arms are none of `arms` plans no job of it, says so, and
    asking for its scores stops before any job with the key named."""
    wd = copy_workflow_config(tmp_path)
    tiny = REPO / "tests/data/tiny-memory"
    (wd / "config" / "narrow.yaml").write_text(
        "main_size: xs\nsizes: {xs: {facts: 40, queries_per_class: 4}}\nscaling_sizes: [xs]\n"
        "arms: [file-jsonl, sqlite-fts]\n"
        f"external: {{tiny: {{format: agentmem-memory, path: '{tiny}', arms: [pg-gin]}}}}\n"
    )
    proc = run_snakemake(wd, "-n", config="config/narrow.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "external.tiny.arms ['pg-gin'] names none of arms: skipping its targets" in out
    assert "run_arm_external" not in out and "rule run_arm:" in out
    proc = run_snakemake(wd, "results/external/tiny/scores.csv", config="config/narrow.yaml")
    assert proc.returncode != 0
    assert "external.tiny.arms names none of the configured arms" in proc.stderr
    assert not (wd / "results").exists()


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


def test_resources_flag_with_bench_slot_1_plans_the_workflow(tmp_path):
    """--resources bench_slot=1 with more background slots: the whole workflow plans (-n)."""
    wd = copy_workflow_config(tmp_path)
    ok = run_snakemake(wd, "-n", "--resources", "bench_slot=1", "background_slot=6")
    assert ok.returncode == 0, ok.stderr[-3000:]


def test_timing_jobs_share_the_background_slots_and_go_first(tmp_path):
    """Every timing job (bench_slot) also holds a background_slot and outranks every
    background job but an encoder, so the slot it frees goes to the next timing job; the
    further corpora's jobs outrank the other background ones (they end in a chain)."""
    wd = copy_workflow_config(tmp_path)
    tiny = REPO / "tests/data/tiny-memory"
    smoke = (wd / "config" / "smoke.yaml").read_text()
    (wd / "config" / "tiny.yaml").write_text(
        smoke + f"\nexternal: {{tiny: {{format: agentmem-memory, path: '{tiny}'}}}}\n"
    )
    proc = run_snakemake(wd, "-n", config="config/tiny.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = planned_jobs(proc.stdout)
    timing = [j for j in jobs if j["resources"].get("bench_slot") == "1"]
    background = [
        j for j in jobs if j["resources"].get("background_slot") == "1" and j not in timing
    ]
    assert {"run_arm", "run_pareto_point", "embed_texts"} <= {j["rule"] for j in timing}
    assert all(j["resources"].get("background_slot") == "1" for j in timing)
    rules = {j["rule"] for j in background}
    assert {"embed_external", "embed_robustness"} <= rules
    assert any(rule.startswith("run_arm_external") for rule in rules)
    assert {"check_robustness_corpus", "run_budget_sweep"} <= rules
    untimed = [j for j in background if j["rule"] != "embed_texts"]
    assert min(j["priority"] for j in timing) > max(j["priority"] for j in untimed)
    further = [j for j in untimed if j["rule"] in ("embed_robustness", "check_robustness_corpus")]
    rest = [j for j in untimed if j not in further and j["rule"] != "embed_external"]
    assert min(j["priority"] for j in further) > max(j["priority"] for j in rest)


def test_locomo_target_without_file_says_where_to_get_it(tmp_path):
    wd = copy_workflow_config(tmp_path)
    (wd / "config" / "missing.yaml").write_text(
        "external:\n  locomo:\n    path: data/external/no-such-locomo10.json\n"
    )
    proc = run_snakemake(
        wd, "results/external/locomo/source/turns/dataset.json", config="config/missing.yaml"
    )
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "skipping the LoCoMo targets" in out
    assert "Error in rule convert_locomo" in out
    assert "snap-research/LoCoMo" in out


def test_malformed_dataset_stops_before_any_job(tmp_path):
    """A configured agentmem-memory dataset with a bad field stops the workflow at parse time."""
    wd = copy_workflow_config(tmp_path / "wd")
    bad = tmp_path / "bad"
    shutil.copytree(REPO / "tests/data/tiny-memory", bad)
    lines = (bad / "corpus.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"day": 0', '"day": "x"')
    (bad / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    (wd / "config" / "bad.yaml").write_text(
        f"external:\n  mine:\n    format: agentmem-memory\n    path: {bad}\n"
    )
    proc = run_snakemake(wd, "results/external/mine/scores.csv", config="config/bad.yaml")
    assert proc.returncode != 0
    assert f'external.mine: {bad}/corpus.jsonl:3: day: expected an integer >= 0, got "x"' in (
        proc.stderr
    )
    assert not (wd / "results").exists()
