"""The crash trial's parent: start the writer, SIGKILL it (or the server), reopen, check.

One trial per call of ``_one_trial``; :func:`run_crash_trials` runs a family's trials.
Each child runs in its own session and its group is SIGKILLed in a ``finally``; each
Postgres server is an owned :class:`~agentmem.pg.EmbeddedServer` that is stopped (or
killed) and reaped in a ``finally``. No process survives the call. The trial is
described in docs/experiments/crash.md.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmem.config import CrashConfig
from agentmem.pg import EmbeddedServer, PgError
from agentmem.procs import child_env, kill_group
from agentmem.trials.common import TrialError, require_dir, trial_errors
from agentmem.trials.crash.records import FAMILIES, PG_FAMILIES, PG_TABLE
from agentmem.trials.crash.store import (
    DRAIN_TIMEOUT_S,
    STORE_FILES,
    StoreReadout,
    pg_quiesce,
    read_store,
    recall_through_arm,
)

_BASELINE_TIMEOUT_S = 120.0


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


def _log_size(pg: EmbeddedServer) -> int:
    try:
        return (pg.pgdata / "log").stat().st_size
    except OSError:
        return 0


def _recovery_note(pg: EmbeddedServer, offset: int) -> str:
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
    pg: EmbeddedServer | None,
    keep_stores: bool,
) -> dict[str, Any]:
    """Run trial ``trial`` of ``family`` and return its result row (keys of ``FIELDS``)."""
    kill_after_ms = round(random.Random(seed + trial).random() * max_kill_after_ms, 3)
    trial_dir = family_dir / f"trial-{trial:03d}"
    if trial_dir.exists():
        shutil.rmtree(trial_dir)
    trial_dir.mkdir(parents=True)
    log_path = trial_dir / "child.log"

    dsn = None
    if pg is not None:
        dsn = pg.uri() if pg.pid is not None else pg.start()
        _pg_prepare(dsn)

    cmd = [sys.executable, "-m", "agentmem.trials.crash", "--child", family]
    cmd += ["--store", str(trial_dir), "--record-chars", str(record_chars)]
    cmd += ["--batch-size", str(batch_size)]
    if family in STORE_FILES:
        cmd += ["--file", STORE_FILES[family]]
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
                child.wait(timeout=DRAIN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
        kill_group(child)
    finally:
        kill_group(child)
        reports.join(DRAIN_TIMEOUT_S)
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
        except PgError as exc:
            note = str(exc)
    try:
        if family in PG_FAMILIES:
            assert pg is not None
            if pg.pid is None:
                raise TrialError(note or f"PostgreSQL on {pg.pgdata} is not running")
            pg_quiesce(pg.uri())
            readout = read_store(family, pg.pgdata, dsn=pg.uri())
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


@trial_errors
def run_crash_trials(
    family: str,
    settings: CrashConfig | Mapping[str, Any],
    seed: int,
    work_dir: str | Path,
    *,
    progress: bool = True,
    keep_stores: bool = False,
) -> list[dict[str, Any]]:
    """Run ``settings.trials`` crash trials of one family (docs/experiments/crash.md).

    Stores live under ``work_dir/<family>/``, which is emptied first. File and sqlite
    trials each get ``trial-NNN/``; the postgres families share one data directory
    ``work_dir/<family>/pgdata`` whose table is truncated between trials (postgres-writer
    keeps one server for all trials; postgres-server restarts it after every kill).

    Args:
        family: one of :data:`FAMILIES`.
        settings: config ``trials.crash`` (:class:`agentmem.config.CrashConfig`; a mapping
            is validated through it, its defaults and bounds the only ones): ``trials``;
            ``record_chars``, the length of one record as a JSON line (file-append: a
            ``file-jsonl`` memory object; file-rewrite: ``{"id": .., "body": ..}``; SQL
            families store the file-rewrite body); ``batch_size``, rows per transaction
            for sqlite and postgres; ``baseline_records``, committed records the child
            must report before the kill window; ``max_kill_after_ms``, the kill delay after
            the baseline is uniform in ``[0, this)`` ms. Its ``families`` are not read.
        seed: trial ``t`` (0-based) draws its kill delay from ``random.Random(seed + t)``.
        work_dir: an existing, writable directory for the stores (may be under /tmp).
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
        ValueError: for an unknown family, or settings out of their bounds (pydantic's
            ValidationError).
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown crash family {family!r}; known: {', '.join(FAMILIES)}")
    cfg = settings if isinstance(settings, CrashConfig) else CrashConfig.model_validate(settings)
    trials, record_chars, batch_size = cfg.trials, cfg.record_chars, cfg.batch_size
    baseline_records, max_kill_after_ms = cfg.baseline_records, cfg.max_kill_after_ms
    root = require_dir(work_dir, what="crash work directory")
    family_dir = root / family
    if family_dir.exists():
        shutil.rmtree(family_dir)
    family_dir.mkdir()

    pg = EmbeddedServer(family_dir / "pgdata") if family in PG_FAMILIES else None
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
