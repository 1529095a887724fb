"""Lost-update writers: the stores' increment operations, the counter's set-up and read-back.

Each store's mechanism (and why some lose updates) is described in
docs/experiments/lost-update.md. A :class:`Writer` runs in a thread of the trial or in
a writer process (``python -m agentmem.trials.lost_update --writer STORE ...``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentmem.trials.common import TrialError

STORES: tuple[str, ...] = (
    "json-file",
    "sqlite-update",
    "sqlite-naive",
    "postgres-update",
    "postgres-naive",
)
"""Stores, in report order."""

PG_TABLE = "lost_update_counter"
"""Table holding the postgres counter (``id int PRIMARY KEY, n bigint NOT NULL``, row id 1)."""


class _Contention(Exception):
    """An increment failed with a concurrency error (busy / serialization) and is dropped."""


def is_pg(store: str) -> bool:
    """Whether ``store`` is one of the PostgreSQL stores."""
    return store.startswith("postgres-")


class Writer:
    """One writer's connection to the counter and its increment operation."""

    def __init__(self, store: str, target: str, yield_s: float) -> None:
        self.store = store
        self.target = target
        self.yield_s = yield_s
        self.conn: Any = None
        if store.startswith("sqlite-"):
            import apsw

            self.conn = apsw.Connection(target, flags=apsw.SQLITE_OPEN_READWRITE)
            self.conn.setbusytimeout(60_000)
        elif is_pg(store):
            import psycopg

            self.conn = psycopg.connect(
                target, autocommit=store == "postgres-update", connect_timeout=30
            )

    def increment(self) -> None:
        """Add 1 to the counter once, the store's way; raise :class:`_Contention` if refused."""
        getattr(self, "_" + self.store.replace("-", "_"))()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _pause(self) -> None:
        time.sleep(self.yield_s)

    def _json_file(self) -> None:
        path = Path(self.target)
        with open(path, encoding="utf-8") as f:
            n = json.load(f)["n"]
        self._pause()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"n": n + 1}, f)
        os.replace(tmp, path)

    def _sqlite_update(self) -> None:
        import apsw

        try:
            self.conn.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
        except (apsw.BusyError, apsw.LockedError) as exc:
            raise _Contention(str(exc)) from None

    def _sqlite_naive(self) -> None:
        import apsw

        try:
            self.conn.execute("BEGIN")  # DEFERRED: SQLite's default transaction
            (n,) = self.conn.execute("SELECT n FROM counter WHERE id = 1").fetchone()
            self._pause()
            self.conn.execute("UPDATE counter SET n = ? WHERE id = 1", (n + 1,))
            self.conn.execute("COMMIT")
        except (apsw.BusyError, apsw.LockedError) as exc:
            if not self.conn.getautocommit():
                self.conn.execute("ROLLBACK")
            raise _Contention(str(exc)) from None

    def _postgres_update(self) -> None:
        self.conn.execute(f"UPDATE {PG_TABLE} SET n = n + 1 WHERE id = 1")

    def _postgres_naive(self) -> None:
        from psycopg import errors

        try:
            (n,) = self.conn.execute(f"SELECT n FROM {PG_TABLE} WHERE id = 1").fetchone()
            self._pause()
            self.conn.execute(f"UPDATE {PG_TABLE} SET n = %s WHERE id = 1", (n + 1,))
            self.conn.commit()
        except (errors.SerializationFailure, errors.DeadlockDetected) as exc:
            self.conn.rollback()
            raise _Contention(str(exc)) from None


def run_writer(writer: Writer, increments: int) -> tuple[int, int]:
    """Do ``increments`` increments; return ``(succeeded, failed_with_contention)``."""
    ok = failed = 0
    for _ in range(increments):
        try:
            writer.increment()
            ok += 1
        except _Contention:
            failed += 1
    return ok, failed


def writer_main(argv: Sequence[str] | None = None) -> None:
    """Entry point of a writer process (``python -m agentmem.trials.lost_update --writer``).

    Connects, says ``ready``, waits for ``go`` on stdin, does its increments and prints
    ``{"ok": n, "errors": n}``.
    """
    ap = argparse.ArgumentParser(prog="python -m agentmem.trials.lost_update")
    ap.add_argument("--writer", required=True, choices=STORES)
    ap.add_argument("--target", required=True)
    ap.add_argument("--increments", type=int, required=True)
    ap.add_argument("--yield-ms", type=float, default=1.0)
    args = ap.parse_args(argv)
    writer = Writer(args.writer, args.target, args.yield_ms / 1000.0)
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        if sys.stdin.readline().strip() != "go":
            return
        ok, failed = run_writer(writer, args.increments)
    finally:
        writer.close()
    sys.stdout.write(json.dumps({"ok": ok, "errors": failed}) + "\n")
    sys.stdout.flush()


def reset_counter(store: str, target: str) -> None:
    """Create the counter with n = 0."""
    if store == "json-file":
        Path(target).write_text(json.dumps({"n": 0}), encoding="utf-8")
    elif store.startswith("sqlite-"):
        import apsw

        conn = apsw.Connection(target)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
            conn.execute("INSERT INTO counter (id, n) VALUES (1, 0)")
        finally:
            conn.close()
    else:
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {PG_TABLE} (id int PRIMARY KEY, n bigint NOT NULL)"
            )
            conn.execute(f"DELETE FROM {PG_TABLE}")
            conn.execute(f"INSERT INTO {PG_TABLE} (id, n) VALUES (1, 0)")


def read_counter(store: str, target: str) -> int:
    """Read the counter back; raise :class:`TrialError` naming the store if unreadable."""
    if store == "json-file":
        path = Path(target)
        try:
            return int(json.loads(path.read_text(encoding="utf-8"))["n"])
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise TrialError(f"counter file {path} is unreadable: {exc}") from None
    if store.startswith("sqlite-"):
        import apsw

        try:
            conn = apsw.Connection(target, flags=apsw.SQLITE_OPEN_READWRITE)
            try:
                return int(conn.execute("SELECT n FROM counter WHERE id = 1").fetchone()[0])
            finally:
                conn.close()
        except (apsw.Error, TypeError) as exc:
            raise TrialError(f"counter database {target} is unreadable: {exc}") from None
    import psycopg

    with psycopg.connect(target, autocommit=True) as conn:
        return int(conn.execute(f"SELECT n FROM {PG_TABLE} WHERE id = 1").fetchone()[0])
