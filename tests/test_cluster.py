"""The smoke workflow through a real cluster executor plugin: every job is its own process.

Snakemake's ``cluster-generic`` executor plugin submits each job through
``tests/cluster/submit.sh``, a local stand-in for ``sbatch``: the jobscript runs as a
detached process in its own session, and ``tests/cluster/status.sh`` reports
running/success/failed from the exit code the wrapper records (the plugin's own marker
files are not used once a status command is given). Each job is then a fresh
``snakemake --mode remote`` process that reads its inputs from disk, as on a cluster node:
nothing is shared with the main Snakemake process or with other jobs but files. Every
embedded PostgreSQL server is started and stopped inside the job that uses it, and a
later job (a sweep) starts it again from the store directory.

To keep ``make test`` fast (every cluster job pays ~3 s of Snakemake start-up) the run
uses two arms (sqlite-fts and pg-hnsw), two crash families with one trial each and a
small lost-update trial, on ``config/smoke.yaml``, and asks for the targets in
:data:`TARGETS` rather than the whole DAG: the per-arm tables, the trials, and the two
sweeps that reopen stores built by other jobs (the budget sweep for every arm, the
post-filter sweep for pg-hnsw). The full DAG up to the HTML report runs locally in
tests/test_e2e.py.

The working directory is a dedicated ``mkdtemp`` outside pytest's temporary tree:
concurrent pytest sessions reset ``/tmp/pytest-of-<user>`` to mode 0700, which would lock
the embedded servers (run as OS user ``pgserver`` under root) out of their data
directories.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from itertools import pairwise
from pathlib import Path

import polars as pl
import psutil
import pytest
from support.paths import REPO
from support.postgres import servers_under
from support.workflow import SNAKEMAKE, copy_workflow_config, planned_jobs

CLUSTER = REPO / "tests" / "cluster"
SUBMIT, STATUS, CANCEL = (CLUSTER / f"{n}.sh" for n in ("submit", "status", "cancel"))
ARMS = ["sqlite-fts", "pg-hnsw"]
CRASH_FAMILIES = ["sqlite", "postgres-server"]
CLUSTER_CONFIG = f"""\
# test_cluster.py: a small smoke run (merged over config/smoke.yaml)
arms: {json.dumps(ARMS)}
trials:
  crash:
    trials: 1
    families: {json.dumps(CRASH_FAMILIES)}
  lost_update:
    writers: 2
    increments: 5
"""
PG_STORE = "results/stores/xs/pg-hnsw"
#: what the cluster run builds (with everything they depend on)
TARGETS = (
    "results/tables/by_class.csv",
    "results/trials/crash.csv",
    "results/trials/lost_update.csv",
    "results/sweeps/budget.csv",
    "results/sweeps/postfilter.csv",
)


def _job_pids(state: Path) -> list[int]:
    """Pids of the jobs submit.sh started (from its state directory)."""
    out = []
    for f in state.glob("*.pid"):
        try:
            out.append(int(f.read_text().strip()))
        except ValueError:
            continue
    return out


@pytest.fixture
def workdir():
    """A fresh working directory with config/ and profiles/; cleaned up afterwards.

    Any job process group still running at the end (a failed or timed-out run) is
    terminated by its recorded pid before the directory is removed.
    """
    wd = Path(tempfile.mkdtemp(prefix="agentmem-cluster-"))
    copy_workflow_config(wd, encoder=True)
    (wd / "config" / "cluster.yaml").write_text(CLUSTER_CONFIG)
    yield wd
    for pid in _job_pids(wd / ".cluster-state"):
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                os.killpg(pid, signal.SIGTERM)
        except (psutil.Error, ProcessLookupError, PermissionError):
            pass
    shutil.rmtree(wd, ignore_errors=True)


def run_cluster(
    wd: Path, *targets: str, configs: tuple[str, ...] = ("config/smoke.yaml", "config/cluster.yaml")
) -> subprocess.CompletedProcess:
    """Run Snakemake in ``wd`` with the cluster-generic executor and the local scripts."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTMEM_PG_DSN"}  # embedded mode
    env["AGENTMEM_CLUSTER_STATE"] = str(wd / ".cluster-state")
    env.setdefault("HF_HUB_OFFLINE", "1")
    cmd = [
        SNAKEMAKE,
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(wd),
        "--executor",
        "cluster-generic",
        "--cluster-generic-submit-cmd",
        shlex.quote(str(SUBMIT)),
        "--cluster-generic-status-cmd",
        shlex.quote(str(STATUS)),
        "--cluster-generic-cancel-cmd",
        str(CANCEL),
        "--jobs",
        "2",
        "--seconds-between-status-checks",
        "1",
        "--configfile",
        *configs,
    ]
    if targets:
        cmd += ["--", *targets]
    return subprocess.run(cmd, cwd=wd, env=env, capture_output=True, text=True, timeout=600)


def overlapping_runs(spans: list[tuple[float, float]]) -> int:
    """Number of maximal runs of overlapping ``(start, end)`` intervals (1 for any overlap)."""
    runs, end = 0, float("-inf")
    for start, stop in sorted(spans):
        if start > end:
            runs += 1
        end = max(end, stop)
    return runs


def submitted_jobs(state: Path) -> list[dict]:
    """One record per job submit.sh ran: rule, params, files, pid, exit code, start/end times.

    The rule, params and files (input and output) come from the ``# properties = {...}``
    line Snakemake writes into every jobscript; start is when submit.sh recorded the pid,
    end when the wrapper recorded the exit code.
    """
    jobs = []
    for script in sorted(state.glob("*.jobscript")):
        stem = script.with_suffix("")
        props_line = next(
            line for line in script.read_text().splitlines() if line.startswith("# properties")
        )
        props = json.loads(props_line.split("=", 1)[1])
        rc_file = Path(f"{stem}.rc")
        jobs.append(
            {
                "id": stem.name,
                "rule": props["rule"],
                "params": props.get("params", {}),
                "files": [*(props.get("input") or []), *(props.get("output") or [])],
                "resources": props.get("resources", {}),
                "pid": int(Path(f"{stem}.pid").read_text()),
                "rc": rc_file.read_text().strip() if rc_file.exists() else None,
                "start": Path(f"{stem}.pid").stat().st_mtime,
                "end": rc_file.stat().st_mtime if rc_file.exists() else None,
            }
        )
    return jobs


# ------------------------------------------------------------------ the scripts alone
def _status(state: Path, job_id: str) -> str:
    env = {**os.environ, "AGENTMEM_CLUSTER_STATE": str(state)}
    out = subprocess.run(
        [str(STATUS), job_id], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.count("\n") == 1, out  # the plugin wants exactly one line
    return out.strip()


def _submit(state: Path, tmp: Path, body: str) -> str:
    script = tmp / f"job{len(list(tmp.glob('job*.sh')))}.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    env = {**os.environ, "AGENTMEM_CLUSTER_STATE": str(state)}
    out = subprocess.run(
        [str(SUBMIT), str(script)], env=env, capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("job-"), out  # one job id, like sbatch
    return lines[0]


def _wait_status(state: Path, job_id: str, want: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while (got := _status(state, job_id)) != want and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def test_scripts_report_success_failure_running_and_cancel(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ok = _submit(state, tmp_path, "echo hello")
    bad = _submit(state, tmp_path, "exit 3")
    slow = _submit(state, tmp_path, "sleep 30")
    assert _wait_status(state, ok, "success") == "success"
    assert (state / f"{ok}.log").read_text() == "hello\n"
    assert _wait_status(state, bad, "failed") == "failed"
    assert (state / f"{bad}.rc").read_text().strip() == "3"
    assert _status(state, slow) == "running"
    pid = int((state / f"{slow}.pid").read_text())
    assert os.getpgid(pid) == pid and os.getsid(pid) == pid  # its own session and group
    env = {**os.environ, "AGENTMEM_CLUSTER_STATE": str(state)}
    subprocess.run([str(CANCEL), slow], env=env, check=True)
    assert _wait_status(state, slow, "failed") == "failed"  # killed: no success recorded
    assert _status(state, "job-never-submitted") == "failed"


# ------------------------------------------------------------- the workflow, per job
def test_smoke_workflow_through_cluster_generic_executor(workdir: Path) -> None:
    proc = run_cluster(workdir, *TARGETS)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]

    # the outputs, from both arms and both crash families
    by_class = pl.read_csv(workdir / "results/tables/by_class.csv")
    assert set(by_class["arm"]) == set(ARMS)
    assert by_class.filter(pl.col("query_class") == "all")["ndcg_at_10"].min() > 0
    crash = pl.read_csv(workdir / "results/trials/crash.csv")
    assert set(crash["family"]) == set(CRASH_FAMILIES)
    assert pl.read_csv(workdir / "results/trials/lost_update.csv").height > 0
    assert set(pl.read_csv(workdir / "results/sweeps/budget.csv")["arm"]) == set(ARMS)
    assert "pg-hnsw" in set(pl.read_csv(workdir / "results/sweeps/postfilter.csv")["arm"])

    # every job went through submit.sh, each as its own process; none ran locally
    jobs = submitted_jobs(workdir / ".cluster-state")
    remote_rules = re.findall(r"^rule (\w+):", proc.stderr, flags=re.M)
    assert re.findall(r"^localrule (\w+):", proc.stderr, flags=re.M) == []
    assert sorted(j["rule"] for j in jobs) == sorted(remote_rules)
    assert len(re.findall(r"Submitted job \d+ with external jobid 'job-", proc.stderr)) == len(jobs)
    assert all(j["rc"] == "0" for j in jobs), [j for j in jobs if j["rc"] != "0"]
    pids = [j["pid"] for j in jobs]
    assert len(set(pids)) == len(pids) and os.getpid() not in pids
    assert {"generate_corpus", "embed_texts", "run_arm", "run_crash_trials"} <= set(remote_rules)

    # timing jobs (resource bench_slot) never overlapped, even as separate cluster jobs
    bench = sorted((j["start"], j["end"]) for j in jobs if j["resources"].get("bench_slot"))
    assert len(bench) >= len(ARMS) + 1  # every arm's query run and the encoder
    crash_jobs = [j for j in jobs if j["rule"] == "run_crash_trials"]
    assert len(crash_jobs) == len(CRASH_FAMILIES)  # mostly asleep: their own crash_slot
    assert all(not j["resources"].get("bench_slot") for j in crash_jobs)
    assert all(prev_end <= start for (_, prev_end), (start, _) in pairwise(bench))

    # the embedded PostgreSQL of the pg-hnsw store: jobs that used the store started the
    # server from the store directory and stopped it before they ended; jobs running at
    # the same time may share one server, so it started at least once per run of
    # overlapping jobs, at most once per job, and stopped as often as it started
    users = [j for j in jobs if PG_STORE in json.dumps([j["params"], j["files"]])]
    assert {j["rule"] for j in users} >= {"run_arm", "run_budget_sweep", "run_postfilter_sweep"}
    server_log = (workdir / PG_STORE / "pgdata" / "log").read_text()
    starts = server_log.count("database system is ready to accept connections")
    runs = overlapping_runs([(j["start"], j["end"]) for j in users])
    assert runs <= starts <= len(users), (runs, starts, len(users))
    assert server_log.count("database system is shut down") == starts
    handles = json.loads((workdir / PG_STORE / "pgdata" / ".handle_pids.json").read_text())
    assert handles == []
    assert servers_under(workdir) == []


def test_failed_job_is_reported_failed(workdir: Path) -> None:
    """A job that fails on its node fails the run, with the job's own error on screen."""
    (workdir / "config" / "missing.yaml").write_text(
        "external:\n  locomo:\n    path: data/external/no-such-locomo10.json\n"
    )
    proc = run_cluster(
        workdir,
        "results/external/locomo/source/turns/dataset.json",
        configs=("config/config.yaml", "config/missing.yaml"),
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Error in rule convert_locomo" in log
    assert "snap-research/LoCoMo" in log  # the job's log, shown by show-failed-logs
    jobs = submitted_jobs(workdir / ".cluster-state")
    assert [j["rule"] for j in jobs] == ["convert_locomo"]
    assert jobs[0]["rc"] not in (None, "0")


# ------------------------------------------------------------------- profiles/slurm
def test_slurm_profile_requests(workdir: Path) -> None:
    """profiles/slurm parses, and its expressions give the documented requests per job."""
    proc = subprocess.run(
        [
            SNAKEMAKE,
            "-s",
            str(REPO / "Snakefile"),
            "--directory",
            str(workdir),
            "--profile",
            str(REPO / "profiles" / "slurm"),
            "-n",
            "--cores",
            "64",  # a dry run caps threads at --cores
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    blocks = planned_jobs(proc.stdout)
    assert blocks, proc.stdout[-2000:]

    def one(rule: str, wildcards: str = "") -> dict[str, str]:
        return next(b for b in blocks if b["rule"] == rule and wildcards in b["wildcards"])

    embed = one("embed_texts")
    assert embed["threads"] == "8"
    assert {"runtime": "120", "mem_mb": "8000", "cpus_per_task": "8"}.items() <= embed[
        "resources"
    ].items()
    big, small = one("run_arm", "size=l,"), one("run_arm", "size=m,")
    want_l = {"runtime": "120", "mem_mb": "8000", "cpus_per_task": "4", "bench_slot": "1"}
    assert want_l.items() <= big["resources"].items()
    assert {"runtime": "30", "mem_mb": "4000", "cpus_per_task": "2"}.items() <= (
        small["resources"].items()
    )
    assert one("run_lost_update_trials")["threads"] == "8"
    crash = one("run_crash_trials")["resources"]
    assert crash["runtime"] == "60" and crash["cpus_per_task"] == "2"
    # a small job: the default resources, CPUs = threads
    plot = one("plot_crash")["resources"]
    assert plot["runtime"] == "30" and plot["cpus_per_task"] == "1"
    # no account or partition baked in
    assert "slurm_account" not in proc.stdout and "slurm_partition" not in proc.stdout
