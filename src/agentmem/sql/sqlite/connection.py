"""A SQLite arm's database file: opening it (WAL, busy timeout, sqlite-vec) and its sizes.

Connections go through `apsw <https://rogerbinns.github.io/apsw/>`_ (a current SQLite
with FTS5, ``dbstat`` and extension loading; the stdlib module here cannot load
sqlite-vec).
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from agentmem.arms.base import ArmError

#: Milliseconds a writer waits for another connection's write lock (other processes).
BUSY_TIMEOUT_MS = 10_000


def remove_database(path: Path) -> None:
    """Delete the SQLite file ``path`` and its ``-wal`` / ``-shm`` companions, if present."""
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def fresh_database(store_dir: Path, name: str) -> Path:
    """Make ``store_dir`` (and its parents) and clear a database ``name`` left in it.

    Returns:
        ``store_dir / name``, with no file (nor ``-wal`` / ``-shm``) at it.
    """
    store_dir.mkdir(parents=True, exist_ok=True)
    path = store_dir / name
    remove_database(path)
    return path


def connect(path: Path, *, create: bool, sqlite_vec: bool, arm: str) -> apsw.Connection:
    """Open ``path`` read-write, loading sqlite-vec when ``sqlite_vec`` is set.

    With ``create`` the file is created and switched to WAL (``journal_mode`` is
    persistent in the file, so reopening does not write it again). The connection
    starts with ``synchronous=NORMAL`` (the bulk build) and waits up to
    :data:`BUSY_TIMEOUT_MS` for another writer's lock.

    Args:
        path: the database file.
        create: create the file (and switch it to WAL).
        sqlite_vec: load the sqlite-vec extension.
        arm: the arm's name, for messages.

    Raises:
        ArmError: naming ``path`` when SQLite cannot open it or sqlite-vec cannot load.
    """
    flags = apsw.SQLITE_OPEN_READWRITE
    if create:
        flags |= apsw.SQLITE_OPEN_CREATE
    conn: apsw.Connection | None = None
    try:
        conn = apsw.Connection(str(path), flags=flags)
        if create:
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        if sqlite_vec:
            import sqlite_vec as vec_extension

            conn.enable_load_extension(True)
            conn.load_extension(vec_extension.loadable_path())
            conn.enable_load_extension(False)
    except apsw.Error as exc:
        if conn is not None:
            conn.close()
        raise ArmError(f"{arm}: cannot open SQLite store {path}: {exc}") from exc
    return conn


def object_sizes(conn: apsw.Connection, path: Path | None) -> dict[str, int]:
    """Bytes per SQLite object from ``dbstat``, after a WAL checkpoint.

    Objects are tables, indexes and FTS5 shadow tables (``sum(pgsize)`` per name); a
    non-empty ``-wal`` file of ``path`` left after the checkpoint is added as its own
    entry.

    Raises:
        apsw.Error: when the checkpoint or ``dbstat`` fails.
    """
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    objects = {
        str(n): int(b)
        for n, b in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
    }
    wal = Path(str(path) + "-wal")
    if wal.is_file() and os.path.getsize(wal) > 0:
        objects[wal.name] = os.path.getsize(wal)
    return objects


#: What :func:`integrity_problems` checks, as the fleet table names it.
INTEGRITY_CHECK = "PRAGMA integrity_check + FTS5 integrity-check"


def integrity_problems(conn: apsw.Connection) -> list[str]:
    """Problems SQLite finds in the open database, ``[]`` when it is intact.

    ``PRAGMA integrity_check`` (b-trees, indexes, free list), then FTS5's
    ``integrity-check`` command on every FTS5 table, with ``rank = 1`` so that an
    external-content table's index is also compared with its content table.

    Raises:
        apsw.Error: when a check cannot run (other than finding corruption).
    """
    rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    problems = [] if rows == ["ok"] else rows
    fts = [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%USING fts5%'"
        )
    ]
    for table in fts:
        quoted = '"' + table.replace('"', '""') + '"'
        try:
            conn.execute(f"INSERT INTO {quoted}({quoted}, rank) VALUES ('integrity-check', 1)")
        except apsw.CorruptError as exc:
            problems.append(f"FTS5 {table}: {exc}")
    return problems
