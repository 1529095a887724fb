"""agentmem.jobs: the start of every workflow script and the declared corpus directory."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from snakemake.iocontainers import Namedlist
from support.paths import REPO

from agentmem.jobs import corpus_dir

_START = (
    "import json, os, sys\n"
    "from types import SimpleNamespace\n"
    "from agentmem.jobs import start_job\n"
    "before = os.nice(0)\n"
    "start_job(SimpleNamespace(log=[sys.argv[1]]), background=sys.argv[2] == 'yes')\n"
    "print('to the log', file=sys.stderr)\n"
    "print(json.dumps([before, os.nice(0)]))\n"
)


@pytest.mark.parametrize(("background", "niced"), [("yes", True), ("no", False)])
def test_start_job_sends_stderr_to_the_log_and_nices_untimed_jobs(tmp_path, background, niced):
    log = tmp_path / "job.log"
    out = subprocess.run(
        [sys.executable, "-c", _START, str(log), background],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == "" and log.read_text() == "to the log\n"
    before, now = json.loads(out.stdout)
    assert now == (19 if niced else before)


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
