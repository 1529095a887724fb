"""The embedded server under many processes opening and closing one store at once.

The stress test: holders keep a connection open and query in a loop, closing and
reopening now and then; churners open the store, run one query, close it and pause a
moment. Holders stop half way, so that afterwards nobody holds the server now and then:
it stops and the next churner starts it again. Every open and every query must succeed:
the server may stop only when no process holds it, and the last process to let go leaves
no server running. Smaller tests check the data directory's lock, a process that
exits without closing, and the server CPU the last holder reports when it stops the server.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from support.paths import REPO
from support.postgres import poll, servers_left, servers_under

from agentmem import pg
from agentmem.pg.postmaster import (
    SERVER_CPU_LINE,
    data_dir_lock,
    handle_pids,
    lock_path,
    server_cpu_in_log,
)
from agentmem.procs import SERVER_CPU_LOG_ENV

#: seconds the churners open, query and close (the holders stop half way)
RUN_S = 10.0
HOLDERS = 4
CHURNERS = 8

# One worker process. argv: store dir, role ("hold" or "churn"), go-file, seconds, seed.
# Prints one JSON object: role, opens, queries, postmaster pids seen, errors.
WORKER = r"""
import json, random, sys, time
from pathlib import Path
from agentmem import pg

store, role, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
seconds, seed = float(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
out = {"role": role, "opens": 0, "queries": 0, "pids": [], "errors": []}
go.with_name(f"ready-{seed}").touch()
while not go.exists():
    time.sleep(0.01)
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        h = pg.connect_store(store, "stress", create=False)
    except Exception as exc:
        out["errors"].append(f"open: {type(exc).__name__}: {exc}")
        time.sleep(0.1)
        continue
    out["opens"] += 1
    if h.postmaster_pid not in out["pids"]:
        out["pids"].append(h.postmaster_pid)
    hold_until = time.monotonic() + (rng.uniform(0.3, 2.0) if role == "hold" else 0.0)
    pause = 0.0 if role == "hold" else rng.uniform(0.0, 0.2)
    try:
        while True:
            h.conn.execute("SELECT count(*) FROM t").fetchone()
            out["queries"] += 1
            if time.monotonic() >= min(hold_until, end):
                break
            time.sleep(0.002)
    except Exception as exc:
        out["errors"].append(f"query: {type(exc).__name__}: {str(exc).strip()}")
    finally:
        h.close()
    time.sleep(pause)
print(json.dumps(out))
"""


def _kind(error: str) -> str:
    """An error's kind: where it happened (open/query), its type and its last reason."""
    first = error.splitlines()[0]
    where, kind = first.split(": ")[:2]
    return f"{where}: {kind}: {first.rsplit(': ', 1)[-1]}"


def reap(procs, tmp_path: Path) -> None:
    """Kill the child processes still running and every server left under ``tmp_path``."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    for pid in servers_under(tmp_path):
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass


def test_processes_opening_and_closing_at_once_never_stop_a_held_server(tmp_path: Path) -> None:
    """No query of a process holding the store fails while others open and close it."""
    store = tmp_path / "store"
    with pg.connect_store(store, "stress", create=True) as h:
        h.conn.execute("CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 100) g")
    assert servers_left(tmp_path) == []
    env = {k: v for k, v in os.environ.items() if k != pg.ENV_DSN}
    go = tmp_path / "go"
    roles = ["hold"] * HOLDERS + ["churn"] * CHURNERS
    seconds = {"hold": RUN_S / 2, "churn": RUN_S}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, store, role, go, str(seconds[role]), str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )
        for seed, role in enumerate(roles)
    ]
    try:
        ready = poll(
            lambda: (
                all((tmp_path / f"ready-{i}").exists() for i in range(len(roles)))
                or any(p.poll() is not None for p in procs)
            ),
            120.0,
        )
        assert ready, "the workers did not start"
        go.touch()
        results, failed = [], []
        for p in procs:
            out, err = p.communicate(timeout=RUN_S + 120)
            if p.returncode != 0:
                failed.append(err[-2000:])
            else:
                results.append(json.loads(out.strip().splitlines()[-1]))
        assert not failed, "\n".join(failed)
        errors = [e for r in results for e in r["errors"]]
        queries = sum(r["queries"] for r in results)
        opens = sum(r["opens"] for r in results)
        pids = {p for r in results for p in r["pids"]}
        summary = f"{len(errors)} errors in {opens} opens and {queries} queries"
        summary += f" ({len(pids)} postmasters)"
        print(summary)
        kinds = collections.Counter(_kind(e) for e in errors)
        assert not errors, summary + ":\n" + "\n".join(f"{n:4} x {k}" for k, n in kinds.items())
        assert all(r["queries"] > 0 for r in results), summary
        assert servers_left(tmp_path) == [], "the last process to close left its server running"
        assert handle_pids(store / pg.PGDATA_DIRNAME) == [], "a process is still listed as holder"
    finally:
        reap(procs, tmp_path)


def test_process_exiting_without_close_lets_go_at_exit(tmp_path: Path) -> None:
    """A process that exits holding the store leaves the list; the last one stops the server."""
    store = tmp_path / "store"
    with pg.connect_store(store, "exit", create=True):
        pass
    code = (
        "import sys\n"
        "from agentmem import pg\n"
        "h = pg.connect_store(sys.argv[1], 'exit', create=False)\n"
        "print(h.postmaster_pid, flush=True)\n"
        "sys.stdin.readline()\n"  # exits without closing the store
    )
    env = {k: v for k, v in os.environ.items() if k != pg.ENV_DSN}

    def spawn() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", code, str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )

    a, b = spawn(), spawn()
    try:
        assert a.stdout is not None and b.stdout is not None
        pid = int(a.stdout.readline())
        assert int(b.stdout.readline()) == pid
        a.communicate("\n", timeout=60)
        assert pg.process_alive(pid), "a process exiting stopped a server another one holds"
        assert handle_pids(store / pg.PGDATA_DIRNAME) == [b.pid]
        b.communicate("\n", timeout=60)
        assert (a.returncode, b.returncode) == (0, 0)
        assert servers_left(tmp_path) == [], "the last process to exit left its server running"
        assert handle_pids(store / pg.PGDATA_DIRNAME) == []
    finally:
        reap((a, b), tmp_path)


def test_the_process_stopping_a_server_reports_its_cpu(tmp_path: Path, capsys, monkeypatch) -> None:
    """In a workflow job only the stop writes the server-CPU line: a positive figure, with
    the data directory; outside one (the CLI, the library) nothing is written.

    The server does work a client's own CPU time never shows (here: a generate_series sum in
    the backend), so the reported figure is at least that query's share of it.
    """
    monkeypatch.delenv(SERVER_CPU_LOG_ENV, raising=False)
    with pg.connect_store(tmp_path / "quiet", "cpu", create=True):
        pass
    assert SERVER_CPU_LINE not in capsys.readouterr().err
    monkeypatch.setenv(SERVER_CPU_LOG_ENV, "1")
    store = tmp_path / "store"
    with pg.connect_store(store, "cpu", create=True) as h, h.conn.cursor() as cur:
        capsys.readouterr()
        cur.execute("SELECT sum(i) FROM generate_series(1, 3000000) AS i")
        assert cur.fetchone()[0] == 3000000 * 3000001 // 2
        assert SERVER_CPU_LINE not in capsys.readouterr().err  # still held: no report
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith(SERVER_CPU_LINE)]
    assert len(lines) == 1 and lines[0].endswith(f"({store / pg.PGDATA_DIRNAME})")
    cpu = server_cpu_in_log(err)
    assert cpu is not None and 0.05 < cpu < 600


def test_data_dir_lock_excludes_threads_of_one_process(tmp_path: Path) -> None:
    """Two threads never hold the lock of one data directory at once."""
    pgdata = tmp_path / "pgdata"
    inside, overlaps = [], []

    def hold() -> None:
        for _ in range(20):
            with data_dir_lock(pgdata):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(len(inside))
                time.sleep(0.002)
                inside.pop()

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    assert lock_path(pgdata) == tmp_path / "pgdata.lock"
    assert not pgdata.exists()  # the lock lives beside the data directory


def test_data_dir_lock_waits_for_its_holder_and_dies_with_it(tmp_path: Path) -> None:
    """Others wait for a held lock (then PgError naming it); SIGKILL of its holder frees it."""
    pgdata = tmp_path / "pgdata"
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from agentmem.pg.postmaster import data_dir_lock\n"
        "with data_dir_lock(Path(sys.argv[1])):\n"
        "    print('locked', flush=True)\n"
        "    time.sleep(600)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(pgdata)], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(pg.PgError, match=re.escape(str(lock_path(pgdata)))):
            with data_dir_lock(pgdata, timeout=0.3):
                pass
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
        with data_dir_lock(pgdata, timeout=10):
            pass
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


@pytest.mark.parametrize(
    ("content", "expected"),
    [("4242\n/data\n", 4242), ("-4242\n/data\n", None), ("0\n", None), ("", None)],
)
def test_postmaster_pid_of_a_standalone_backend_is_none(
    tmp_path: Path, content: str, expected: int | None
) -> None:
    """initdb's bootstrap backend writes its pid negated into postmaster.pid: no postmaster."""
    (tmp_path / "postmaster.pid").write_text(content)
    assert pg.postmaster_pid(tmp_path) == expected
