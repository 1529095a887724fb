"""Tests of the harness benchmark (agentmem.bench): statistics on hand-made timings, the
summary table, a tiny real run (build + raw bulk path + interleaved timing) of
sqlite-fts, file-vec and pg-gin on the ``tiny`` corpus, the remember measure, and an arm
without bench hooks (skipped by the harness and ingest measures, timed by remember).

No timing thresholds are asserted: speed targets live in ``make bench``, never in tests.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from support.hostile import HOSTILE_TEXTS
from support.paths import REPO
from support.postgres import servers_left
from support.tiny import fake_vector

from agentmem import bench, pg
from agentmem.arms.base import Predicate, Query
from agentmem.bench.pipeline import _link_locomo
from agentmem.bench.raw import _raw_hnsw, _raw_jsonl
from agentmem.config import load_config

# ------------------------------------------------------------------ hand-made timings


def test_ratio_of_medians_and_safe_ratio() -> None:
    assert bench.ratio_of_medians([3, 1, 2], [1, 1, 2]) == 2.0  # median 2 / median 1
    assert bench.ratio_of_medians([1.1, 0.9, 1.0, 5.0], [1.0]) == pytest.approx(1.05)
    assert math.isnan(bench.ratio_of_medians([], [1.0]))
    assert math.isnan(bench.safe_ratio(1.0, 0.0))
    assert math.isnan(bench.safe_ratio(math.inf, 1.0))


def test_target_met() -> None:
    assert bench.target_met(1.19, "<=", 1.2) is True
    assert bench.target_met(1.2, "<=", 1.2) is True
    assert bench.target_met(1.21, "<=", 1.2) is False
    assert bench.target_met(0.8, ">=", 0.8) is True
    assert bench.target_met(0.79, ">=", 0.8) is False
    assert bench.target_met(math.nan, "<=", 1.2) is None
    assert bench.target_met(None, ">=", 0.9) is None
    with pytest.raises(ValueError, match="target op"):
        bench.target_met(1.0, "<", 1.2)


def test_harness_stats_on_hand_made_timings() -> None:
    ms = 1_000_000  # ns per ms
    arm = [[1.1 * ms, 1.0 * ms, 1.2 * ms], [2.0 * ms, 2.4 * ms, 2.2 * ms], [0.5 * ms] * 3]
    bare = [[1.0 * ms] * 3, [2.0 * ms] * 3, [0.4 * ms] * 3]
    s = bench.harness_stats(arm, bare)
    # per-query medians: arm 1.1, 2.2, 0.5 ms; bare 1.0, 2.0, 0.4 ms
    assert s["arm_median_ms"] == pytest.approx(1.1)
    assert s["bare_median_ms"] == pytest.approx(1.0)
    assert s["ratio"] == pytest.approx(1.1)
    assert s["ratio_total"] == pytest.approx(3.8 / 3.4, abs=1e-4)
    assert s["per_query_ratio_median"] == pytest.approx(1.1)  # ratios 1.1, 1.1, 1.25
    assert s["overhead_median_us"] == pytest.approx(100.0)  # 100, 200, 100 us
    with pytest.raises(ValueError):
        bench.harness_stats(arm, bare[:2])


def test_throughput_stats_ratio_is_raw_time_over_arm_time() -> None:
    s = bench.throughput_stats(1000, arm_ms=[100.0, 120.0, 110.0], raw_ms=[90.0, 80.0, 100.0])
    assert s["arm_per_s"] == pytest.approx(1000 / 0.110, abs=0.1)
    assert s["raw_per_s"] == pytest.approx(1000 / 0.090, abs=0.1)
    assert s["ratio"] == pytest.approx(90 / 110, abs=1e-4)
    assert bench.throughput_stats(10, [5.0], [])["ratio"] is None


def test_interleaved_times_alternates_order() -> None:
    calls: list[str] = []
    ta, tb = bench.interleaved_times(
        lambda: calls.append("a"), lambda: calls.append("b"), rounds=3, warmup=1
    )
    assert "".join(calls) == "ab" + "ab" + "ba" + "ab"
    assert len(ta) == len(tb) == 3 and all(t > 0 for t in ta + tb)
    calls.clear()
    bench.interleaved_times(
        lambda: calls.append("a"), lambda: calls.append("b"), rounds=2, warmup=0, b_first=True
    )
    assert "".join(calls) == "ba" + "ab"


def _hand_results() -> dict:
    harness = {
        "arms": {
            "fast": {
                "queries": 10,
                "rounds": 5,
                "arm_median_ms": 0.11,
                "bare_median_ms": 0.1,
                "ratio": 1.1,
                "overhead_median_us": 10.0,
                "met": True,
            },
            "slow": {
                "queries": 10,
                "rounds": 5,
                "arm_median_ms": 0.5,
                "bare_median_ms": 0.2,
                "ratio": 2.5,
                "overhead_median_us": 300.0,
                "met": False,
            },
            "broken": {"error": "cannot build: ArmError: boom"},
        }
    }
    ingest = {
        "arms": {
            "fast": {
                "ratio": 0.9,
                "arm_per_s": 900.0,
                "raw_per_s": 1000.0,
                "basis": "ingest",
                "memories": 100,
                "rounds": 3,
                "met": True,
            }
        }
    }
    embedding = {
        "ratio": 0.95,
        "cache_per_s": 95.0,
        "bare_per_s": 100.0,
        "texts": 50,
        "rounds": 2,
        "met": True,
        "backends": {
            "texts": 50,
            "torch_per_s": 100.0,
            "onnx_per_s": 150.0,
            "onnx_speedup": 1.5,
            "cpu_ratio": 1.8,
            "min_cosine": 0.9999998,
        },
    }
    phase = {"returncode": 0, "nothing_to_do": True, "peak_job_rss_mb": 321.0, "peak_job_cmd": "x"}
    pipeline = {
        "config": "config/config.yaml",
        "peak_job_rss_mb": 321.0,
        "phases": {
            "full": {**phase, "wall_s": 700.0, "met": False},
            "rerun": {**phase, "wall_s": 2.0, "met": True},
        },
    }
    rec = {"p95_ms": 2.0, "mean_ms": 1.5, "remembers": 200, "store_memories": 2000}
    remember = {
        "arms": {
            "lite": {**rec, "family": "sqlite", "p50_ms": 1.25, "stored": 200, "met": True},
            "pgslow": {**rec, "family": "postgres", "p50_ms": 12.0, "stored": 200, "met": False},
            "lost": {**rec, "family": "sqlite", "p50_ms": 0.5, "stored": 150, "met": False},
            "other": {**rec, "family": "graph", "p50_ms": 7.0, "stored": 200, "met": None},
            "plugin": {"error": "ArmError: plugin: remember failed"},
        }
    }
    harness["arms"]["plugin"] = {"not_run": "plugin: skipped, declares no bench hooks (...)"}
    return {
        "harness": harness,
        "ingest": ingest,
        "remember": remember,
        "embedding": embedding,
        "pipeline": pipeline,
    }


def test_summary_rows_and_markdown() -> None:
    rows = bench.summary_rows(_hand_results())
    by = {r["measure"]: r for r in rows}
    assert by["harness overhead: fast"]["met"] is True
    assert by["harness overhead: fast"]["value"] == "1.100×"
    assert by["harness overhead: slow"]["met"] is False
    assert by["harness overhead: broken"]["met"] is None
    assert "boom" in by["harness overhead: broken"]["note"]
    assert by["ingest: fast"]["value"] == "0.900×"
    assert by["embedding: cache path vs encode"]["met"] is True
    onnx_row = by["embedding: ONNX vs torch CPU"]
    assert onnx_row["value"] == "1.800×" and onnx_row["met"] is None
    assert "150 vs 100 texts/s (1.500×); min cosine 0.9999998; 50 texts" in onnx_row["note"]
    assert by["pipeline: full run"]["value"] == "700.0 s"
    assert by["pipeline: full run"]["met"] is False
    assert by["pipeline: one figure rebuilt (--force)"]["met"] is None  # not run
    assert by["pipeline: one figure rebuilt (--force)"]["target"] == "≤ 20 s"
    assert by["pipeline: peak RSS of the largest job"]["value"] == "321 MiB"
    assert by["harness overhead: plugin"]["met"] is None
    assert "skipped, declares no bench hooks" in by["harness overhead: plugin"]["note"]
    lite = by["remember one memory: lite"]
    assert (lite["value"], lite["target"], lite["met"]) == ("1.250 ms", "p50 ≤ 5 ms", True)
    assert lite["note"].startswith("p95 2.000 ms, mean 1.500 ms; 200 calls on a store of 2000")
    slow = by["remember one memory: pgslow"]
    assert (slow["value"], slow["target"], slow["met"]) == ("12.000 ms", "p50 ≤ 10 ms", False)
    assert "only 150 of 200 memories stored" in by["remember one memory: lost"]["note"]
    other = by["remember one memory: other"]
    assert (other["target"], other["met"]) == ("—", None)
    assert "family graph: no target" in other["note"]
    assert by["remember one memory: plugin"]["note"] == "ArmError: plugin: remember failed"
    md = bench.render_summary(rows, header="hdr")
    assert "| measure | value | target | met? | note |" in md
    assert "| harness overhead: fast | 1.100× | ≤ 1.2× | yes |" in md
    assert "| harness overhead: slow | 2.500× | ≤ 1.2× | **no** |" in md
    assert "| harness overhead: broken | — | ≤ 1.2× | n/a |" in md
    assert "| remember one memory: pgslow | 12.000 ms | p50 ≤ 10 ms | **no** |" in md
    assert md.rstrip().endswith(f"{len(rows)} measures; 4 target(s) missed.")


def test_run_bench_summary_merges_earlier_results(tmp_path: Path) -> None:
    res = _hand_results()
    (tmp_path / "harness.json").write_text(json.dumps(res["harness"]))
    out = bench.run_bench(
        out_dir=tmp_path,
        config_file=REPO / "config" / "config.yaml",
        arms=[],
        embedding=False,
        progress=False,
    )
    md = (tmp_path / "summary.md").read_text()
    assert "| harness overhead: slow | 2.500× |" in md
    assert out["ingest"] is None and out["pipeline"] is None


def test_pipeline_benchmark_names_missing_config(tmp_path: Path) -> None:
    with pytest.raises(bench.BenchError, match="does not exist"):
        bench.pipeline_benchmark(REPO, tmp_path / "nope.yaml", tmp_path)


def test_run_monitored_sees_the_largest_child(tmp_path: Path) -> None:
    child = "import time; x = b'x' * (64 * 2**20); time.sleep(1.5)"
    cmd = [
        sys.executable,
        "-c",
        f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])",
    ]
    rec = bench.run_monitored(cmd, tmp_path / "run.log", poll_s=0.2)
    assert rec["returncode"] == 0
    assert rec["peak_job_rss_mb"] >= 64
    assert "time.sleep" in rec["peak_job_cmd"]
    assert rec["nothing_to_do"] is False


# ------------------------------------------------------- Snakemake job benchmark files

_TSV_HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time"


def _write_tsv(path: Path, row: str, header: str = _TSV_HEADER) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{header}\n{row}\n")


def _job_dir(root: Path) -> Path:
    """Four benchmark files in Snakemake's format: nested, top level, NA and '-' cells."""
    d = root / "results" / "benchmarks"
    _write_tsv(
        d / "run_arm" / "m" / "file-jsonl.tsv",
        "56.97\t0:00:56\t274.15\t678.37\t238.82\t245.66\t0.98\t494.84\t11.94\t7.75",
    )
    _write_tsv(
        d / "run_arm" / "s" / "pg-gin.tsv",
        "10.50\t0:00:10\t512.25\t900.00\t400.00\t410.00\t0.00\t3.00\t50.00\t3.25",
    )
    _write_tsv(d / "embed_locomo.tsv", "30.00\t0:00:30\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA")
    _write_tsv(d / "generate_corpus" / "xs.tsv", "1.20\t0:00:01\t-\t-\t-\t-\t0.00\t0.00\t-\t0.50")
    return d


def test_read_job_benchmarks_parses_snakemake_files(tmp_path: Path) -> None:
    jobs = bench.read_job_benchmarks(_job_dir(tmp_path))
    assert jobs == [
        {
            "job": "embed_locomo",
            "rule": "embed_locomo",
            "wall_s": 30.0,
            "max_rss_mb": None,
            "cpu_s": None,
        },
        {
            "job": "generate_corpus/xs",
            "rule": "generate_corpus",
            "wall_s": 1.2,
            "max_rss_mb": None,
            "cpu_s": 0.5,
        },
        {
            "job": "run_arm/m/file-jsonl",
            "rule": "run_arm",
            "wall_s": 56.97,
            "max_rss_mb": 274.15,
            "cpu_s": 7.75,
        },
        {
            "job": "run_arm/s/pg-gin",
            "rule": "run_arm",
            "wall_s": 10.5,
            "max_rss_mb": 512.25,
            "cpu_s": 3.25,
        },
    ]
    s = bench.summarise_jobs(jobs, top=3)
    assert s["jobs_total"] == 4
    assert s["jobs_wall_s_sum"] == pytest.approx(56.97 + 10.5 + 30.0 + 1.2)
    assert [j["job"] for j in s["slowest_jobs"]] == [
        "run_arm/m/file-jsonl",
        "embed_locomo",
        "run_arm/s/pg-gin",
    ]
    assert s["by_rule"] == [
        {
            "rule": "run_arm",
            "jobs": 2,
            "wall_s_sum": pytest.approx(67.47),
            "wall_s_max": 56.97,
            "max_rss_mb_max": 512.25,
        },
        {
            "rule": "embed_locomo",
            "jobs": 1,
            "wall_s_sum": 30.0,
            "wall_s_max": 30.0,
            "max_rss_mb_max": None,
        },
        {
            "rule": "generate_corpus",
            "jobs": 1,
            "wall_s_sum": 1.2,
            "wall_s_max": 1.2,
            "max_rss_mb_max": None,
        },
    ]
    assert s["largest_job"] == {"job": "run_arm/s/pg-gin", "rule": "run_arm", "max_rss_mb": 512.25}


def test_read_job_benchmarks_repeats_missing_and_malformed(tmp_path: Path) -> None:
    assert bench.read_job_benchmarks(tmp_path / "nope") == []
    (tmp_path / "empty").mkdir()
    assert bench.read_job_benchmarks(tmp_path / "empty") == []
    assert bench.summarise_jobs([])["largest_job"] is None
    rep = tmp_path / "rep"  # repeat(): mean wall and CPU, largest RSS
    _write_tsv(
        rep / "trial.tsv",
        "2.0\t0:00:02\t100.0\t1\t1\t1\t0\t0\t1\t1.0\n4.0\t0:00:04\t300.0\t1\t1\t1\t0\t0\t1\t3.0",
    )
    assert bench.read_job_benchmarks(rep) == [
        {"job": "trial", "rule": "trial", "wall_s": 3.0, "max_rss_mb": 300.0, "cpu_s": 2.0}
    ]
    bad = tmp_path / "bad"
    _write_tsv(bad / "rule_a" / "x.tsv", "1\t2\t3", header="wall\tmem\tcpu")
    with pytest.raises(bench.BenchError, match=r"rule_a/x\.tsv.*max_rss"):
        bench.read_job_benchmarks(bad)
    hdr_only = tmp_path / "hdr"
    hdr_only.mkdir()
    (hdr_only / "y.tsv").write_text(_TSV_HEADER + "\n")
    with pytest.raises(bench.BenchError, match=r"y\.tsv.*no data row"):
        bench.read_job_benchmarks(hdr_only)


def test_write_job_csv_keeps_missing_values(tmp_path: Path) -> None:
    import polars as pl

    jobs = bench.read_job_benchmarks(_job_dir(tmp_path))
    bench.write_job_csv(tmp_path / "out" / "pipeline_jobs.csv", jobs)
    df = pl.read_csv(tmp_path / "out" / "pipeline_jobs.csv")
    assert df.columns == ["job", "rule", "wall_s", "max_rss_mb", "cpu_s"]
    assert df.height == 4
    assert df["max_rss_mb"].null_count() == 2
    assert df.filter(pl.col("job") == "run_arm/s/pg-gin")["max_rss_mb"].item() == 512.25
    bench.write_job_csv(tmp_path / "none.csv", [])
    assert (tmp_path / "none.csv").read_text().strip() == "job,rule,wall_s,max_rss_mb,cpu_s"


def test_summary_uses_snakemake_job_profile(tmp_path: Path) -> None:
    res = _hand_results()
    jobs = bench.read_job_benchmarks(_job_dir(tmp_path))
    res["pipeline"].update(bench.summarise_jobs(jobs))
    rows = bench.summary_rows(res)
    by = {r["measure"]: r for r in rows}
    peak = by["pipeline: peak RSS of the largest job"]
    assert peak["value"] == "512 MiB"  # Snakemake's max_rss wins over psutil's 321
    assert peak["note"].startswith("run_arm/s/pg-gin")
    tables = bench.pipeline_job_tables(res["pipeline"], top=2)
    assert tables[:2] == ["## Slowest jobs", ""]
    assert tables[2].startswith("4 jobs in the full run; summed job wall time 98.7 s")
    assert "| run_arm/m/file-jsonl | 57.0 | 274 | 7.8 |" in tables
    assert "| embed_locomo | 30.0 | — | — |" in tables
    assert "run_arm/s/pg-gin" not in "\n".join(tables[:12])  # only the top 2 jobs
    i = tables.index("## Wall time by rule")
    assert tables[i + 2 : i + 6] == [
        "| rule | jobs | sum s | max s |",
        "|---|---:|---:|---:|",
        "| run_arm | 2 | 67.5 | 57.0 |",
        "| embed_locomo | 1 | 30.0 | 30.0 |",
    ]
    md = bench.render_summary(rows, header="hdr", sections=tables)
    table_end = md.index(f"{len(rows)} measures; 4 target(s) missed.")
    assert md.index("## Slowest jobs") > table_end > md.index("| pipeline: full run |")
    assert md.endswith("| embed_locomo | 1 | 30.0 | 30.0 |\n")
    assert bench.pipeline_job_tables(None) == []
    assert bench.pipeline_job_tables({"phases": {}}) == []  # pipeline.json of an older run


def test_link_locomo_symlinks_never_copies(tmp_path: Path) -> None:
    repo, work = tmp_path / "repo", tmp_path / "work"
    data = repo / "data" / "external" / "locomo10.json"
    data.parent.mkdir(parents=True)
    data.write_text('[{"conversation": {}}]')
    work.mkdir()
    cfg = repo / "config" / "c.yaml"
    cfg.parent.mkdir()
    cfg.write_text("external:\n  locomo:\n    path: data/external/locomo10.json\n")
    tmp_cfg = work / "c.yaml"
    tmp_cfg.write_text(cfg.read_text())
    rec = _link_locomo(repo, cfg, work, tmp_cfg)
    link = work / "data" / "external" / "locomo10.json"
    assert rec == {"locomo": True, "locomo_path": str(data.resolve()), "locomo_link": str(link)}
    assert link.is_symlink() and link.resolve() == data.resolve()
    # a path leading out of the tree: the temporary config gets the absolute path
    outside = tmp_path / "shared" / "locomo10.json"
    outside.parent.mkdir()
    outside.write_text("[]")
    cfg.write_text("external:\n  locomo:\n    path: ../shared/locomo10.json\n")
    work2 = tmp_path / "work2"
    work2.mkdir()
    tmp_cfg2 = work2 / "c.yaml"
    tmp_cfg2.write_text(cfg.read_text())
    rec = _link_locomo(repo, cfg, work2, tmp_cfg2)
    assert rec["locomo"] is True and rec["locomo_link"] is None
    assert load_config(tmp_cfg2).external["locomo"].path == str(outside.resolve())
    assert not (tmp_path / "shared" / "shared").exists() and list(work2.iterdir()) == [tmp_cfg2]
    # absolute paths need nothing; a missing file turns LoCoMo off
    cfg.write_text(f"external:\n  locomo:\n    path: {outside}\n")
    assert _link_locomo(repo, cfg, work2, tmp_cfg2)["locomo_link"] is None
    cfg.write_text("external:\n  locomo:\n    path: data/nope.json\n")
    assert _link_locomo(repo, cfg, work2, tmp_cfg2) == {
        "locomo": False,
        "locomo_path": None,
        "locomo_link": None,
    }


@pytest.mark.parametrize(
    "flag", ["--pipeline-cores", "--rounds", "--ingest-rounds", "--embed-rounds", "--embed-texts"]
)
@pytest.mark.parametrize("value", ["0", "-1"])
def test_main_rejects_non_positive_counts(flag: str, value: str, capsys, tmp_path) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main([flag, value, "--arms", "", "--skip-embedding", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert f"{flag} must be >= 1, got {value}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # stopped before measuring or writing anything


# ------------------------------------------------------------------------ real runs


def _queries() -> list[Query]:
    def q(qid: str, text: str, **kw) -> Query:
        return Query(qid, text, fake_vector(text), **kw)

    return [
        q("q1", "CFG-799 timeout"),
        q(
            "q2",
            "What is the timeout of SVC-5345?",
            predicate=Predicate("superseded_by", "is_null"),
        ),
        q("q3", "outage disk", predicate=Predicate("created_day", "<=", 250)),
        q("q4", "how many memories about CFG-799", wants_count=True),
        q("q5", "!!!"),  # no search terms: the text arms run no ranking statement
    ]


@pytest.fixture(autouse=True)
def _embedded_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Postgres arms use their embedded server here."""
    monkeypatch.delenv(pg.ENV_DSN, raising=False)


@pytest.mark.parametrize("name", ["sqlite-fts", "file-vec", "pg-gin"])
def test_tiny_real_ingest_and_harness(tiny, tmp_path: Path, name: str) -> None:
    corpus, vectors = tiny
    store = tmp_path / "store"
    rec, arm = bench.ingest_benchmark(
        name, None, corpus, vectors, store, tmp_path / "raw", rounds=1, progress=False
    )
    try:
        assert rec["memories"] == 6 and "raw_error" not in rec
        assert math.isfinite(rec["ratio"]) and rec["ratio"] > 0
        assert rec["arm_per_s"] > 0 and rec["raw_per_s"] > 0
        queries = _queries()
        # the bare call makes the same driver call: same ranked rows as Arm.query
        for q in queries:
            raw = arm.raw_query_call(q, 3)()
            ids = arm.query(q, 3).memory_ids
            if name == "file-vec":
                labels = raw[0][0]
                assert [corpus.memories["memory_id"][int(i)] for i in labels] == ids
            elif ids:
                assert [r[0] for r in raw[0]] == ids
        for i, text in enumerate(HOSTILE_TEXTS):  # the bare call survives hostile text too
            hq = Query(f"h{i}", text, fake_vector(text), wants_count=True)
            arm.raw_query_call(hq, 3)()
        h = bench.harness_overhead(arm, queries, k=3, rounds=3, progress=False)
        assert h["queries"] == len(queries) and h["skipped"] == []
        for key in ("ratio", "ratio_total", "arm_median_ms", "bare_median_ms"):
            assert math.isfinite(h[key]) and h[key] > 0, key
        if name == "pg-gin":  # the raw COPY recreated the layout, generated tsvector included
            with pg.connect_store(store, "pg-gin-raw", create=False) as raw_db:
                n, tsv = raw_db.conn.execute("SELECT count(*), count(tsv) FROM memories").fetchone()
                assert (n, tsv) == (6, 6)
    finally:
        arm.close()
    if name == "pg-gin":  # closing the arm stopped the embedded server
        assert servers_left(store) == []


def bench_once(tiny, tmp_path: Path, arms: list[str], remember_n: int):
    """``bench.bench_arms`` on the tiny corpus: one round, k = 3, default parameters."""
    corpus, vectors = tiny
    return bench.bench_arms(
        arms,
        {},
        corpus,
        vectors,
        _queries(),
        tmp_path,
        k=3,
        rounds=1,
        ingest_rounds=1,
        remember_n=remember_n,
        progress=False,
    )


def test_bench_arms_reports_an_arm_it_cannot_build(tiny, tmp_path: Path) -> None:
    corpus, vectors = tiny
    harness, ingest, remember = bench.bench_arms(
        ["sqlite-fts"],
        {"sqlite-fts": {"bogus": 1}},
        corpus,
        vectors,
        _queries(),
        tmp_path,
        progress=False,
    )
    assert "bogus" in ingest["sqlite-fts"]["error"]
    assert harness["sqlite-fts"]["error"] == ingest["sqlite-fts"]["error"]
    assert remember["sqlite-fts"]["error"] == ingest["sqlite-fts"]["error"]


def test_harness_reports_arm_without_bare_call(tiny) -> None:
    class NoBare:
        name = "no-bare"

    with pytest.raises(bench.BenchError, match="no-bare: skipped, declares no bench hooks") as exc:
        bench.harness_overhead(NoBare(), _queries())  # type: ignore[arg-type]
    assert "missing bare_call, raw_query_call, raw_ids;" in str(exc.value)  # the query hooks


def test_raw_jsonl_and_hnsw_write_every_memory(tiny, tmp_path: Path) -> None:
    corpus, vectors = tiny
    assert _raw_jsonl(corpus, tmp_path) > 0
    lines = (tmp_path / "memories.jsonl").read_text().splitlines()
    assert [json.loads(x)["memory_id"] for x in lines] == corpus.memories["memory_id"].to_list()

    hnsw = {"M": 16, "ef_construction": 200, "random_seed": 100, "num_threads": 1}
    assert _raw_hnsw(hnsw, corpus, vectors, tmp_path) > 0
    import hnswlib

    idx = hnswlib.Index(space="cosine", dim=384)
    idx.load_index(str(tmp_path / "index.bin"))
    assert idx.get_current_count() == 6
    labels, _ = idx.knn_query(vectors.matrix[3], k=1)
    assert int(labels[0][0]) == 3
    assert np.isfinite(vectors.matrix).all()


# ------------------------------------------------------------------------ hooks, remember


def test_ingest_and_harness_read_the_arms_own_hooks(tiny, tmp_path: Path) -> None:
    """The raw path, its basis and the bare-call text come from the arm, with its params."""
    from agentmem.arms.factory import make_arm

    corpus, vectors = tiny
    params = {"M": 8, "ef_construction": 64}
    spec = make_arm("file-vec-meta", params).raw_ingest()
    assert (spec.kind, spec.basis) == ("hnsw", "ingest+index")
    assert spec.hnsw["M"] == 8 and spec.hnsw["ef_construction"] == 64
    rec, arm = bench.ingest_benchmark(
        "file-vec-meta", params, corpus, vectors, tmp_path / "s", tmp_path / "raw", 1, False
    )
    try:
        assert rec["basis"] == "ingest+index" and rec["beyond_raw"] == spec.beyond
        assert rec["raw_path"].startswith("metadata Parquet write + hnswlib")
        h = bench.harness_overhead(arm, _queries(), k=3, rounds=1, progress=False)
        assert h["bare_call"] == type(arm).bare_call.does
        assert h["beyond_bare"] == type(arm).bare_call.beyond
    finally:
        arm.close()


def test_remember_rows_copy_the_corpus_under_fresh_ids(tiny) -> None:
    corpus, vectors = tiny
    frame, vecs = bench.remember_rows(corpus, vectors, 8, prefix="t")
    by_seq = corpus.memories.sort("seq")
    assert frame["memory_id"].to_list() == [f"t-{i:06d}" for i in range(8)]
    order = [i % 6 for i in range(8)]  # cycles through the six memories in seq order
    assert frame["body"].to_list() == [by_seq["body"][i] for i in order]
    assert frame["created_day"].to_list() == [by_seq["created_day"][i] for i in order]
    assert "seq" not in frame.columns and "superseded_by" not in frame.columns
    want = vectors.get([by_seq["memory_id"][i] for i in order])
    assert np.array_equal(vecs.get(frame["memory_id"].to_list()), want)
    assert bench.remember_rows(corpus, vectors, 0)[0].height == 0
    with pytest.raises(bench.BenchError, match="n >= 0"):
        bench.remember_rows(corpus, vectors, -1)


@pytest.mark.parametrize(("name", "target"), [("sqlite-fts", "<= 5 ms"), ("file-jsonl", None)])
def test_remember_benchmark_on_the_tiny_corpus(tiny, tmp_path: Path, name, target) -> None:
    from agentmem.arms.factory import make_arm

    corpus, vectors = tiny
    arm = make_arm(name)
    arm.build(corpus, vectors, tmp_path / "store")
    try:
        rec = bench.remember_benchmark(arm, corpus, vectors, n=4, warmup=1, progress=False)
        assert rec["family"] == type(arm).family
        assert (rec["store_memories"], rec["remembers"], rec["warmup"]) == (6, 4, 1)
        assert rec["stored"] == 4 and rec["target"] == target
        assert 0 < rec["p50_ms"] <= rec["p95_ms"] <= rec["max_ms"]
        assert rec["met"] is (None if target is None else rec["p50_ms"] <= 5.0)
        # the warm-up and the four timed memories are in the store, verbatim
        ids = [f"bench-remember-{i:06d}" for i in range(5)]
        got = arm.fetch(ids)
        assert got["memory_id"].to_list() == ids
        by_seq = corpus.memories.sort("seq")
        assert got["body"].to_list() == by_seq["body"].to_list()[:5]
        with pytest.raises(bench.BenchError, match="n >= 1"):
            bench.remember_benchmark(arm, corpus, vectors, n=0)
    finally:
        arm.close()


class _NoHooks:
    """A plug-in-like arm: the whole contract, no bench hooks (delegates to file-jsonl)."""

    name = "no-hooks"
    family = "file"
    prefix_stable = True

    def __init__(self) -> None:
        from agentmem.arms.files import FileJsonlArm

        self.capabilities = FileJsonlArm.capabilities
        self._arm = FileJsonlArm()

    def build(self, corpus, vectors, store_dir):
        return self._arm.build(corpus, vectors, store_dir)

    def open(self, store_dir):
        self._arm.open(store_dir)

    def remember(self, memories, vectors):
        self._arm.remember(memories, vectors)

    def query(self, q, k):
        return self._arm.query(q, k)

    def fetch(self, memory_ids):
        return self._arm.fetch(memory_ids)

    def explain(self, q, k=10):
        return self._arm.explain(q, k)

    def storage(self):
        return self._arm.storage()

    def close(self):
        self._arm.close()


def test_bench_arms_skips_an_arm_without_hooks_but_times_its_remember(
    tiny, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentmem.arms import ARMS

    monkeypatch.setitem(ARMS, "no-hooks", _NoHooks)
    harness, ingest, remember = bench_once(tiny, tmp_path, ["no-hooks", "file-jsonl"], 3)
    reason = "no-hooks: skipped, declares no bench hooks (missing bare_call, raw_query_call, "
    assert harness["no-hooks"]["not_run"].startswith(reason)
    assert ingest["no-hooks"]["not_run"] == (
        "no-hooks: skipped, declares no bench hooks (missing raw_ingest; see agentmem.arms.hooks)"
    )
    assert remember["no-hooks"]["stored"] == 3 and remember["no-hooks"]["target"] is None
    assert harness["file-jsonl"]["queries"] == 5 and ingest["file-jsonl"]["memories"] == 6
    assert remember["file-jsonl"]["stored"] == 3
    rows = {r["measure"]: r for r in bench.summary_rows({"harness": {"arms": harness}})}
    assert rows["harness overhead: no-hooks"]["value"] == "—"
    assert not (tmp_path / "stores" / "no-hooks").exists()  # removed after the arm


def test_bench_arms_times_a_product_without_a_raw_ingest_path(tiny, tmp_path: Path) -> None:
    """A product arm has a bare driver call but no raw bulk path: harness yes, ingest no."""
    harness, ingest, remember = bench_once(tiny, tmp_path, ["lancedb"], 0)
    assert ingest["lancedb"]["not_run"].startswith("lancedb: skipped, declares no bench hooks")
    assert "raw_ingest" in ingest["lancedb"]["not_run"]
    assert harness["lancedb"]["queries"] == 5 and harness["lancedb"]["ratio"] > 0
    assert "count_rows" in harness["lancedb"]["bare_call"]
    assert remember == {}
