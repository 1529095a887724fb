"""Tests of the run timeline (agentmem.bench.timeline): a hand-written Snakemake log and
benchmark files with known times, lanes and inputs; the critical path and the lanes' busy
and idle time worked out by hand; a log without jobs; failed and unfinished jobs; the
files written (CSV, Markdown, SVG); the command line; the pipeline benchmark's and the
summary's use of it. No timing thresholds are asserted.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from support.paths import REPO

from agentmem import bench
from agentmem.bench import timeline as tlm
from agentmem.bench.pipeline import _collect_timeline
from agentmem.bench.summary import timeline_section

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time"

# Job starts and ends (07:00:SS), as the log says them, and what the benchmarks add:
#   3  make_corpus  other       00 -> 10   s=9.0   (starts 1.0)
#   4  crash_trial  crash       00 -> 30   s=29.2  (starts 0.8), threads 0, no CPU figure
#   5  embed        timing      10 -> 20   s=9.5   (starts 10.5)
#   6  run_arm      timing      20 -> 51   s=30.25 (starts 20.75); a directory output
#   7  sweep        background  20 -> 25   failed: its stale benchmark (500 s) is ignored
#   8  score        timing      55 -> 58   s=2.0   (starts 56); reads a file in 6's directory
#   9  late         other       56 -> 58   never finishes: unfinished at the log's last time
#   0  all          other       58 -> 58   no benchmark
LOG = """\
Assuming unrestricted shared filesystem usage.

SNAKEMAKE
=========
  Date: 2026-12-03 07:00:00
  Working directory: {wd}

Building DAG of jobs...
Provided cores: 2
Provided resources: bench_slot=Resource("bench_slot", 1)
Select jobs to execute...
Execute 2 jobs...
[Thu Dec  3 07:00:00 2026]
rule make_corpus:
    input: {wd}/src/make.py
    output: results/corpus/s/a.parquet, results/corpus/s/b.parquet
    log: results/logs/make_corpus/s.log
    jobid: 3
    benchmark: results/benchmarks/make_corpus/s.tsv
    reason: Missing output files: results/corpus/s/a.parquet
    wildcards: size=s
    resources: tmpdir=/tmp, mem_mb=1000, mem=1 GB
[Thu Dec  3 07:00:00 2026]
localrule crash_trial:
    output: results/trials/crash.csv, results/stores/crash
    jobid: 4
    benchmark: results/benchmarks/crash_trial.tsv
    threads: 0
    resources: tmpdir=/tmp, crash_slot=1, mem_mb=2000, mem=2 GB
[Thu Dec  3 07:00:10 2026]
Finished jobid: 3 (Rule: make_corpus)
1 of 8 steps (12%) done
[Thu Dec  3 07:00:10 2026]
rule embed:
    input: results/corpus/s/a.parquet, {wd}/src/embed.py
    output: results/emb/s.parquet
    jobid: 5
    benchmark: results/benchmarks/embed/s.tsv
    wildcards: size=s
    threads: 2
    resources: tmpdir=/tmp, bench_slot=1, background_slot=0, mem_mb=4000
[Thu Dec  3 07:00:20 2026]
Finished jobid: 5 (Rule: embed)
[Thu Dec  3 07:00:20 2026]
rule run_arm:
    input: results/corpus/s/b.parquet, results/emb/s.parquet
    output: results/stores/s/x, results/runs/s/x.parquet
    jobid: 6
    benchmark: results/benchmarks/run_arm/s/x.tsv
    wildcards: size=s, arm=x
    resources: tmpdir=/tmp, bench_slot=1
[Thu Dec  3 07:00:20 2026]
rule sweep:
    input: results/emb/s.parquet
    output: results/sweeps/a.csv
    jobid: 7
    benchmark: results/benchmarks/sweep.tsv
    resources: tmpdir=/tmp, background_slot=1
[Thu Dec  3 07:00:25 2026]
Error in rule sweep:
    message: None
    jobid: 7
    output: results/sweeps/a.csv
    log: results/logs/sweep.log (check log file(s) for error details)
Logfile results/logs/sweep.log:
================================================================================
[Fri Dec  4 11:00:00 2026]
localrule bogus:
    jobid: 99
Finished jobid: 6 (Rule: run_arm)
================================================================================
[Thu Dec  3 07:00:30 2026]
Finished jobid: 4 (Rule: crash_trial)
[Thu Dec  3 07:00:51 2026]
Finished jobid: 6 (Rule: run_arm)
[Thu Dec  3 07:00:55 2026]
rule score:
    input: results/runs/s/x.parquet, results/stores/s/x/index.bin, results/trials/crash.csv
    output: results/metrics/s/x.csv
    jobid: 8
    benchmark: results/benchmarks/score/s/x.tsv
    wildcards: size=s, arm=x
    resources: tmpdir=/tmp, bench_slot=1
[Thu Dec  3 07:00:56 2026]
localrule late:
    output: results/late.txt
    jobid: 9
    resources: tmpdir=/tmp
[Thu Dec  3 07:00:58 2026]
Finished jobid: 8 (Rule: score)
[Thu Dec  3 07:00:58 2026]
localrule all:
    input: results/metrics/s/x.csv
    jobid: 0
    resources: tmpdir=/tmp
[Thu Dec  3 07:00:58 2026]
Finished jobid: 0 (Rule: all)
"""

BENCH = {  # path below results/benchmarks: (s, max_rss, cpu_time)
    "make_corpus/s.tsv": ("9.0", "100.5", "8.0"),
    "crash_trial.tsv": ("29.2", "50.0", "NA"),
    "embed/s.tsv": ("9.5", "400.0", "18.0"),
    "run_arm/s/x.tsv": ("30.25", "300.0", "10.0"),
    "sweep.tsv": ("500.0", "1.0", "1.0"),  # left by an earlier run; this one failed
    "score/s/x.tsv": ("2.0", "80.0", "1.0"),
}


def write_run(root: Path, log_name: str = "2026-12-03T070000.000000.snakemake.log") -> Path:
    """The hand-written run under ``root``: its log in .snakemake/log and its benchmarks."""
    for rel, (s, rss, cpu) in BENCH.items():
        path = root / "results" / "benchmarks" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        row = [s, "0:00:00", rss, "1", "1", "1", "0", "0", "50", cpu]
        path.write_text(HEADER + "\n" + "\t".join(row) + "\n")
    log = root / ".snakemake" / "log" / log_name
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(LOG.format(wd=root))
    return log


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, dict]:
    log = write_run(tmp_path)
    return log, tlm.build_timeline(log, tmp_path / "results" / "benchmarks")


def test_jobs_lanes_and_times(run) -> None:
    _, tl = run
    jobs = {j["jobid"]: j for j in tl["jobs"]}
    assert sorted(jobs) == [0, 3, 4, 5, 6, 7, 8, 9]  # the failed job's printed log is skipped
    got = {
        i: (j["lane"], j["status"], j["start_s"], j["end_s"], j["wall_s"]) for i, j in jobs.items()
    }
    assert got == {
        3: ("other", "ok", 1.0, 10.0, 9.0),
        4: ("crash", "ok", pytest.approx(0.8), 30.0, 29.2),
        5: ("timing", "ok", 10.5, 20.0, 9.5),
        6: ("timing", "ok", 20.75, 51.0, 30.25),
        7: ("background", "failed", 20.0, 25.0, 5.0),
        8: ("timing", "ok", 56.0, 58.0, 2.0),
        9: ("other", "incomplete", 56.0, 58.0, 2.0),
        0: ("other", "ok", 58.0, 58.0, 0.0),
    }
    assert jobs[6]["label"] == "run_arm/s/x" and jobs[6]["wildcards"] == "size=s, arm=x"
    assert jobs[0]["label"] == "all"
    assert (jobs[4]["threads"], jobs[5]["threads"], jobs[6]["threads"]) == (0, 2, 1)
    assert jobs[5]["resources"] == "bench_slot=1"  # background_slot=0 declares nothing
    assert (jobs[4]["resources"], jobs[3]["resources"]) == ("crash_slot=1", "")
    assert (jobs[5]["cpu_s"], jobs[4]["cpu_s"], jobs[7]["cpu_s"]) == (18.0, None, None)
    assert jobs[5]["max_rss_mb"] == 400.0
    assert jobs[3]["inputs"] == ["src/make.py"]  # the working directory is stripped
    t = tl["totals"]
    assert (t["elapsed_s"], t["jobs"], t["failed"], t["incomplete"]) == (58.0, 8, 1, 1)
    assert (t["cpu_s"], t["cpu_jobs"]) == (37.0, 4)
    assert t["cpu_util"] == pytest.approx(37.0 / (58.0 * 2))
    assert tl["cores"] == 2


def test_server_cpu_from_the_jobs_logs(tmp_path: Path) -> None:
    """Server-CPU lines of an ok job's log are summed; a failed job's are not counted."""
    from agentmem.pg.postmaster import SERVER_CPU_LINE

    log = write_run(tmp_path)
    logs = tmp_path / "results" / "logs"
    (logs / "make_corpus").mkdir(parents=True)
    (logs / "make_corpus" / "s.log").write_text(
        f"noise\n{SERVER_CPU_LINE}1.500 (/a/pgdata)\nmore noise\n"
        f"{SERVER_CPU_LINE}2.250 (/b/pgdata)\n{SERVER_CPU_LINE}oops (/c/pgdata)\n"
    )
    (logs / "sweep.log").write_text(f"{SERVER_CPU_LINE}100.0 (/d/pgdata)\n")  # failed job
    tl = tlm.build_timeline(log, tmp_path / "results" / "benchmarks")
    jobs = {j["jobid"]: j for j in tl["jobs"]}
    assert jobs[3]["server_cpu_s"] == 3.75
    assert (jobs[5]["server_cpu_s"], jobs[7]["server_cpu_s"]) == (None, None)
    t = tl["totals"]
    assert (t["cpu_s"], t["server_cpu_s"]) == (37.0, 3.75)
    assert t["cpu_util"] == pytest.approx((37.0 + 3.75) / (58.0 * 2))
    md = tlm.render_markdown(tl)
    assert "plus 3.8 s of the embedded PostgreSQL servers" in md
    assert "| make_corpus | 1 | 9.0 | 8.0 | 3.8 |" in md


def test_job_cpu_from_the_jobs_logs_replaces_the_benchmark_sample(tmp_path: Path) -> None:
    """An ok job's last job-CPU line replaces its benchmark's cpu_time; a failed job's is unread."""
    from agentmem.procs import JOB_CPU_LINE

    log = write_run(tmp_path)
    logs = tmp_path / "results" / "logs"
    (logs / "make_corpus").mkdir(parents=True)
    (logs / "make_corpus" / "s.log").write_text(
        f"{JOB_CPU_LINE}5.0\nnoise\n{JOB_CPU_LINE}12.500\n{JOB_CPU_LINE}oops\n"
    )
    (logs / "sweep.log").write_text(f"{JOB_CPU_LINE}100.0\n")  # failed job
    tl = tlm.build_timeline(log, tmp_path / "results" / "benchmarks")
    jobs = {j["jobid"]: j for j in tl["jobs"]}
    assert (jobs[3]["cpu_s"], jobs[3]["cpu_from_log"]) == (12.5, True)  # benchmark said 8.0
    assert (jobs[5]["cpu_s"], jobs[5]["cpu_from_log"]) == (18.0, False)
    assert (jobs[7]["cpu_s"], jobs[7]["cpu_from_log"]) == (None, False)
    t = tl["totals"]
    assert (t["cpu_s"], t["cpu_jobs"], t["cpu_logged_jobs"]) == (37.0 - 8.0 + 12.5, 4, 1)
    assert "over the 4 jobs that report it (1 in their logs as they exited, 3 in their " in (
        tlm.render_markdown(tl)
    )
    for j in tl["jobs"]:
        j["cpu_from_log"] = j["cpu_s"] is not None
    tl["totals"]["cpu_logged_jobs"] = 4
    assert "over the 4 jobs that report it (each in its log as it exited), plus" in (
        tlm.render_markdown(tl)
    )


def test_critical_path_worked_by_hand(run) -> None:
    _, tl = run
    steps = [(s["jobid"], s["start_s"], s["wait_s"], s["wall_s"]) for s in tl["critical_path"]]
    # all <- score (its run_arm input, via a file inside run_arm's directory output, ended
    # last) <- run_arm (after embed, not make_corpus) <- embed <- make_corpus
    assert steps == [
        (3, 1.0, 1.0, 9.0),
        (5, 10.5, 0.5, 9.5),
        (6, 20.75, 0.75, 30.25),
        (8, 56.0, 5.0, 2.0),
        (0, 58.0, 0.0, 0.0),
    ]
    marked = sorted(j["jobid"] for j in tl["jobs"] if j["on_critical_path"])
    assert marked == [0, 3, 5, 6, 8]


def test_lane_busy_and_idle_worked_by_hand(run) -> None:
    _, tl = run
    lanes = {
        k: (s["jobs"], s["first_s"], s["last_s"], s["busy_s"], s["idle_s"])
        for k, s in tl["lanes"].items()
    }
    assert list(lanes) == ["timing", "background", "crash", "other"]
    assert lanes["timing"] == (3, 10.5, 58.0, 41.75, 5.75)
    assert lanes["background"] == (1, 20.0, 25.0, 5.0, 0.0)
    assert lanes["crash"] == (1, pytest.approx(0.8), 30.0, 29.2, 0.0)
    assert lanes["other"] == (3, 1.0, 58.0, 11.0, 46.0)  # make_corpus 1-10, late 56-58
    assert tl["lanes"]["timing"]["utilisation"] == pytest.approx(41.75 / 47.5)


def test_without_benchmarks_the_log_times_are_used(tmp_path: Path) -> None:
    log = write_run(tmp_path)
    tl = tlm.build_timeline(log, tmp_path / "nowhere")
    job = {j["jobid"]: j for j in tl["jobs"]}[6]
    assert (job["start_s"], job["end_s"], job["wall_s"], job["cpu_s"]) == (20.0, 51.0, 31.0, None)
    assert tl["totals"]["cpu_s"] is None and tl["totals"]["cpu_util"] is None


def test_files_written(run, tmp_path: Path) -> None:
    _, tl = run
    paths = tlm.write_timeline(tl, tmp_path / "out", {"run_arm": "arms"})
    rows = list(csv.DictReader(paths["csv"].open()))
    assert list(rows[0]) == tlm.COLUMNS
    assert [r["jobid"] for r in rows] == ["4", "3", "5", "7", "6", "8", "9", "0"]  # by start
    sweep = next(r for r in rows if r["rule"] == "sweep")
    assert (sweep["status"], sweep["lane"], sweep["resources"]) == (
        "failed",
        "background",
        "background_slot=1",
    )
    assert next(r for r in rows if r["rule"] == "score")["on_critical_path"] == "True"
    md = paths["md"].read_text()
    assert "8 jobs (1 failed, 1 unfinished), **58.0 s**" in md
    assert "| timing | 3 | 41.8 | 41.8 | 5.8 | 10.5 | 58.0 | 88% |" in md
    assert "| 4 | score/s/x | timing | 56.0 | 5.0 | 2.0 |" in md
    assert "| sweep | background | failed | 20.0 | 5.0 | — | — |" in md
    assert "| run_arm | 1 | 30.2 | 10.0 |" in md
    svg = paths["svg"].read_text()
    assert svg.startswith("<?xml") and "Where the time went" in svg
    assert paths["svg"].with_suffix(".png").is_file()


def test_log_without_jobs(tmp_path: Path) -> None:
    log = tmp_path / "idle.snakemake.log"
    log.write_text(
        "Building DAG of jobs...\nNothing to be done (all requested files are present).\n"
    )
    tl = tlm.build_timeline(log)
    assert tl["jobs"] == [] and tl["critical_path"] == [] and tl["lanes"] == {}
    assert tl["totals"]["elapsed_s"] == 0.0
    with pytest.raises(bench.BenchError, match="no job"):
        tlm.write_timeline(tl, tmp_path / "out")
    assert tlm.run_timeline([str(log)], tmp_path / "out") is None
    assert tlm.run_timeline([], tmp_path / "out") is None
    assert not (tmp_path / "out").exists()
    with pytest.raises(bench.BenchError, match="cannot read"):
        tlm.build_timeline(tmp_path / "missing.log")


def test_onsuccess_hook_writes_and_says_where(tmp_path: Path, monkeypatch) -> None:
    log = write_run(tmp_path)
    monkeypatch.chdir(tmp_path / "results")  # benchmark paths resolve against the log's workdir
    line = tlm.run_timeline([str(log)], tmp_path / "out")
    assert line.startswith(f"Timeline: {(tmp_path / 'out' / 'timeline.md').resolve()}")
    assert "8 jobs in 58 s; its critical path (5 jobs) waited 7 s" in line
    rows = list(csv.DictReader((tmp_path / "out" / "timeline.csv").open()))
    assert next(r for r in rows if r["rule"] == "run_arm")["wall_s"] == "30.25"


def test_cli_on_the_fixture(tmp_path: Path, monkeypatch, capsys) -> None:
    write_run(tmp_path, "2026-12-01T000000.000000.snakemake.log")
    (tmp_path / ".snakemake" / "log" / "2026-12-01T000000.000000.snakemake.log").write_text("")
    write_run(tmp_path)  # the newest log: the default
    monkeypatch.chdir(tmp_path)
    assert bench.main(["timeline", "--out", "tl"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Where the time went") and "| 4 | score/s/x | timing |" in out
    assert sorted(p.name for p in (tmp_path / "tl").iterdir()) == [
        "timeline.csv",
        "timeline.md",
        "timeline.png",
        "timeline.svg",
    ]
    old = tmp_path / ".snakemake" / "log" / "2026-12-01T000000.000000.snakemake.log"
    assert bench.main(["timeline", "--log", str(old), "--out", "tl2"]) == 2
    assert "no job ran" in capsys.readouterr().err
    assert bench.main(["timeline", "--log", "nope.log"]) == 2
    assert "nope.log does not exist" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path / "results")
    assert bench.main(["timeline"]) == 2
    assert "no Snakemake log in" in capsys.readouterr().err


def test_rule_groups_name_the_workflow_file() -> None:
    groups = tlm.rule_groups(REPO)
    assert groups["run_arm"] == "arms" and groups["plot_crash"] == "figures"
    assert groups["all"] == "Snakefile"
    assert tlm.rule_groups(REPO / "docs") == {}


def test_pipeline_record_and_summary_section(tmp_path: Path) -> None:
    write_run(tmp_path)
    rec = _collect_timeline(tmp_path, tmp_path / "bench", REPO)["timeline"]
    assert rec["md"] == str(tmp_path / "bench" / "timeline.md")
    assert (rec["elapsed_s"], rec["lanes"]["timing"]["idle_s"]) == (58.0, 5.75)
    assert rec["critical_path"]["jobs"] == [
        "make_corpus/s",
        "embed/s",
        "run_arm/s/x",
        "score/s/x",
        "all",
    ]
    assert (rec["critical_path"]["wall_s"], rec["critical_path"]["wait_s"]) == (50.75, 7.25)
    lines = timeline_section({"timeline": rec})
    assert lines[0] == "## Where the time went"
    assert "`timeline.md`" in lines[2] and "Elapsed 58.0 s" in lines[2]
    assert "| timing | 41.8 | 5.8 | 88% |" in lines
    assert "make_corpus/s → embed/s → run_arm/s/x → score/s/x → all." in lines[-2]
    pipe = {"timeline": rec, "slowest_jobs": [], "by_rule": []}
    assert bench.pipeline_job_tables(pipe) == lines
    err = _collect_timeline(tmp_path / "empty", tmp_path / "bench2", REPO)
    assert "no Snakemake log" in err["timeline_error"]
    assert timeline_section(err)[2].startswith("No timeline: BenchError")
    assert timeline_section({}) == []
