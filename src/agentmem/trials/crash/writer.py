"""The crash trial's writer child: writes records continuously and reports committed ids.

Run as ``python -m agentmem.trials.crash --child FAMILY --store DIR ...`` in its own
process group; it writes until it is SIGKILLed. What it waits for before reporting an
id, per family, is in docs/experiments/crash.md.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentmem.procs import share_background_priority
from agentmem.trials.crash.records import FAMILIES, PG_TABLE, memory_record, plain_record


def _report(ids: Sequence[int]) -> None:
    """Report committed ids on stdout (fd 1): one unbuffered write, atomic below PIPE_BUF."""
    os.write(1, "".join(f"{i}\n" for i in ids).encode())


def _write_file_append(path: Path, record_chars: int, batch_size: int, dsn: str | None) -> None:
    with open(path, "a", encoding="utf-8") as f:
        i = 0
        while True:
            i += 1
            f.write(json.dumps(memory_record(i, record_chars)) + "\n")
            f.flush()
            _report((i,))


def _write_file_rewrite(path: Path, record_chars: int, batch_size: int, dsn: str | None) -> None:
    records: list[dict[str, Any]] = []
    i = 0
    while True:
        i += 1
        records.append(plain_record(i, record_chars))
        with open(path, "w", encoding="utf-8") as f:
            json.dump(records, f)
        _report((i,))


def _write_sqlite(path: Path, record_chars: int, batch_size: int, dsn: str | None) -> None:
    import apsw

    conn = apsw.Connection(str(path))
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchall()
    if mode != [("wal",)]:
        raise RuntimeError(f"could not enable WAL: {mode}")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    nxt = 1
    while True:
        ids = range(nxt, nxt + batch_size)
        rows = [(i, plain_record(i, record_chars)["body"]) for i in ids]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO records (id, body) VALUES (?, ?)", rows)
        conn.execute("COMMIT")
        _report(ids)
        nxt += batch_size


def _write_postgres(path: Path, record_chars: int, batch_size: int, dsn: str | None) -> None:
    import psycopg

    if dsn is None:
        raise RuntimeError("postgres writer needs --dsn")
    with psycopg.connect(dsn) as conn:
        nxt = 1
        while True:
            ids = range(nxt, nxt + batch_size)
            rows = [(i, plain_record(i, record_chars)["body"]) for i in ids]
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


def child_main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the writer child (``python -m agentmem.trials.crash --child FAMILY``).

    Writes records of the family to the file ``--file`` in ``--store`` (the file and
    sqlite families) or to ``--dsn`` (the postgres ones), and reports each committed id on
    stdout until it is killed. It imports no arm, no PostgreSQL driver unless it writes
    to PostgreSQL: what it imports is start-up CPU spent before every trial.
    """
    ap = argparse.ArgumentParser(prog="python -m agentmem.trials.crash")
    ap.add_argument("--child", required=True, choices=FAMILIES)
    ap.add_argument("--store", required=True, type=Path)
    ap.add_argument("--file", default=None, help="the store file in --store (file, sqlite)")
    ap.add_argument("--record-chars", type=int, default=330)
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--dsn", default=None)
    args = ap.parse_args(argv)
    if args.file is None and args.dsn is None:
        ap.error(f"--child {args.child} needs --file (a file or sqlite family) or --dsn")
    share_background_priority()  # its own session: keep the parent job's niceness
    path = args.store / args.file if args.file is not None else args.store
    _WRITERS[args.child](path, args.record_chars, args.batch_size, args.dsn)
