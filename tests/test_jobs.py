"""agentmem.jobs: the start of every workflow script and the declared corpus directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from snakemake.iocontainers import Namedlist
from support.paths import REPO

from agentmem.jobs import corpus_dir
from agentmem.procs import JOB_CPU_LINE, job_cpu_in_log

_START = (
    "import json, os, sys\n"
    "from types import SimpleNamespace\n"
    "from agentmem.jobs import start_job\n"
    "before = os.nice(0)\n"
    "start_job(SimpleNamespace(log=[sys.argv[1]]), background=sys.argv[2] == 'yes')\n"
    "print('to the log', file=sys.stderr)\n"
    "print(json.dumps([before, os.nice(0), os.environ.get('AGENTMEM_LOG_SERVER_CPU'),\n"
    "                  os.environ.get('AGENTMEM_PG_TEMPLATE_DIR')]))\n"
)


@pytest.mark.parametrize(("background", "niced"), [("yes", True), ("no", False)])
def test_start_job_sends_stderr_to_the_log_and_nices_untimed_jobs(tmp_path, background, niced):
    log = tmp_path / "job.log"
    unset = ("AGENTMEM_LOG_SERVER_CPU", "AGENTMEM_PG_TEMPLATE_DIR")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    out = subprocess.run(
        [sys.executable, "-c", _START, str(log), background],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    first, cpu = log.read_text().splitlines()
    assert out.stderr == "" and first == "to the log"
    assert cpu.startswith(JOB_CPU_LINE) and job_cpu_in_log(cpu) > 0  # written at exit
    before, now, server_cpu_log, template = json.loads(out.stdout)
    assert now == (19 if niced else before)
    assert server_cpu_log == "1"  # every job logs the CPU of the servers it stops
    # new embedded stores are copied from the workflow's template cluster
    assert template == str(REPO / "results" / "cache" / "pg-template")


_BURN = (
    "import subprocess, sys, time\n"
    "from types import SimpleNamespace\n"
    "from agentmem.jobs import start_job\n"
    "start_job(SimpleNamespace(log=[sys.argv[1]]), background=False)\n"
    "burn = 'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.4: pass\\n"
    "print(time.process_time())'\n"
    "child = float(subprocess.run([sys.executable, '-c', burn], capture_output=True,\n"
    "                             text=True, check=True).stdout)\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < 0.4: pass\n"
    "print(time.process_time() + child)\n"
)


def test_a_job_logs_its_cpu_and_its_reaped_childrens_at_exit(tmp_path):
    log = tmp_path / "job.log"
    out = subprocess.run(
        [sys.executable, "-c", _BURN, str(log)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    measured = float(out.stdout)  # the job's and the child's own process_time at their ends
    logged = job_cpu_in_log(log.read_text())
    assert measured >= 0.8
    assert measured - 0.02 <= logged <= measured + 0.5  # + the exit path and the child's exit


_THREADS = (
    "import json, os, subprocess, sys\n"
    "from types import SimpleNamespace\n"
    "import numpy\n"
    "from threadpoolctl import threadpool_info\n"
    "from agentmem.jobs import start_job\n"
    "before = sorted({p['num_threads'] for p in threadpool_info()})\n"
    "start_job(SimpleNamespace(log=[sys.argv[1]]), background=sys.argv[2] == 'yes')\n"
    "after = sorted({p['num_threads'] for p in threadpool_info()})\n"
    "code = 'import os; print(os.environ[\"OMP_NUM_THREADS\"])'\n"
    "child = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)\n"
    "child = child.stdout.strip()\n"
    "print(json.dumps([before, after, child]))\n"
)


@pytest.mark.parametrize(("background", "pools", "child"), [("yes", [1], "1"), ("no", [2], "0")])
def test_a_background_job_runs_one_blas_and_openmp_thread(tmp_path, background, pools, child):
    # Snakemake exports a background job's threads: 0 as every thread variable; OpenBLAS
    # reads that as every core (two here, pinned by OPENBLAS_NUM_THREADS=2 for the test)
    env = {**os.environ, "OMP_NUM_THREADS": "0", "OPENBLAS_NUM_THREADS": "2"}
    out = subprocess.run(
        [sys.executable, "-c", _THREADS, str(tmp_path / "job.log"), background],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    before, after, seen_by_child = json.loads(out.stdout)
    assert before == [2]
    assert after == pools
    assert seen_by_child == child


_TIMER = (
    "import sys, threading\n"
    "from agentmem.jobs import cancel_pending_timers_at_exit\n"
    "cancel_pending_timers_at_exit()\n"
    "threading.Timer(600, lambda: print('fired')).start()\n"
    "if sys.argv[1] == 'raise':\n"
    "    raise RuntimeError('the scheduler failed')\n"
    "sys.exit(3)\n"
)


@pytest.mark.parametrize(("how", "code"), [("raise", 1), ("exit", 3)])
def test_a_pending_timer_does_not_keep_the_process_alive_however_it_ends(how, code):
    # without the watcher the interpreter waits the timer's 600 s: the run's timeout fails it
    out = subprocess.run(
        [sys.executable, "-c", _TIMER, how], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == code
    assert "fired" not in out.stdout


def test_corpus_dir_is_the_folder_of_the_declared_files():
    files = Namedlist(
        fromdict={"memories": "c/xs/memories.parquet", "queries": "c/xs/queries.parquet"}
    )
    assert str(corpus_dir(files, "memories", "queries")) == "c/xs"


@pytest.mark.parametrize(
    ("declared", "needle"),
    [
        ({"memories": "c/memories.parquet"}, "not declared by the rule: queries"),
        ({"memories": "c/memories.parquet", "queries": "c/q.parquet"}, "wrong name: queries="),
        ({"memories": "a/memories.parquet", "queries": "b/queries.parquet"}, "more than one"),
    ],
)
def test_corpus_dir_refuses_undeclared_or_scattered_files(declared, needle):
    with pytest.raises(ValueError, match=needle):
        corpus_dir(Namedlist(fromdict=declared), "memories", "queries")


def test_cancel_pending_timers_lets_the_process_exit_at_once() -> None:
    import threading

    from agentmem.jobs import cancel_pending_timers

    fired: list[int] = []
    timers = [threading.Timer(60.0, fired.append, (i,)) for i in range(2)]
    for t in timers:
        t.start()
    assert cancel_pending_timers() >= 2
    for t in timers:
        t.join(timeout=5.0)
        assert not t.is_alive()  # ended now, not in 60 s
    assert fired == []  # and its function never ran
    assert cancel_pending_timers() == 0


def test_benchmark_samples_follow_the_interval_the_snakefile_sets() -> None:
    """The patched interval is the one Snakemake's timer schedules its first samples with."""
    import time

    import snakemake.benchmark as bench

    from agentmem.jobs import BENCHMARK_SAMPLE_S, sparser_benchmark_samples

    before = bench.BENCHMARK_INTERVAL_SHORT
    try:
        assert sparser_benchmark_samples(0.2) == before
        assert bench.BENCHMARK_INTERVAL_SHORT == 0.2
        calls: list[float] = []

        class Counting(bench.ScheduledPeriodicTimer):
            def work(self) -> None:
                calls.append(time.monotonic())

        timer = Counting(interval=30)
        timer.start()  # samples at once, then every 0.2 s
        time.sleep(1.1)
        timer.cancel()
        gaps = [b - a for a, b in zip(calls, calls[1:], strict=False)]
        assert 4 <= len(calls) <= 7 and all(g > 0.15 for g in gaps), calls
    finally:
        bench.BENCHMARK_INTERVAL_SHORT = before
    # the Snakefile's value, and what it replaces (a Snakemake that renamed the constant
    # would make this None and leave its own interval)
    assert BENCHMARK_SAMPLE_S == 5.0 and before == 0.5
    assert "sparser_benchmark_samples()" in (REPO / "Snakefile").read_text()
