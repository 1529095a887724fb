"""Crash trials (DESIGN §6, REFERENCE §4): SIGKILL during sustained writes, then reopen.

One trial:

1. A child process (``python -m agentmem.trials.crash --child FAMILY ...``, its own
   process group) writes records of ``record_chars`` characters continuously and writes
   the id of every record it considers committed, one per line, to its stdout pipe.
2. The parent drains that pipe on a thread, waits until ``baseline_records`` ids have
   been reported, sleeps ``kill_after_ms`` drawn from ``random.Random(seed + trial)``
   uniformly in ``[0, max_kill_after_ms)``, and sends SIGKILL, to the writer's process
   group, or for ``postgres-server`` to the PostgreSQL postmaster itself.
3. The parent drains the pipe to EOF, reopens the store and records whether it is
   readable, how many records are present, how many *reported-committed* records are
   missing, and the integrity check.

What "committed" means per family (what the child waits for before reporting an id):

================  =========================================================================
file-append       the ``file-jsonl`` arm's store (``memories.jsonl``, one memory object per
                  line); ``write`` + ``flush`` of the line (no fsync, as the study).
file-rewrite      the whole JSON array rewritten in place after every record
                  (``open("w")`` + ``json.dump`` + close: the naive, non-atomic way the
                  study measured; the file is truncated first, then refilled).
sqlite            apsw, ``journal_mode=WAL``, ``synchronous=FULL``, ``batch_size`` rows per
                  transaction; ids reported after ``COMMIT`` returns.
postgres-writer   embedded PostgreSQL 18 (pgserver), ``batch_size`` rows per transaction;
                  ids reported after ``COMMIT`` returns; the *client* process is killed.
postgres-server   as postgres-writer, but the *postmaster* is SIGKILLed mid-write; the
                  server is restarted from a fresh process, which runs crash recovery
                  (WAL replay) before the rows are read.
================  =========================================================================

Integrity per family: files, the store parses and every record's body is intact
(``body == record_body(id, len(body))``) with no duplicate id; sqlite, additionally
``PRAGMA integrity_check`` returns ``ok``; postgres, the server (re)started, a full heap
scan succeeds (data checksums are on by default in PostgreSQL 18, so a damaged page
fails the scan), and an index scan over the primary key returns the same ids as the
heap scan. A torn, unterminated last line of a JSON Lines file is discarded, as JSON
Lines readers do, and noted in ``detail``; it is never a reported-committed record,
because the child reports an id only after the whole line was written.

Recall through the arm (file-append): after each kill the store is also opened with the
``file-jsonl`` arm itself and the last reported-committed record is recalled by its tag
(``recall_ok``: the arm opened, answered with exactly that record, and holds as many
readable memories as the tolerant reader found records); other families leave it empty.

Process hygiene: each child runs in its own session and its group is SIGKILLed in a
``finally``; each Postgres server is an :class:`~agentmem.trials.EmbeddedPostgres` that
is stopped (or killed) and reaped in a ``finally``. No process survives the call.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmem.arms.files import JSONL_NAME, FileJsonlArm
from agentmem.errors import ArmError
from agentmem.io import share_background_priority
from agentmem.trials import EmbeddedPostgres, TrialError, child_env, kill_group, require_dir

FAMILIES: tuple[str, ...] = (
    "file-append",
    "file-rewrite",
    "sqlite",
    "postgres-writer",
    "postgres-server",
)
"""Crash families, in report order (same as ``agentmem.config.CRASH_FAMILIES``)."""

FIELDS: tuple[str, ...] = (
    "family",
    "trial",
    "kill_after_ms",
    "readable",
    "committed",
    "present",
    "missing_committed",
    "integrity_ok",
    "recall_ok",
    "detail",
)
"""Columns of one result row, in order (``detail`` is a short human-readable note)."""

STORE_FILES: dict[str, str] = {
    "file-append": JSONL_NAME,
    "file-rewrite": "records.json",
    "sqlite": "records.sqlite",
}
"""Store file inside a trial's directory, per file/sqlite family."""

PG_TABLE = "crash_records"
"""Table the postgres families write (``id bigint PRIMARY KEY, body text NOT NULL``)."""

PG_FAMILIES = ("postgres-writer", "postgres-server")

_FILLER = (
    "the agent noted that the deployment window moved to thursday after the review; "
    "keep the rollback plan, page the on-call owner, and record the decision in the log. "
)
_BASELINE_TIMEOUT_S = 120.0
_DRAIN_TIMEOUT_S = 30.0


def record_body(record_id: int, width: int) -> str:
    """Deterministic body text of exactly ``width`` characters for ``record_id``.

    The record's tag (:func:`record_tag`) and ``"|"``, followed by repeated filler prose,
    cut to ``width`` (at least 1). Readers verify a body with
    ``body == record_body(id, len(body))``, which detects a body that was garbled or
    belongs to another record.

    Args:
        record_id: the record id (positive int).
        width: length of the body in characters.

    Returns:
        The body (ASCII, no characters that JSON escapes).
    """
    width = max(1, width)
    head = f"{record_tag(record_id)}|"
    reps = width // len(_FILLER) + 2
    return (head + _FILLER * reps)[:width]


def record_tag(record_id: int) -> str:
    """``"r"`` and the id in nine digits, e.g. ``r000000042``: no tag contains another."""
    return f"r{record_id:09d}"


def _body_width(record_id: int, record_chars: int) -> int:
    """Body width that makes the JSON line ``{"id": id, "body": ...}`` ``record_chars`` long."""
    return record_chars - len(json.dumps({"id": record_id, "body": ""}))


def _record(record_id: int, record_chars: int) -> dict[str, Any]:
    return {"id": record_id, "body": record_body(record_id, _body_width(record_id, record_chars))}


def _memory_record(record_id: int, record_chars: int) -> dict[str, Any]:
    """A record as a ``file-jsonl`` memory object whose JSON line is ``record_chars`` long.

    Keys: ``memory_id`` (the tag), ``id``, ``body``, ``created_day`` (0) and ``seq`` (the id).
    """
    row: dict[str, Any] = {"memory_id": record_tag(record_id), "id": record_id, "body": ""}
    row.update(created_day=0, seq=record_id)
    width = record_chars - len(json.dumps(row))
    row["body"] = record_body(record_id, width)
    return row


def recall_through_arm(store_dir: Path, last_committed: int | None, present: int) -> bool:
    """Open a file-append store with the ``file-jsonl`` arm and recall a committed record.

    Args:
        store_dir: the trial directory holding ``memories.jsonl``.
        last_committed: the last id the writer reported committed (``None``: none).
        present: records the tolerant reader found.

    Returns:
        True when the arm opens, answers a query for the record's tag with exactly that
        record, and holds ``present`` readable memories; False otherwise (never raises).
    """
    import numpy as np

    from agentmem.arms.base import Query

    arm = FileJsonlArm()
    try:
        arm.open(store_dir)
        if last_committed is not None:
            tag = record_tag(last_committed)
            q = Query("crash-recall", tag, np.zeros(384, dtype=np.float32))
            if arm.query(q, 2).memory_ids != [tag]:
                return False
        return arm.storage().counts.get("memories") == present
    except ArmError:
        return False
    finally:
        arm.close()


# ---------------------------------------------------------------------------------------
# Reading a store back
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreReadout:
    """What a reopened store holds.

    Attributes:
        ids: ids of the records present (after discarding a torn JSON Lines tail).
        integrity_ok: the family's integrity check passed (see module docstring).
        detail: a short note ("ok", what failed, torn tail, WAL replay, ...).
    """

    ids: frozenset[int]
    integrity_ok: bool
    detail: str


def _check_records(records: Sequence[tuple[Any, Any]]) -> tuple[frozenset[int], list[str]]:
    """Validate ``(id, body)`` pairs; return the id set and a list of problems."""
    problems: list[str] = []
    ids: set[int] = set()
    bad_body = dup = 0
    for rid, body in records:
        if not isinstance(rid, int) or not isinstance(body, str):
            bad_body += 1
            continue
        if rid in ids:
            dup += 1
        ids.add(rid)
        if body != record_body(rid, len(body)):
            bad_body += 1
    if bad_body:
        problems.append(f"{bad_body} record(s) with a damaged body")
    if dup:
        problems.append(f"{dup} duplicate id(s)")
    return frozenset(ids), problems


def _read_jsonl(path: Path) -> StoreReadout:
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    records: list[tuple[Any, Any]] = []
    for n, line in enumerate(lines, start=1):
        try:
            obj = json.loads(line)
            records.append((obj["id"], obj["body"]))
        except (ValueError, TypeError, KeyError) as exc:
            raise TrialError(
                f"{path} is corrupt: line {n} is not a JSON record ({type(exc).__name__}: {exc})"
            ) from None
    ids, problems = _check_records(records)
    notes = list(problems)
    if tail:
        notes.append(f"torn final line discarded ({len(tail)} bytes)")
    return StoreReadout(ids, not problems, "; ".join(notes) or "ok")


def _read_json(path: Path) -> StoreReadout:
    data = path.read_bytes()
    if not data:
        raise TrialError(f"{path} is empty (0 bytes)")
    try:
        doc = json.loads(data)
        records = [(r["id"], r["body"]) for r in doc]
    except (ValueError, TypeError, KeyError) as exc:
        raise TrialError(
            f"{path} is corrupt ({len(data)} bytes): {type(exc).__name__}: {exc}"
        ) from None
    ids, problems = _check_records(records)
    return StoreReadout(ids, not problems, "; ".join(problems) or "ok")


def _read_sqlite(path: Path) -> StoreReadout:
    import apsw

    conn = None
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
        check = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        records = list(conn.execute("SELECT id, body FROM records"))
    except apsw.Error as exc:
        raise TrialError(f"{path} is not a readable SQLite store: {exc}") from None
    finally:
        if conn is not None:
            conn.close()
    ids, problems = _check_records(records)
    if check != ["ok"]:
        problems.insert(0, "integrity_check: " + "; ".join(map(str, check[:3])))
    return StoreReadout(ids, not problems, "; ".join(problems) or "ok")


def _read_postgres(dsn: str, where: Path) -> StoreReadout:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=30) as conn:
            # both scans in one REPEATABLE READ transaction: one snapshot
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            conn.execute("SET LOCAL enable_indexscan = off")
            conn.execute("SET LOCAL enable_indexonlyscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            records = conn.execute(f"SELECT id, body FROM {PG_TABLE}").fetchall()
            conn.execute("SET LOCAL enable_indexscan = on")
            conn.execute("SET LOCAL enable_indexonlyscan = on")
            conn.execute("SET LOCAL enable_seqscan = off")
            index_ids = [r[0] for r in conn.execute(f"SELECT id FROM {PG_TABLE} ORDER BY id")]
            conn.rollback()
    except psycopg.Error as exc:
        raise TrialError(f"PostgreSQL store {where} is not readable: {exc}") from None
    ids, problems = _check_records(records)
    if len(index_ids) != len(records) or set(index_ids) != set(ids):
        problems.insert(
            0, f"primary-key index has {len(index_ids)} ids, heap has {len(records)} rows"
        )
    return StoreReadout(ids, not problems, "; ".join(problems) or "ok")


def _pg_quiesce(dsn: str, timeout: float = _DRAIN_TIMEOUT_S) -> None:
    """Wait until no other client backend is connected.

    A killed client's backend may still be executing statements it had already received.
    """
    import psycopg

    deadline = time.monotonic() + timeout
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=30) as conn:
            while time.monotonic() < deadline:
                (others,) = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                    "'client backend' AND pid <> pg_backend_pid()"
                ).fetchone()
                if others == 0:
                    return
                time.sleep(0.02)
    except psycopg.Error:
        return  # the read that follows reports the failure


def read_store(family: str, store_dir: str | Path, *, dsn: str | None = None) -> StoreReadout:
    """Reopen the store a crash trial left behind and check it.

    Args:
        family: one of :data:`FAMILIES`.
        store_dir: the trial's store directory; for the postgres families the PostgreSQL
            data directory.
        dsn: for the postgres families, a URI of a server already running on
            ``store_dir``; when None the server is started on ``store_dir`` from a fresh
            process (crash recovery runs if needed), read, and stopped again.

    Returns:
        The ids present, the integrity verdict and a note.

    Raises:
        TrialError: naming the path when the directory is missing, the store file is
            missing, empty or corrupt (does not parse / is not a database), or the
            PostgreSQL data directory cannot be started or scanned.
        ValueError: for an unknown family.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown crash family {family!r}; known: {', '.join(FAMILIES)}")
    root = require_dir(store_dir, writable=False)
    if family in PG_FAMILIES:
        if dsn is not None:
            return _read_postgres(dsn, root)
        with EmbeddedPostgres(root, create=False) as pg:
            assert pg.uri is not None
            return _read_postgres(pg.uri, root)
    path = root / STORE_FILES[family]
    if not path.is_file():
        raise TrialError(f"store file {path} does not exist")
    reader: Callable[[Path], StoreReadout] = {
        "file-append": _read_jsonl,
        "file-rewrite": _read_json,
        "sqlite": _read_sqlite,
    }[family]
    return reader(path)


# ---------------------------------------------------------------------------------------
# The child writer
# ---------------------------------------------------------------------------------------


def _report(ids: Sequence[int]) -> None:
    """Report committed ids on stdout (fd 1): one unbuffered write, atomic below PIPE_BUF."""
    os.write(1, "".join(f"{i}\n" for i in ids).encode())


def _write_file_append(store: Path, record_chars: int, batch_size: int, dsn: str | None) -> None:
    with open(store / STORE_FILES["file-append"], "a", encoding="utf-8") as f:
        i = 0
        while True:
            i += 1
            f.write(json.dumps(_memory_record(i, record_chars)) + "\n")
            f.flush()
            _report((i,))


def _write_file_rewrite(store: Path, record_chars: int, batch_size: int, dsn: str | None) -> None:
    path = store / STORE_FILES["file-rewrite"]
    records: list[dict[str, Any]] = []
    i = 0
    while True:
        i += 1
        records.append(_record(i, record_chars))
        with open(path, "w", encoding="utf-8") as f:
            json.dump(records, f)
        _report((i,))


def _write_sqlite(store: Path, record_chars: int, batch_size: int, dsn: str | None) -> None:
    import apsw

    conn = apsw.Connection(str(store / STORE_FILES["sqlite"]))
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchall()
    if mode != [("wal",)]:
        raise RuntimeError(f"could not enable WAL: {mode}")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    nxt = 1
    while True:
        ids = range(nxt, nxt + batch_size)
        rows = [(i, _record(i, record_chars)["body"]) for i in ids]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO records (id, body) VALUES (?, ?)", rows)
        conn.execute("COMMIT")
        _report(ids)
        nxt += batch_size


def _write_postgres(store: Path, record_chars: int, batch_size: int, dsn: str | None) -> None:
    import psycopg

    if dsn is None:
        raise RuntimeError("postgres writer needs --dsn")
    with psycopg.connect(dsn) as conn:
        nxt = 1
        while True:
            ids = range(nxt, nxt + batch_size)
            rows = [(i, _record(i, record_chars)["body"]) for i in ids]
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {PG_TABLE} (id, body) VALUES (%s, %s)", rows)
            conn.commit()
            _report(ids)
            nxt += batch_size


_WRITERS: dict[str, Callable[[Path, int, int, str | None], None]] = {
    "file-append": _write_file_append,
    "file-rewrite": _write_file_rewrite,
    "sqlite": _write_sqlite,
    "postgres-writer": _write_postgres,
    "postgres-server": _write_postgres,
}


def _child_main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the writer child; writes until it is killed."""
    ap = argparse.ArgumentParser(prog="python -m agentmem.trials.crash")
    ap.add_argument("--child", required=True, choices=FAMILIES)
    ap.add_argument("--store", required=True, type=Path)
    ap.add_argument("--record-chars", type=int, default=330)
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--dsn", default=None)
    args = ap.parse_args(argv)
    share_background_priority()  # its own session: keep the parent job's niceness
    _WRITERS[args.child](args.store, args.record_chars, args.batch_size, args.dsn)


# ---------------------------------------------------------------------------------------
# The parent
# ---------------------------------------------------------------------------------------


class _Reports(threading.Thread):
    """Drain a child's report pipe; ``reached`` is set once ``baseline`` ids arrived."""

    def __init__(self, stream: Any, baseline: int) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.baseline = baseline
        self.ids: list[int] = []
        self.reached = threading.Event()

    def run(self) -> None:
        for line in self.stream:
            if not line.endswith(b"\n"):
                break
            self.ids.append(int(line))
            if len(self.ids) >= self.baseline:
                self.reached.set()


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return ("\n  child log " + str(path) + ":\n    " + "\n    ".join(text)) if text else ""


def _pg_prepare(uri: str) -> None:
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '60s'")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {PG_TABLE} (id bigint PRIMARY KEY, body text NOT NULL)"
        )
        conn.execute(f"TRUNCATE {PG_TABLE}")


def _log_size(pg: EmbeddedPostgres) -> int:
    try:
        return (pg.pgdata / "log").stat().st_size
    except OSError:
        return 0


def _recovery_note(pg: EmbeddedPostgres, offset: int) -> str:
    """Summarise what the server log says about crash recovery since ``offset``."""
    try:
        with open(pg.pgdata / "log", "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return "restarted"
    if "redo done" in text:
        return "restarted; WAL replayed (redo done)"
    if "not properly shut down" in text or "automatic recovery" in text:
        return "restarted; crash recovery ran"
    return "restarted; no redo needed"


def _one_trial(
    family: str,
    trial: int,
    seed: int,
    family_dir: Path,
    record_chars: int,
    batch_size: int,
    baseline_records: int,
    max_kill_after_ms: int,
    pg: EmbeddedPostgres | None,
    keep_stores: bool,
) -> dict[str, Any]:
    kill_after_ms = round(random.Random(seed + trial).random() * max_kill_after_ms, 3)
    trial_dir = family_dir / f"trial-{trial:03d}"
    if trial_dir.exists():
        shutil.rmtree(trial_dir)
    trial_dir.mkdir(parents=True)
    log_path = trial_dir / "child.log"

    dsn = None
    if pg is not None:
        if pg.uri is None:
            pg.start()
        assert pg.uri is not None
        dsn = pg.uri
        _pg_prepare(dsn)

    cmd = [sys.executable, "-m", "agentmem.trials.crash", "--child", family]
    cmd += ["--store", str(trial_dir), "--record-chars", str(record_chars)]
    cmd += ["--batch-size", str(batch_size)]
    if dsn is not None:
        cmd += ["--dsn", dsn]
    with open(log_path, "wb") as log:
        child = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            env=child_env(),
        )
    reports = _Reports(child.stdout, baseline_records)
    reports.start()
    try:
        deadline = time.monotonic() + _BASELINE_TIMEOUT_S
        while not reports.reached.wait(0.05):
            if child.poll() is not None:
                reports.join(5)
                raise TrialError(
                    f"{family} writer in {trial_dir} exited (code {child.returncode}) after "
                    f"{len(reports.ids)} of {baseline_records} baseline records{_tail(log_path)}"
                )
            if time.monotonic() > deadline:
                raise TrialError(
                    f"{family} writer in {trial_dir} reported only {len(reports.ids)} of "
                    f"{baseline_records} baseline records in {_BASELINE_TIMEOUT_S:.0f} s"
                    f"{_tail(log_path)}"
                )
        time.sleep(kill_after_ms / 1000.0)
        if family == "postgres-server":
            assert pg is not None
            pg.kill()  # the postmaster; the writer then loses its connection and exits
            try:
                child.wait(timeout=_DRAIN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
        kill_group(child)
    finally:
        kill_group(child)
        reports.join(_DRAIN_TIMEOUT_S)
        if child.stdout is not None:
            child.stdout.close()
    committed = set(reports.ids)

    note = ""
    if family == "postgres-server":
        assert pg is not None
        offset = _log_size(pg)
        try:
            pg.start()
            note = _recovery_note(pg, offset)
        except TrialError as exc:
            note = str(exc)
    try:
        if family in PG_FAMILIES:
            assert pg is not None
            if pg.uri is None:
                raise TrialError(note or f"PostgreSQL on {pg.pgdata} is not running")
            _pg_quiesce(pg.uri)
            readout = read_store(family, pg.pgdata, dsn=pg.uri)
        else:
            readout = read_store(family, trial_dir)
        readable = True
    except TrialError as exc:
        readout = StoreReadout(frozenset(), False, str(exc))
        readable = False
    detail = "; ".join(x for x in (note, readout.detail) if x and x != "ok") or "ok"
    recall_ok = None
    if family == "file-append":
        recall_ok = recall_through_arm(trial_dir, max(committed, default=None), len(readout.ids))
    if not keep_stores:
        shutil.rmtree(trial_dir, ignore_errors=True)
    return {
        "family": family,
        "trial": trial,
        "kill_after_ms": kill_after_ms,
        "readable": readable,
        "committed": len(committed),
        "present": len(readout.ids),
        "missing_committed": len(committed - readout.ids),
        "integrity_ok": readable and readout.integrity_ok,
        "recall_ok": recall_ok,
        "detail": detail,
    }


def run_crash_trials(
    family: str,
    trials: int,
    seed: int,
    work_dir: str | Path,
    record_chars: int = 330,
    batch_size: int = 50,
    baseline_records: int = 200,
    max_kill_after_ms: int = 1500,
    progress: bool = True,
    keep_stores: bool = False,
) -> list[dict[str, Any]]:
    """Run ``trials`` crash trials of one family (see the module docstring).

    Stores live under ``work_dir/<family>/``, which is emptied first. File and sqlite
    trials each get ``trial-NNN/``; the postgres families share one data directory
    ``work_dir/<family>/pgdata`` whose table is truncated between trials (postgres-writer
    keeps one server for all trials; postgres-server restarts it after every kill).

    Args:
        family: one of :data:`FAMILIES`.
        trials: number of trials (>= 1).
        seed: trial ``t`` (0-based) draws its kill delay from ``random.Random(seed + t)``.
        work_dir: an existing, writable directory for the stores (may be under /tmp).
        record_chars: length of one record as a JSON line (file-append: a ``file-jsonl``
            memory object; file-rewrite: ``{"id": .., "body": ..}``); SQL families store
            the file-rewrite body.
        batch_size: rows per transaction for sqlite and postgres.
        baseline_records: committed records the child must report before the kill window.
        max_kill_after_ms: the kill delay after the baseline is uniform in ``[0, this)`` ms.
        progress: print one line per trial to stderr.
        keep_stores: keep the stores: the file/sqlite trial directories and the stopped
            postgres data directory (holding the last trial's table). By default each
            trial directory is deleted after its check and the data directory at the end:
            a file-append trial writes up to ~70 MB, a postgres family ~100-300 MB of WAL.

    Returns:
        One dict per trial with the keys of :data:`FIELDS`: ``family`` str, ``trial`` int
        (0-based), ``kill_after_ms`` float (ms after the baseline), ``readable`` bool,
        ``committed`` int (distinct ids the child reported), ``present`` int (records in
        the reopened store), ``missing_committed`` int (reported but absent),
        ``integrity_ok`` bool, ``recall_ok`` bool for file-append (the ``file-jsonl`` arm
        recalled the last committed record, :func:`recall_through_arm`) else ``None``,
        ``detail`` str.

    Raises:
        TrialError: naming the path when ``work_dir`` is missing, not a directory or
            read-only, when a writer dies or stalls before its baseline, or when a
            Postgres server cannot be started for the trials.
        ValueError: for an unknown family or a non-positive count.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown crash family {family!r}; known: {', '.join(FAMILIES)}")
    for name, value in (
        ("trials", trials),
        ("record_chars", record_chars),
        ("batch_size", batch_size),
        ("baseline_records", baseline_records),
        ("max_kill_after_ms", max_kill_after_ms),
    ):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    root = require_dir(work_dir, what="crash work directory")
    family_dir = root / family
    if family_dir.exists():
        shutil.rmtree(family_dir)
    family_dir.mkdir()

    pg = EmbeddedPostgres(family_dir / "pgdata") if family in PG_FAMILIES else None
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        for trial in range(trials):
            row = _one_trial(
                family,
                trial,
                seed,
                family_dir,
                record_chars,
                batch_size,
                baseline_records,
                max_kill_after_ms,
                pg,
                keep_stores,
            )
            rows.append(row)
            if progress:
                print(
                    f"crash {family} trial {trial + 1}/{trials}: kill after "
                    f"{row['kill_after_ms']:.1f} ms, committed {row['committed']}, present "
                    f"{row['present']}, missing {row['missing_committed']}, readable "
                    f"{row['readable']}, integrity {row['integrity_ok']}, recall through the "
                    f"arm {row['recall_ok']} ({row['detail']}) "
                    f"[{time.monotonic() - started:.1f} s]",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if pg is not None:
            pg.stop()
            if not keep_stores:
                shutil.rmtree(pg.pgdata, ignore_errors=True)
    return rows


if __name__ == "__main__":
    _child_main()
