"""Lost-update trials (DESIGN §6, REFERENCE §4): concurrent increments of one counter.

``writers`` writers each add 1 to one shared counter ``increments`` times, all starting
together (a barrier). ``expected = writers * increments``; ``observed`` is the counter
read back afterwards; ``lost = expected - observed``; ``errors`` counts increments that
failed with a concurrency error and were *not* retried (they are included in ``lost``).
A writer yields (``time.sleep(yield_ms / 1000)``) between its read and its write in
every read-then-write store, which widens the race window.

Stores:

=================  ======================================================================
json-file          read-modify-write of ``{"n": N}`` in a JSON file: read + parse, yield,
                   write a temp file and ``os.replace`` it over the original. The write is
                   atomic, so a reader never sees a torn file: the only anomaly left is the
                   lost update itself (two writers read the same N and both write N + 1).
sqlite-update      one statement ``UPDATE counter SET n = n + 1`` in autocommit; every
                   writer has its own apsw connection (WAL, ``busy_timeout`` 60 s), so the
                   database's write lock serialises the increments.
sqlite-naive       ``BEGIN`` (DEFERRED, SQLite's default) ; ``SELECT n`` ; yield ;
                   ``UPDATE counter SET n = ?`` ; ``COMMIT``, own connection per writer.
                   SQLite does not lose these updates silently: in WAL mode a read
                   transaction can only be upgraded to a write transaction if no other
                   connection has committed since it started, otherwise the ``UPDATE``
                   fails at once with ``SQLITE_BUSY`` (``SQLITE_BUSY_SNAPSHOT``; the busy
                   timeout cannot help). The naive writer does not retry: each such
                   failure is counted in ``errors`` and therefore in ``lost``. So for this
                   store ``lost == errors``: the increments were refused, not overwritten.
postgres-update    one statement ``UPDATE ... SET n = n + 1`` in autocommit, own psycopg
                   connection per writer: the row lock serialises the increments.
postgres-naive     ``SELECT n`` ; yield ; ``UPDATE ... SET n = %s`` ; ``COMMIT`` in one
                   transaction at PostgreSQL's default isolation, READ COMMITTED. The
                   ``UPDATE`` waits for the row lock, then writes its stale value over the
                   committed one: updates are lost silently (``errors == 0``).
=================  ======================================================================

Modes: ``threads`` (all writers are threads of this process) and ``processes`` (each
writer is a separate OS process, ``python -m agentmem.trials.lost_update --writer ...``,
in its own process group; every one of them is killed and reaped before the call
returns). The postgres stores use an embedded PostgreSQL 18 server (pgserver) unless a
DSN is passed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentmem.trials import EmbeddedPostgres, TrialError, child_env, kill_group, require_dir

STORES: tuple[str, ...] = (
    "json-file",
    "sqlite-update",
    "sqlite-naive",
    "postgres-update",
    "postgres-naive",
)
"""Stores, in report order."""

MODES: tuple[str, ...] = ("threads", "processes")
"""Concurrency modes."""

FIELDS: tuple[str, ...] = (
    "store",
    "mode",
    "writers",
    "increments",
    "expected",
    "observed",
    "lost",
    "errors",
)
"""Columns of one result row, in order."""

PG_TABLE = "lost_update_counter"
"""Table holding the postgres counter (``id int PRIMARY KEY, n bigint NOT NULL``, row id 1)."""

_TIMEOUT_S = 300.0


class _Contention(Exception):
    """An increment failed with a concurrency error (busy / serialization) and is dropped."""


def _is_pg(store: str) -> bool:
    return store.startswith("postgres-")


# ---------------------------------------------------------------------------------------
# Writers (used in threads and in writer processes)
# ---------------------------------------------------------------------------------------


class _Writer:
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
        elif _is_pg(store):
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


def _run_writer(writer: _Writer, increments: int) -> tuple[int, int]:
    """Do ``increments`` increments; return ``(succeeded, failed_with_contention)``."""
    ok = failed = 0
    for _ in range(increments):
        try:
            writer.increment()
            ok += 1
        except _Contention:
            failed += 1
    return ok, failed


def _writer_main(argv: Sequence[str] | None = None) -> None:
    """Entry point of a writer process: connect, say ``ready``, wait for ``go``, report."""
    ap = argparse.ArgumentParser(prog="python -m agentmem.trials.lost_update")
    ap.add_argument("--writer", required=True, choices=STORES)
    ap.add_argument("--target", required=True)
    ap.add_argument("--increments", type=int, required=True)
    ap.add_argument("--yield-ms", type=float, default=1.0)
    args = ap.parse_args(argv)
    writer = _Writer(args.writer, args.target, args.yield_ms / 1000.0)
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        if sys.stdin.readline().strip() != "go":
            return
        ok, failed = _run_writer(writer, args.increments)
    finally:
        writer.close()
    sys.stdout.write(json.dumps({"ok": ok, "errors": failed}) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------
# Counter set-up and read-back
# ---------------------------------------------------------------------------------------


def _reset(store: str, target: str) -> None:
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


def _observe(store: str, target: str) -> int:
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


# ---------------------------------------------------------------------------------------
# Running writers
# ---------------------------------------------------------------------------------------


def _run_threads(
    store: str, target: str, writers: int, increments: int, yield_s: float
) -> tuple[int, int]:
    barrier = threading.Barrier(writers)
    results: list[tuple[int, int]] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def work() -> None:
        writer = None
        try:
            writer = _Writer(store, target, yield_s)
            barrier.wait(timeout=_TIMEOUT_S)
            res = _run_writer(writer, increments)
            with lock:
                results.append(res)
        except BaseException as exc:  # noqa: BLE001 - re-raised below in the caller
            barrier.abort()
            with lock:
                failures.append(exc)
        finally:
            if writer is not None:
                writer.close()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(_TIMEOUT_S)
    if failures or any(t.is_alive() for t in threads):
        # report the root cause, not the BrokenBarrierError it caused in the others
        real = [f for f in failures if not isinstance(f, threading.BrokenBarrierError)]
        exc = (real or failures or [TimeoutError("writer threads did not finish")])[0]
        raise TrialError(f"{store} writer thread failed on {target}: {exc!r}") from exc
    return sum(r[0] for r in results), sum(r[1] for r in results)


def _run_processes(
    store: str,
    target: str,
    writers: int,
    increments: int,
    yield_ms: float,
    log_dir: Path,
) -> tuple[int, int]:
    cmd = [sys.executable, "-m", "agentmem.trials.lost_update", "--writer", store]
    cmd += ["--target", target, "--increments", str(increments), "--yield-ms", str(yield_ms)]
    procs: list[subprocess.Popen] = []
    logs = [log_dir / f"writer-{i}.log" for i in range(writers)]
    env = child_env()
    watchdog = threading.Timer(_TIMEOUT_S, lambda: [kill_group(p) for p in procs])
    watchdog.daemon = True
    try:
        for log in logs:
            with open(log, "wb") as err:
                procs.append(
                    subprocess.Popen(
                        cmd,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=err,
                        start_new_session=True,
                        env=env,
                    )
                )
        watchdog.start()
        for p, log in zip(procs, logs, strict=True):
            assert p.stdout is not None
            if p.stdout.readline().strip() != b"ready":
                raise TrialError(
                    f"{store} writer process failed to start on {target}: "
                    f"{log.read_text(errors='replace').strip()[-500:]}"
                )
        for p in procs:  # release all writers together
            assert p.stdin is not None
            p.stdin.write(b"go\n")
            p.stdin.flush()
        ok = failed = 0
        for p, log in zip(procs, logs, strict=True):
            assert p.stdout is not None
            line = p.stdout.readline()
            try:
                res = json.loads(line)
            except ValueError:
                raise TrialError(
                    f"{store} writer process {p.pid} failed on {target}: "
                    f"{log.read_text(errors='replace').strip()[-500:]}"
                ) from None
            ok += res["ok"]
            failed += res["errors"]
            p.wait(timeout=_TIMEOUT_S)
        return ok, failed
    finally:
        watchdog.cancel()
        for p in procs:
            kill_group(p)
            for stream in (p.stdin, p.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()


def run_lost_update(
    store: str,
    mode: str,
    writers: int = 8,
    increments: int = 25,
    *,
    work_dir: str | Path,
    dsn: str | None = None,
    yield_ms: float = 1.0,
) -> dict[str, Any]:
    """Run one lost-update trial: ``writers`` x ``increments`` on one counter.

    Args:
        store: one of :data:`STORES` (see the module docstring for each mechanism).
        mode: ``"threads"`` or ``"processes"``.
        writers: concurrent writers (>= 2).
        increments: increments per writer (>= 1).
        work_dir: an existing, writable directory; the counter lives in
            ``work_dir/lost-update/<store>-<mode>/`` (emptied first). For postgres stores
            without ``dsn`` an embedded server is started in ``.../pgdata``, then stopped
            and its data directory deleted.
        dsn: URI of a running PostgreSQL server for the postgres stores (the table
            :data:`PG_TABLE` is (re)created there).
        yield_ms: sleep between read and write in the read-then-write stores (ms).

    Returns:
        ``{"store", "mode", "writers", "increments", "expected", "observed", "lost",
        "errors"}`` with ``expected = writers * increments``, ``observed`` the counter
        afterwards, ``lost = expected - observed``, ``errors`` the increments refused
        with a concurrency error (included in ``lost``).

    Raises:
        TrialError: naming the path when ``work_dir`` is missing or read-only, when a
            writer fails with an unexpected error, or when the counter cannot be read.
        ValueError: for an unknown store or mode, or too few writers/increments.
    """
    if store not in STORES:
        raise ValueError(f"unknown lost-update store {store!r}; known: {', '.join(STORES)}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    if writers < 2 or increments < 1:
        raise ValueError(f"need writers >= 2 and increments >= 1, got {writers}, {increments}")
    root = require_dir(work_dir, what="lost-update work directory")
    run_dir = root / "lost-update" / f"{store}-{mode}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)

    with contextlib.ExitStack() as stack:
        if _is_pg(store):
            if dsn is None:
                pgdata = run_dir / "pgdata"
                stack.callback(shutil.rmtree, pgdata, ignore_errors=True)
                dsn = stack.enter_context(EmbeddedPostgres(pgdata)).uri
            assert dsn is not None
            target = dsn
        else:
            target = str(run_dir / ("counter.json" if store == "json-file" else "counter.sqlite"))
        _reset(store, target)
        if mode == "threads":
            _, failed = _run_threads(store, target, writers, increments, yield_ms / 1000.0)
        else:
            _, failed = _run_processes(store, target, writers, increments, yield_ms, run_dir)
        observed = _observe(store, target)
    expected = writers * increments
    return {
        "store": store,
        "mode": mode,
        "writers": writers,
        "increments": increments,
        "expected": expected,
        "observed": observed,
        "lost": expected - observed,
        "errors": failed,
    }


def run_lost_update_matrix(
    writers: int,
    increments: int,
    modes: Sequence[str],
    work_dir: str | Path,
    stores: Sequence[str] = STORES,
    yield_ms: float = 1.0,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run :func:`run_lost_update` for every store x mode (stores outer, modes inner).

    One embedded PostgreSQL server (data directory ``work_dir/lost-update/pgdata``)
    serves all postgres runs; it is stopped and its data directory deleted before
    returning, also on error. The small counter files of the other stores are kept.

    Args:
        writers: concurrent writers per run.
        increments: increments per writer.
        modes: subset of :data:`MODES`.
        work_dir: an existing, writable directory.
        stores: subset of :data:`STORES`.
        yield_ms: sleep between read and write (ms).
        progress: print one line per run to stderr.

    Returns:
        One row per (store, mode) with the keys of :data:`FIELDS`.

    Raises:
        TrialError: as :func:`run_lost_update`.
        ValueError: for an unknown store or mode.
    """
    for s in stores:
        if s not in STORES:
            raise ValueError(f"unknown lost-update store {s!r}; known: {', '.join(STORES)}")
    for m in modes:
        if m not in MODES:
            raise ValueError(f"unknown mode {m!r}; known: {', '.join(MODES)}")
    root = require_dir(work_dir, what="lost-update work directory")
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        dsn = None
        if any(_is_pg(s) for s in stores):
            pgdata = root / "lost-update" / "pgdata"
            if pgdata.exists():
                shutil.rmtree(pgdata)
            pgdata.parent.mkdir(parents=True, exist_ok=True)
            stack.callback(shutil.rmtree, pgdata, ignore_errors=True)  # runs after the stop
            dsn = stack.enter_context(EmbeddedPostgres(pgdata)).uri
        for store in stores:
            for mode in modes:
                t0 = time.monotonic()
                row = run_lost_update(
                    store,
                    mode,
                    writers,
                    increments,
                    work_dir=root,
                    dsn=dsn if _is_pg(store) else None,
                    yield_ms=yield_ms,
                )
                rows.append(row)
                if progress:
                    print(
                        f"lost update {store} {mode}: expected {row['expected']}, observed "
                        f"{row['observed']}, lost {row['lost']} (errors {row['errors']}) "
                        f"[{time.monotonic() - t0:.1f} s]",
                        file=sys.stderr,
                        flush=True,
                    )
    return rows


if __name__ == "__main__":
    _writer_main()
