"""The smoke workflow with ``--profile profiles/slurm`` on a real single-node SLURM.

The module starts its own SLURM (``tests/support/slurm_cluster.py``: munged, slurmctld and slurmd
in a scratch directory, one node, one default partition, no accounting database) and
runs Snakemake as a cluster user does, ``snakemake --profile profiles/slurm``, through
the real ``snakemake-executor-plugin-slurm``: every job is a real ``sbatch`` job that
runs Snakemake again inside SLURM (``srun``). On top of the profile it passes only what
this test cluster needs (also listed in the profile's comments):

- ``--slurm-status-command squeue``: there is no accounting database, so ``sacct``
  fails (and the workflow would wait forever); ``MinJobAge`` keeps finished jobs in
  ``squeue`` for 10 minutes;
- ``--slurm-init-seconds-before-status-checks 1`` and ``--seconds-between-status-checks
  1``: poll a queue of seconds-long jobs every second, not every 40 s.

The node declares twice as many CPUs and as much memory as the profile's largest request,
so every job is submitted with the profile's own ``--cpus-per-task``, ``--mem`` and
``--time`` and the largest job leaves room beside it (nothing enforces the numbers
without cgroups).

Three runs go at once, to keep ``make test`` short (a cluster job pays ~10 s of
Snakemake start-up, twice, and the status polling):

- on SLURM, a subset of the smoke targets: the corpus with its queries and qrels, the
  rendered schema, and one arm's run (sqlite-fts), which also runs the embedding job
  with the profile's heavy requests and ``run_arm`` with its expression-valued ones.
  These outputs are deterministic; the rest of the smoke DAG adds jobs, not new ways
  of running one (tests/test_e2e.py runs all of it locally);
- locally, the same targets, starting with the session's encoder export (``make test``
  makes it once): the SLURM run's outputs must be the same bytes (corpus, schema) or the
  same values (vectors up to float rounding; the arm's rankings, less the latencies);
- on SLURM, a LoCoMo target with no LoCoMo file: its job fails on the node, twice (the
  profile's ``retries: 1``), and the workflow exits non-zero.

The cluster's processes (daemons, job steps, jobs) are checked gone at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from support.paths import REPO
from support.slurm_cluster import Node, SingleNodeSlurm, ensure_installed, slurm_version
from support.workflow import SNAKEMAKE, copy_workflow_config

PROFILE = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
#: the flags a single-node test cluster adds to the profile (see the module docstring)
TEST_CLUSTER_FLAGS = (
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--seconds-between-status-checks",
    "1",
)
RUN_TIMEOUT = 420  # seconds; `timeout -k` ends a hung Snakemake (SIGTERM waits for jobs)
ARM = "sqlite-fts"
TARGETS = (
    "results/corpus/xs/manifest.json",
    "results/schema/sqlite.sql",
    f"results/runs/xs/{ARM}.parquet",
)
#: the rules those targets run, one SLURM job each
RULES = ["embed_texts", "export_encoder", "generate_corpus", "render_schema", "run_arm"]
CORPUS_FILES = ("memories", "facts", "entities", "sessions", "agents", "queries", "qrels")
SCHEMA_FILES = ("sqlite.sql", "postgres.sql", "er.mmd", "er.dot")
#: a target whose job fails on the node: the configured LoCoMo file does not exist
FAILING_TARGET = "results/external/locomo/source/turns/dataset.json"
NO_LOCOMO = "external:\n  locomo:\n    path: data/external/no-such-locomo10.json\n"


def _node_for_profile() -> Node:
    """A node twice as large as the profile's largest integer request (or the machine).

    Twice, so that the failing run's job can start while the largest job runs. Requests
    given as expressions (run_arm's) are smaller at size xs.
    """
    cpus = [os.cpu_count() or 1, *PROFILE.get("set-threads", {}).values()]
    mems = [PROFILE["default-resources"]["mem_mb"]]
    for res in PROFILE.get("set-resources", {}).values():
        cpus += [v for k, v in res.items() if k == "cpus_per_task" and isinstance(v, int)]
        mems += [v for k, v in res.items() if k == "mem_mb" and isinstance(v, int)]
    return Node(cpus=2 * max(int(c) for c in cpus), memory_mb=2 * max(mems))


def _workdir(extra_config: str = "{}\n", encoder: bool = False) -> Path:
    """A working directory for one run; ``encoder``: it starts with the session's export.

    The SLURM runs do not (export_encoder is one of their SLURM jobs); the local run, the
    reference for their outputs, does.
    """
    wd = Path(tempfile.mkdtemp(prefix="agentmem-slurm-"))
    copy_workflow_config(wd, encoder=encoder)
    (wd / "config" / "test.yaml").write_text(extra_config)
    return wd


def _snakemake(wd: Path, *args: str, env: dict[str, str] | None = None):
    cmd = [
        "timeout",
        "-k",
        "15",
        str(RUN_TIMEOUT),
        SNAKEMAKE,
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(wd),
        "--configfile",
        "config/smoke.yaml",
        "config/test.yaml",
        *args,
    ]
    # embedded Postgres (no external DSN), the model from its package (offline)
    run_env = {k: v for k, v in (env or os.environ).items() if k != "AGENTMEM_PG_DSN"}
    run_env.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.monotonic()
    proc = subprocess.run(
        cmd, cwd=wd, env=run_env, capture_output=True, text=True, timeout=RUN_TIMEOUT + 60
    )
    return proc, time.monotonic() - t0


@dataclass
class Run:
    """One finished Snakemake run."""

    wd: Path
    proc: subprocess.CompletedProcess
    seconds: float
    #: the SLURM jobs of this run as ``squeue`` lists them at the end (empty if local)
    jobs: list[dict[str, str]]

    @property
    def log(self) -> str:
        return self.proc.stdout + self.proc.stderr


@dataclass
class Runs:
    ok: Run
    failing: Run
    local: Run
    #: every state ``squeue`` showed per SLURM job id, sampled twice a second
    seen: dict[str, list[str]]
    #: the job completion log: JobId -> JobState, ExitCode, Partition, ...
    completed: dict[str, dict[str, str]]


def run_id(log: str) -> str | None:
    """The plugin's run id: every SLURM job of one Snakemake run is named after it."""
    m = re.search(r"SLURM run ID: (\S+)", log)
    return m.group(1) if m else None


def _rule(job: dict[str, str]) -> str:
    """The rule of a SLURM job, from the comment the plugin sets (rule_<name>[_wildcards_..])."""
    return re.sub(r"_wildcards_.*$", "", job["comment"]).removeprefix("rule_")


@pytest.fixture(scope="module")
def cluster() -> Iterator[SingleNodeSlurm]:
    """The test cluster for this module; stopped (and checked gone) at the end."""
    reason = ensure_installed()
    if reason:
        pytest.skip(reason)
    with SingleNodeSlurm(_node_for_profile()) as c:
        print(f"\n{slurm_version()}: node {c.nodename} {c.node}, partition {c.partition}")
        yield c
    # __exit__ raised if any daemon, job step or job of the cluster outlived stop()


@pytest.fixture(scope="module")
def runs(cluster: SingleNodeSlurm) -> Iterator[Runs]:
    """The three runs (see the module docstring), side by side."""
    wds = {"ok": _workdir(), "failing": _workdir(NO_LOCOMO), "local": _workdir(encoder=True)}
    seen: dict[str, list[str]] = {}
    done = threading.Event()

    def sample() -> None:
        while True:
            for job in cluster.queue():
                states = seen.setdefault(job["id"], [])
                if not states or states[-1] != job["state"]:
                    states.append(job["state"])
            if done.is_set():
                return
            done.wait(0.5)

    def on_slurm(wd: Path, *targets: str):
        return _snakemake(
            wd, "--profile", "profiles/slurm", *TEST_CLUSTER_FLAGS, "--", *targets, env=cluster.env
        )

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        with ThreadPoolExecutor(3) as pool:
            ok = pool.submit(on_slurm, wds["ok"], *TARGETS)
            failing = pool.submit(on_slurm, wds["failing"], FAILING_TARGET)
            local = pool.submit(_snakemake, wds["local"], "--cores", "2", "--", *TARGETS)
            results = {"ok": ok.result(), "failing": failing.result(), "local": local.result()}
    finally:
        done.set()
        sampler.join()
    queue = cluster.queue()
    out = {}
    for name, (proc, seconds) in results.items():
        rid = run_id(proc.stdout + proc.stderr)
        jobs = [j for j in queue if rid and j["name"] == rid]
        out[name] = Run(wds[name], proc, seconds, sorted(jobs, key=lambda j: int(j["id"])))
    r = Runs(**out, seen=seen, completed={c["JobId"]: c for c in cluster.completed_jobs()})
    for name in ("ok", "failing"):
        run = out[name]
        print(f"\n{name} run on SLURM, {run.seconds:.0f} s; states squeue showed per job:")
        for j in run.jobs:
            end = r.completed.get(j["id"], {})
            print(
                f"  {j['id']:>3} {_rule(j):<16} {' -> '.join(seen.get(j['id'], []))}"
                f"  (exit {end.get('ExitCode')}, {j['cpus']} CPUs, {j['min_memory']},"
                f" {j['time_limit']})"
            )
    print(f"local run, {out['local'].seconds:.0f} s")
    try:
        yield r
    finally:
        for wd in wds.values():
            shutil.rmtree(wd, ignore_errors=True)


# ------------------------------------------------------------------------- the tests
def test_every_job_is_a_slurm_job_that_completed(runs: Runs, cluster: SingleNodeSlurm) -> None:
    ok = runs.ok
    assert ok.proc.returncode == 0, ok.log[-6000:] + "\n" + cluster.logs()
    # one sbatch job per rule, none run inside the Snakemake process
    assert re.findall(r"^localrule (\w+):", ok.proc.stderr, flags=re.M) == []
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", ok.log)
    assert sorted(submitted) == sorted(j["id"] for j in ok.jobs)
    assert sorted(_rule(j) for j in ok.jobs) == RULES
    for j in ok.jobs:
        states = runs.seen[j["id"]]
        assert states[-1] == "COMPLETED", (j, states)
        assert {"RUNNING", "COMPLETING"} & set(states), states  # seen while it ran
        assert runs.completed[j["id"]]["JobState"] == "COMPLETED"
        assert runs.completed[j["id"]]["ExitCode"] == "0:0"
        # no partition given: the plugin found the cluster's default one
        assert j["partition"] == cluster.partition
        assert Path(j["work_dir"]) == ok.wd
    assert cluster.node_state() == "idle"


def test_jobs_request_what_the_profile_sets(runs: Runs) -> None:
    """--cpus-per-task, --mem and --time as SLURM recorded them, per rule.

    embed_texts: set-threads 8 and set-resources runtime/mem_mb; run_arm: the
    set-resources expressions at size xs; the others: their rule's mem_mb, the
    default runtime and cpus_per_task = threads.
    """
    by_rule = {_rule(j): j for j in runs.ok.jobs}
    want = {
        "embed_texts": ("8", "8000M", "2:00:00"),
        "export_encoder": ("1", "3000M", "30:00"),
        "run_arm": ("2", "4000M", "30:00"),
        "generate_corpus": ("1", "2000M", "30:00"),
        "render_schema": ("1", "500M", "30:00"),
    }
    got = {r: (j["cpus"], j["min_memory"], j["time_limit"]) for r, j in by_rule.items()}
    assert got == want


def test_outputs_equal_a_local_run(runs: Runs) -> None:
    assert runs.ok.proc.returncode == 0, runs.ok.log[-3000:]
    assert runs.local.proc.returncode == 0, runs.local.log[-6000:]
    a, b = runs.ok.wd, runs.local.wd
    for name in CORPUS_FILES:
        f = f"results/corpus/xs/{name}.parquet"
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    manifest = "results/corpus/xs/manifest.json"
    assert (a / manifest).read_text() == (b / manifest).read_text()
    assert pl.read_parquet(a / "results/corpus/xs/qrels.parquet").height > 0
    for f in SCHEMA_FILES:
        assert (a / "results/schema" / f).read_text() == (b / "results/schema" / f).read_text()

    # embeddings: the same ids and text hashes; vectors equal up to float rounding
    ea, eb = (pl.read_parquet(d / "results/embeddings/xs.parquet") for d in (a, b))
    assert ea.drop("vector").equals(eb.drop("vector"))
    va, vb = (np.array(e["vector"].to_list(), dtype=np.float32) for e in (ea, eb))
    assert va.shape == vb.shape and va.shape[1] == 384
    np.testing.assert_allclose(va, vb, rtol=0, atol=1e-5)

    # the arm's rankings (and counts); latencies are measurements, not results
    ra, rb = (pl.read_parquet(d / f"results/runs/xs/{ARM}.parquet") for d in (a, b))
    assert ra.height > 0 and "latency_ms" in ra.columns
    assert ra.drop("latency_ms").equals(rb.drop("latency_ms"))


def test_failing_job_is_reported_failed(runs: Runs, cluster: SingleNodeSlurm) -> None:
    """A job that fails on its node fails the run, after the profile's one retry."""
    failing = runs.failing
    log = failing.log
    assert failing.proc.returncode not in (0, 124, 137), log[-6000:]  # failed, not timed out
    assert "Error in rule convert_locomo" in log
    assert "snap-research/LoCoMo" in log  # the job's own log, shown by show-failed-logs
    # the profile's `retries: 1`: submitted twice, failed twice
    assert [_rule(j) for j in failing.jobs] == ["convert_locomo", "convert_locomo"]
    for j in failing.jobs:
        assert runs.seen[j["id"]][-1] == "FAILED", runs.seen[j["id"]]
        assert runs.completed[j["id"]]["ExitCode"] == "1:0"
        assert f"SLURM-job '{j['id']}' failed, SLURM status is: 'FAILED'" in log
