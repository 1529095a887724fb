"""Integrity trials: real child processes, real SIGKILL, real SQLite and PostgreSQL.

Crash trials run 2-3 trials per family with a short kill window; lost-update trials run
the full 8 x 25 matrix. A process watcher samples ``/proc`` while each trial runs and
asserts afterwards that every child process and every postgres process it saw is gone.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from support.paths import REPO

from agentmem.config import CRASH_FAMILIES, LostUpdateConfig, TrialsConfig
from agentmem.pg import EmbeddedServer
from agentmem.trials import TrialError, require_dir
from agentmem.trials.crash import (
    FAMILIES,
    FIELDS,
    STORE_FILES,
    read_store,
    recall_through_arm,
    record_body,
    run_crash_trials,
)
from agentmem.trials.crash.records import memory_record
from agentmem.trials.lost_update import (
    FIELDS as LU_FIELDS,
    MODES,
    STORES,
    run_lost_update,
    run_lost_update_matrix,
)

SEED = 7


@pytest.fixture
def work():
    """A fresh work directory directly under the system temp dir.

    Not pytest's ``tmp_path``: as root the embedded server runs as OS user ``pgserver``,
    which must traverse the path, and every new pytest session resets
    ``/tmp/pytest-of-<user>`` to mode 0700, so a concurrent session would lock the
    server out of a ``tmp_path`` mid-test.
    """
    d = Path(tempfile.mkdtemp(prefix="agentmem-trials-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# Process watcher
# ---------------------------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, str, str, bytes, str]]:
    """pid -> (ppid, state, starttime, cmdline, comm) for every process in /proc."""
    table = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            st = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        close = st.rindex(")")
        comm = st[st.index("(") + 1 : close]
        rest = st[close + 2 :].split()
        table[int(d.name)] = (int(rest[1]), rest[0], rest[19], cmd, comm)
    return table


class ProcessWatch:
    """Samples the processes a trial starts: descendants of this process, plus any
    process whose command line mentions ``marker`` (the work directory), plus their
    descendants. ``strays()`` lists the sampled ones still alive (not zombie) now."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker).encode()
        self.seen: dict[tuple[int, str], bytes | str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ProcessWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            self.sample(me)
            self._stop.wait(0.02)

    def sample(self, me: int) -> None:
        table = _proc_table()
        roots = {me} | {pid for pid, row in table.items() if self.marker in row[3]}
        kids: dict[int, list[int]] = {}
        for pid, row in table.items():
            kids.setdefault(row[0], []).append(pid)
        frontier = list(roots)
        found = set()
        while frontier:
            pid = frontier.pop()
            for c in kids.get(pid, []):
                if c not in found:
                    found.add(c)
                    frontier.append(c)
        found |= roots - {me}
        for pid in found:
            row = table.get(pid)
            if row is not None and row[1] not in "ZX":
                # an exiting process reads an empty command line before it is a zombie:
                # keep the one seen before (the postmaster's path) rather than its name
                key = (pid, row[2])
                if row[3] or key not in self.seen:
                    self.seen[key] = row[3] or row[4]

    def saw(self, needle: bytes) -> bool:
        values = self.seen.values()
        return any(needle in (v if isinstance(v, bytes) else v.encode()) for v in values)

    def strays(self) -> list[tuple[int, bytes | str]]:
        table = _proc_table()
        out = []
        for (pid, start), cmd in self.seen.items():
            row = table.get(pid)
            if row is not None and row[2] == start and row[1] not in "ZX":
                out.append((pid, cmd))
        return out


def test_process_watch_detects_a_leak(work):
    leak = subprocess.Popen(["sleep", "30"])
    try:
        with ProcessWatch(work) as watch:
            deadline = time.monotonic() + 5
            while not watch.seen and time.monotonic() < deadline:
                time.sleep(0.02)
        assert [pid for pid, _ in watch.strays()] == [leak.pid]
    finally:
        leak.kill()
        leak.wait()
    assert watch.strays() == []


def _subreaper() -> int:
    """This process's PR_GET_CHILD_SUBREAPER flag (trials must restore it to 0)."""
    import ctypes

    value = ctypes.c_int(-1)
    assert ctypes.CDLL(None).prctl(37, ctypes.byref(value), 0, 0, 0) == 0
    return value.value


# ---------------------------------------------------------------------------------------
# Contract with the config
# ---------------------------------------------------------------------------------------


def test_families_match_config_and_settings_come_from_the_config_model():
    """The trials take their config section (or a mapping validated by it): no second set
    of defaults or bounds in the library."""
    import inspect

    from agentmem.trials.lost_update.runner import lost_update_settings

    assert FAMILIES == CRASH_FAMILIES
    own = {"trials", "record_chars", "batch_size", "max_kill_after_ms", "writers", "increments"}
    for fn in (run_crash_trials, run_lost_update, run_lost_update_matrix):
        params = inspect.signature(fn).parameters
        assert "settings" in params and not own & set(params), fn.__name__
    assert lost_update_settings({}) == LostUpdateConfig()
    assert lost_update_settings({"writers": 3}).increments == LostUpdateConfig().increments == 25
    with pytest.raises(ValueError, match="writers"):
        lost_update_settings({"writers": 1})  # the model's bound: writers >= 2
    assert set(LostUpdateConfig().modes) == set(MODES)
    assert TrialsConfig().seed == SEED


def test_record_body_is_deterministic_and_sized():
    assert record_body(42, 14) == "r000000042|the"
    assert len(record_body(123456, 298)) == 298
    assert record_body(5, 0) == "r"
    # the JSON line the file families write is exactly record_chars long
    from agentmem.trials.crash.records import memory_record, plain_record

    for rid in (1, 99, 123456):
        assert len(json.dumps(plain_record(rid, 330))) == 330
        assert len(json.dumps(memory_record(rid, 330))) == 330


# ---------------------------------------------------------------------------------------
# Crash trials
# ---------------------------------------------------------------------------------------


def _check_rows(rows, family, trials, max_ms, baseline):
    assert [r["trial"] for r in rows] == list(range(trials))
    for r in rows:
        assert tuple(r) == FIELDS
        assert r["family"] == family
        expect = round(random.Random(SEED + r["trial"]).random() * max_ms, 3)
        assert r["kill_after_ms"] == expect
        assert 0 <= r["kill_after_ms"] < max_ms
        assert r["committed"] >= baseline


@pytest.mark.parametrize(
    ("family", "trials"), [("sqlite", 3), ("postgres-writer", 3), ("postgres-server", 3)]
)
def test_durable_families_lose_nothing_committed(work, family, trials):
    with ProcessWatch(work) as watch:
        rows = run_crash_trials(
            family, {"trials": trials, "max_kill_after_ms": 400}, SEED, work, progress=False
        )
    _check_rows(rows, family, trials, 400, 200)
    for r in rows:
        assert r["readable"] is True, r
        assert r["integrity_ok"] is True, r
        assert r["missing_committed"] == 0, r
        # a batch can be committed and not yet reported when the kill lands
        assert r["committed"] <= r["present"] <= r["committed"] + 50, r
        assert r["committed"] % 50 == 0
    assert watch.saw(b"--child"), "the writer child was never observed"
    if family.startswith("postgres"):
        assert watch.saw(b"pginstall/bin/postgres"), "no postmaster observed"
    if family == "postgres-server":
        assert all("WAL replayed" in r["detail"] for r in rows), rows
    # stores are scratch unless keep_stores: nothing is left behind
    assert not any((work / family).iterdir())
    assert _subreaper() == 0
    assert watch.strays() == []


def test_file_families(work):
    with ProcessWatch(work) as watch:
        append = run_crash_trials(
            "file-append", {"trials": 2, "max_kill_after_ms": 300}, SEED, work, progress=False
        )
        rewrite = run_crash_trials(
            "file-rewrite", {"trials": 3, "max_kill_after_ms": 300}, SEED, work, progress=False
        )
    _check_rows(append, "file-append", 2, 300, 200)
    _check_rows(rewrite, "file-rewrite", 3, 300, 200)
    # write + flush reaches the page cache, which a process kill does not lose
    for r in append:
        assert r["readable"] and r["integrity_ok"] and r["missing_committed"] == 0, r
        assert r["present"] >= r["committed"]
        assert r["recall_ok"] is True, r  # the file-jsonl arm itself answers after the kill
    assert all(r["recall_ok"] is None for r in rewrite)
    for r in rewrite:
        if r["readable"]:
            assert r["missing_committed"] == 0 and r["present"] >= r["committed"], r
        else:  # a truncated/empty file loses everything, committed or not
            assert r["present"] == 0 and r["missing_committed"] == r["committed"], r
            assert "records.json" in r["detail"], r
            assert ("empty" in r["detail"]) or ("corrupt" in r["detail"]), r
    # trial stores are deleted after the check unless keep_stores
    assert not any((work / "file-append").glob("trial-*"))
    assert watch.saw(b"--child")
    assert watch.strays() == []


def test_crash_work_dir_errors(work):
    missing = work / "nope"
    with pytest.raises(TrialError, match=str(missing)):
        run_crash_trials("sqlite", {"trials": 1}, SEED, missing, progress=False)
    ro = work / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(TrialError, match=rf"{ro}.*read-only"):
            run_crash_trials("file-append", {"trials": 1}, SEED, ro, progress=False)
    finally:
        ro.chmod(0o755)
    afile = work / "afile"
    afile.write_text("x")
    with pytest.raises(TrialError, match="not a directory"):
        run_crash_trials("sqlite", {"trials": 1}, SEED, afile, progress=False)
    with pytest.raises(ValueError, match="unknown crash family"):
        run_crash_trials("mongo", {"trials": 1}, SEED, work, progress=False)
    with pytest.raises(ValueError, match="trials"):  # the config model's bound, trials >= 1
        run_crash_trials("sqlite", {"trials": 0}, SEED, work, progress=False)


def test_read_store_reports_corrupt_files_by_path(work):
    with pytest.raises(TrialError, match=str(work / "gone")):
        read_store("sqlite", work / "gone")
    with pytest.raises(TrialError, match="does not exist"):
        read_store("file-append", work)  # directory without the store file

    d = work / "rw"
    d.mkdir()
    (d / STORE_FILES["file-rewrite"]).write_text("")
    with pytest.raises(TrialError, match=rf"{d / 'records.json'} is empty"):
        read_store("file-rewrite", d)
    (d / STORE_FILES["file-rewrite"]).write_text('[{"id": 1, "body": "1|the')
    with pytest.raises(TrialError, match=rf"{d / 'records.json'} is corrupt"):
        read_store("file-rewrite", d)

    a = work / "ap"
    a.mkdir()
    jsonl = a / STORE_FILES["file-append"]
    good = [json.dumps(memory_record(i, 120)) for i in (1, 2, 3)]
    jsonl.write_text(good[0] + "\nnot json\n" + good[2] + "\n")
    with pytest.raises(TrialError, match=rf"{jsonl} is corrupt: line 2"):
        read_store("file-append", a)
    assert recall_through_arm(a, 3, 2)  # the arm skips the bad line and answers
    assert not recall_through_arm(a, 2, 2)  # record 2 was on the line that is lost
    assert not recall_through_arm(a, 3, 3)  # the arm holds 2 memories, not 3
    # a torn final line is discarded (the writer had not reported it)
    jsonl.write_text("\n".join(good) + "\n" + good[0][:17])
    out = read_store("file-append", a)
    assert out.ids == {1, 2, 3} and out.integrity_ok
    assert "torn final line discarded (17 bytes)" in out.detail
    assert recall_through_arm(a, 3, 3) and recall_through_arm(a, 1, 3)  # torn tail skipped
    # a damaged body is an integrity failure, not a read failure
    bad = json.dumps({"id": 4, "body": record_body(5, 40)})
    jsonl.write_text("\n".join([*good, bad]) + "\n")
    out = read_store("file-append", a)
    assert out.ids == {1, 2, 3, 4} and not out.integrity_ok
    assert "1 record(s) with a damaged body" in out.detail

    s = work / "sq"
    s.mkdir()
    (s / "records.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(TrialError, match=rf"{s / 'records.sqlite'} is not a readable SQLite"):
        read_store("sqlite", s)

    p = work / "pg"
    p.mkdir()
    with pytest.raises(TrialError, match=rf"{p} is not a PostgreSQL data directory"):
        read_store("postgres-server", p)


def test_corrupt_postgres_data_dir_fails_cleanly(work):
    pgdata = work / "pgdata"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("18\n")  # looks like a data dir, is not one
    with ProcessWatch(work) as watch:
        with pytest.raises(TrialError, match=rf"PostgreSQL on {pgdata} failed to start"):
            read_store("postgres-writer", pgdata)
    assert watch.strays() == []
    assert _subreaper() == 0


def test_reopen_postgres_store_from_fresh_process(work):
    """A crashed data dir left behind is reopened by read_store alone (restart + replay)."""
    with ProcessWatch(work) as watch:
        rows = run_crash_trials(
            "postgres-server",
            {"trials": 1, "max_kill_after_ms": 50},
            SEED + 1,
            work,
            progress=False,
            keep_stores=True,
        )
        pgdata = work / "postgres-server" / "pgdata"
        out = read_store("postgres-server", pgdata)
    assert out.integrity_ok and len(out.ids) == rows[0]["present"]
    assert watch.strays() == []


def test_embedded_postgres_kill_and_restart(work):
    import psycopg

    with ProcessWatch(work) as watch:
        with EmbeddedServer(work / "pgdata") as pg:
            with psycopg.connect(pg.uri(), autocommit=True) as conn:
                conn.execute("CREATE TABLE t (id int PRIMARY KEY)")
                conn.execute("INSERT INTO t SELECT generate_series(1, 500)")
            pids = pg.kill()
            assert pg.pid is None and len(pids) >= 3
            assert all(not Path(f"/proc/{p}").exists() for p in pids)  # killed and reaped
            pg.start()
            with psycopg.connect(pg.uri()) as conn:
                assert conn.execute("SELECT count(*) FROM t").fetchone() == (500,)
        pg.stop()  # idempotent
    assert watch.strays() == []


def test_require_dir(work):
    assert require_dir(work) == work
    ro = work / "ro"
    ro.mkdir(mode=0o500)
    assert stat.S_IMODE(ro.stat().st_mode) == 0o500
    assert require_dir(ro, writable=False) == ro
    with pytest.raises(TrialError, match="read-only"):
        require_dir(ro)
    ro.chmod(0o700)


# ---------------------------------------------------------------------------------------
# Lost updates
# ---------------------------------------------------------------------------------------


def test_lost_update_matrix(work):
    with ProcessWatch(work) as watch:
        rows = run_lost_update_matrix(
            {"writers": 8, "increments": 25, "modes": list(MODES)}, work, progress=False
        )
    assert [(r["store"], r["mode"]) for r in rows] == [(s, m) for s in STORES for m in MODES]
    by = {(r["store"], r["mode"]): r for r in rows}
    for r in rows:
        assert tuple(r) == LU_FIELDS
        assert r["expected"] == 200 and r["writers"] == 8 and r["increments"] == 25
        assert r["lost"] == r["expected"] - r["observed"]
    for mode in MODES:
        # read-modify-write of a file: most increments overwritten, silently
        assert by["json-file", mode]["lost"] > 0 and by["json-file", mode]["errors"] == 0
        # the engines serialise single-statement increments
        for store in ("sqlite-update", "postgres-update"):
            assert by[store, mode]["lost"] == 0 and by[store, mode]["observed"] == 200
        # READ COMMITTED read-then-write: lost silently
        assert by["postgres-naive", mode]["lost"] > 0
        assert by["postgres-naive", mode]["errors"] == 0
        # SQLite refuses the stale write (SQLITE_BUSY_SNAPSHOT) instead: nothing silent
        naive = by["sqlite-naive", mode]
        assert naive["lost"] == naive["errors"] > 0
    assert not (work / "lost-update" / "pgdata").exists()
    assert watch.saw(b"--writer"), "no writer process observed"
    assert watch.saw(b"pginstall/bin/postgres"), "no postmaster observed"
    assert watch.strays() == []


def test_lost_update_standalone_postgres_and_errors(work):
    with ProcessWatch(work) as watch:
        row = run_lost_update(
            "postgres-update", "threads", {"writers": 3, "increments": 5}, work_dir=work
        )
    assert row["observed"] == 15 and row["lost"] == 0
    assert watch.strays() == []

    missing = work / "missing"
    with pytest.raises(TrialError, match=str(missing)):
        run_lost_update("json-file", "threads", {}, work_dir=missing)
    ro = work / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(TrialError, match=rf"{ro}.*read-only"):
            run_lost_update_matrix({"writers": 2, "increments": 1, "modes": ["threads"]}, ro)
    finally:
        ro.chmod(0o755)
    with pytest.raises(ValueError, match="unknown lost-update store"):
        run_lost_update("redis", "threads", {}, work_dir=work)
    with pytest.raises(ValueError, match="unknown mode"):
        run_lost_update("json-file", "fibers", {}, work_dir=work)


# ---------------------------------------------------------------------------------------
# Snakemake scripts (run with a real snakemake.io Namedlist, in a subprocess)
# ---------------------------------------------------------------------------------------

_SCRIPT_DRIVER = textwrap.dedent(
    """
    import runpy, sys
    from types import SimpleNamespace
    from snakemake.iocontainers import Namedlist
    script, out, log, params = sys.argv[1], sys.argv[2], sys.argv[3], eval(sys.argv[4])
    snakemake = SimpleNamespace(
        params=Namedlist(fromdict=params), output=Namedlist([out]), log=Namedlist([log])
    )
    runpy.run_path(script, init_globals={"snakemake": snakemake}, run_name="__main__")
    """
)


def _run_script(name, out, log, params):
    subprocess.run(
        [
            sys.executable,
            "-c",
            _SCRIPT_DRIVER,
            str(REPO / "scripts" / name),
            str(out),
            str(log),
            repr(params),
        ],
        check=True,
        timeout=120,
    )


def test_crash_script_writes_csv(work):
    out = work / "results" / "trials" / "crash" / "sqlite.csv"
    log = work / "crash.log"
    params = {
        "family": "sqlite",
        "settings": {
            "trials": 2,
            "record_chars": 330,
            "batch_size": 50,
            "baseline_records": 100,
            "max_kill_after_ms": 100,
        },
        "seed": SEED,
        "work_dir": str(work / "stores"),
    }
    _run_script("run_crash_trials.py", out, log, params)
    df = pl.read_csv(out)
    assert tuple(df.columns) == FIELDS
    assert df["trial"].to_list() == [0, 1]
    assert df["missing_committed"].to_list() == [0, 0]
    assert "crash sqlite trial 2/2" in log.read_text()


def test_lost_update_script_writes_csv(work):
    out = work / "lost_update.csv"
    log = work / "lu.log"
    params = {"settings": {"writers": 2, "increments": 3, "modes": ["threads"]}}
    _run_script("run_lost_update_trials.py", out, log, params)
    df = pl.read_csv(out)
    assert tuple(df.columns) == LU_FIELDS
    assert df["store"].to_list() == list(STORES)
    assert df.filter(pl.col("store") == "sqlite-update")["observed"].item() == 6


def test_trial_errors_turn_server_and_process_failures_into_trial_errors():
    from agentmem.pg import PgError
    from agentmem.procs import ProcessError
    from agentmem.trials.common import trial_errors

    @trial_errors
    def fail(exc: Exception) -> None:
        raise exc

    for exc in (PgError("PostgreSQL on /x failed to start"), ProcessError("no such pid 7")):
        with pytest.raises(TrialError, match=str(exc)) as info:
            fail(exc)
        assert info.value.__cause__ is exc
    with pytest.raises(ValueError, match="other"):  # anything else leaves as it is
        fail(ValueError("other"))
