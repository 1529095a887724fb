"""The lost-update trial: ``writers`` writers race to increment one counter.

:func:`run_lost_update` runs one store in one mode (writer threads, or writer processes
in their own process groups, all killed and reaped before it returns);
:func:`run_lost_update_matrix` runs every store x mode on one embedded PostgreSQL
server. The trial is described in docs/experiments/lost-update.md.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmem.config import LostUpdateConfig
from agentmem.pg import EmbeddedServer
from agentmem.procs import child_env, kill_group
from agentmem.trials.common import TrialError, require_dir, trial_errors
from agentmem.trials.lost_update.writers import (
    STORES,
    Writer,
    is_pg,
    read_counter,
    reset_counter,
    run_writer,
)

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

_TIMEOUT_S = 300.0


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
            writer = Writer(store, target, yield_s)
            barrier.wait(timeout=_TIMEOUT_S)
            res = run_writer(writer, increments)
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


def lost_update_settings(settings: LostUpdateConfig | Mapping[str, Any]) -> LostUpdateConfig:
    """``settings`` as the config model, a mapping validated through it.

    Raises:
        pydantic.ValidationError: (a ValueError) naming a setting out of its bounds.
    """
    if isinstance(settings, LostUpdateConfig):
        return settings
    return LostUpdateConfig.model_validate(settings)


@trial_errors
def run_lost_update(
    store: str,
    mode: str,
    settings: LostUpdateConfig | Mapping[str, Any],
    *,
    work_dir: str | Path,
    dsn: str | None = None,
    yield_ms: float = 1.0,
) -> dict[str, Any]:
    """Run one lost-update trial: ``writers`` x ``increments`` on one counter.

    Args:
        store: one of :data:`STORES` (docs/experiments/lost-update.md for each mechanism).
        mode: ``"threads"`` or ``"processes"``.
        settings: config ``trials.lost_update`` (:class:`agentmem.config.LostUpdateConfig`;
            a mapping is validated through it, its defaults and bounds the only ones):
            ``writers`` concurrent writers, ``increments`` per writer (``modes`` unread).
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
        ValueError: for an unknown store or mode, or settings out of their bounds
            (pydantic's ValidationError).
    """
    if store not in STORES:
        raise ValueError(f"unknown lost-update store {store!r}; known: {', '.join(STORES)}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    cfg = lost_update_settings(settings)
    writers, increments = cfg.writers, cfg.increments
    root = require_dir(work_dir, what="lost-update work directory")
    run_dir = root / "lost-update" / f"{store}-{mode}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)

    with contextlib.ExitStack() as stack:
        if is_pg(store):
            if dsn is None:
                pgdata = run_dir / "pgdata"
                stack.callback(shutil.rmtree, pgdata, ignore_errors=True)
                dsn = stack.enter_context(EmbeddedServer(pgdata)).uri()
            assert dsn is not None
            target = dsn
        else:
            target = str(run_dir / ("counter.json" if store == "json-file" else "counter.sqlite"))
        reset_counter(store, target)
        if mode == "threads":
            _, failed = _run_threads(store, target, writers, increments, yield_ms / 1000.0)
        else:
            _, failed = _run_processes(store, target, writers, increments, yield_ms, run_dir)
        observed = read_counter(store, target)
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


@trial_errors
def run_lost_update_matrix(
    settings: LostUpdateConfig | Mapping[str, Any],
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
        settings: config ``trials.lost_update``: ``writers`` and ``increments`` of every
            run, and the ``modes`` run (:func:`run_lost_update`).
        work_dir: an existing, writable directory.
        stores: subset of :data:`STORES`.
        yield_ms: sleep between read and write (ms).
        progress: print one line per run to stderr.

    Returns:
        One row per (store, mode) with the keys of :data:`FIELDS`.

    Raises:
        TrialError: as :func:`run_lost_update`.
        ValueError: for an unknown store, or settings out of their bounds.
    """
    cfg = lost_update_settings(settings)
    modes = cfg.modes
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
        if any(is_pg(s) for s in stores):
            pgdata = root / "lost-update" / "pgdata"
            if pgdata.exists():
                shutil.rmtree(pgdata)
            pgdata.parent.mkdir(parents=True, exist_ok=True)
            stack.callback(shutil.rmtree, pgdata, ignore_errors=True)  # runs after the stop
            dsn = stack.enter_context(EmbeddedServer(pgdata)).uri()
        for store in stores:
            for mode in modes:
                t0 = time.monotonic()
                row = run_lost_update(
                    store,
                    mode,
                    cfg,
                    work_dir=root,
                    dsn=dsn if is_pg(store) else None,
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
