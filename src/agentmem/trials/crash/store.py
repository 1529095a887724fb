"""Reading back the store a crash trial left behind: records present and integrity verdict.

Integrity per family is described in docs/experiments/crash.md. For file-append the
store is also recalled through the ``file-jsonl`` arm (:func:`recall_through_arm`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmem.arms.files import JSONL_NAME, FileJsonlArm
from agentmem.errors import ArmError
from agentmem.pg import EmbeddedServer
from agentmem.trials.common import TrialError, require_dir, trial_errors
from agentmem.trials.crash.records import (
    FAMILIES,
    PG_FAMILIES,
    PG_TABLE,
    record_body,
    record_tag,
)

STORE_FILES: dict[str, str] = {
    "file-append": JSONL_NAME,
    "file-rewrite": "records.json",
    "sqlite": "records.sqlite",
}
"""Store file inside a trial's directory, per file/sqlite family (the writer child is given it)."""

#: Seconds to wait for a killed writer's backend or report pipe to drain.
DRAIN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class StoreReadout:
    """What a reopened store holds.

    Attributes:
        ids: ids of the records present (after discarding a torn JSON Lines tail).
        integrity_ok: the family's integrity check passed (see docs/experiments/crash.md).
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


def pg_quiesce(dsn: str, timeout: float = DRAIN_TIMEOUT_S) -> None:
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


@trial_errors
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
        with EmbeddedServer(root, create=False) as pg:
            return _read_postgres(pg.uri(), root)
    path = root / STORE_FILES[family]
    if not path.is_file():
        raise TrialError(f"store file {path} does not exist")
    reader: Callable[[Path], StoreReadout] = {
        "file-append": _read_jsonl,
        "file-rewrite": _read_json,
        "sqlite": _read_sqlite,
    }[family]
    return reader(path)


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
