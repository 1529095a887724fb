"""The sqlite-graph arm's connections: one writer thread (read-write) and a read-only reader.

Every write is a job on the :class:`Writer`'s queue, run in a ``BEGIN IMMEDIATE``
transaction; queries read through the reader while the writer writes (WAL).
:class:`GraphStore` is the base of :class:`~agentmem.arms.graph.SqliteGraphArm` and of
its mixins.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ClassVar

import apsw

from agentmem.arms import base
from agentmem.arms.graph.confidence import decayed_confidence


class Writer:
    """A single writer thread owning the only read-write connection to the store.

    Jobs are callables ``fn(conn) -> result`` put on a FIFO queue; each runs in its own
    ``BEGIN IMMEDIATE`` transaction (or none, for pragmas such as checkpoints), and its
    result or exception lands in the :class:`~concurrent.futures.Future` returned by
    :meth:`submit`. Jobs queued before :meth:`close` still run.
    """

    def __init__(self, path: Path, *, create: bool, label: str) -> None:
        self.path = path
        self._label = label
        self._jobs: queue.Queue[tuple[Callable[[apsw.Connection], Any], Future, bool] | None]
        self._jobs = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._run, args=(create, ready), name=f"{label}-writer", daemon=True
        )
        self._thread.start()
        ready.result()

    def _connect(self, create: bool) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
        conn = apsw.Connection(str(self.path), flags=flags)
        try:
            conn.set_busy_timeout(10_000)
            if create:
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.create_scalar_function("agentmem_decay", decayed_confidence, 3, deterministic=True)
        except apsw.Error:
            conn.close()
            raise
        return conn

    def _run(self, create: bool, ready: Future[None]) -> None:
        try:
            conn = self._connect(create)
        except apsw.Error as exc:
            ready.set_exception(
                base.ArmError(f"{self._label}: cannot open SQLite store {self.path}: {exc}")
            )
            return
        ready.set_result(None)
        try:
            while True:
                job = self._jobs.get()
                if job is None:
                    break
                fn, fut, transaction = job
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    if transaction:
                        conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = fn(conn)
                    except BaseException:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
                    if transaction:
                        conn.execute("COMMIT")
                except Exception as exc:
                    fut.set_exception(exc)
                else:
                    fut.set_result(result)
        finally:
            conn.close()

    def submit(self, fn: Callable[[apsw.Connection], Any], *, transaction: bool = True) -> Future:
        """Queue ``fn(conn)`` for the writer thread and return its future.

        Raises:
            ArmError: when the writer has been closed.
        """
        fut: Future = Future()
        with self._lock:
            if self._closed:
                raise base.ArmError(f"{self._label}: writer for {self.path} is closed")
            self._jobs.put((fn, fut, transaction))
        return fut

    def call(self, fn: Callable[[apsw.Connection], Any], *, transaction: bool = True) -> Any:
        """Run ``fn(conn)`` on the writer thread and wait for its result.

        Raises:
            ArmError: wrapping an SQLite error (naming the store path), or when closed.
        """
        try:
            return self.submit(fn, transaction=transaction).result()
        except apsw.Error as exc:
            raise base.ArmError(f"{self._label}: write to {self.path} failed: {exc}") from exc

    def close(self) -> None:
        """Let queued jobs finish, then stop the thread and close the connection."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        self._thread.join()


class GraphStore(base.ArmBase):
    """Connections shared by :class:`~agentmem.arms.graph.SqliteGraphArm` and its mixins.

    The arm class sets the parameters (its constructor documents them) and the state
    below; subclassing :class:`~agentmem.arms.base.ArmBase` here gives the mixins'
    public methods the same lock and exception contract as the arm's own.
    """

    name: ClassVar[str]
    branch_k: int
    rrf_k: int
    expand_seeds: int
    graph_k: int
    hide_superseded: str
    _writer: Writer | None
    _reader: apsw.Connection | None
    _path: Path | None

    def _open_connections(self, path: Path, *, create: bool) -> None:
        """Start the writer (read-write, creating the file if asked), then the reader."""
        writer = Writer(path, create=create, label=self.name)
        try:
            reader = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        except apsw.Error as exc:
            writer.close()
            raise base.ArmError(f"{self.name}: cannot open {path} read-only: {exc}") from exc
        try:
            reader.set_busy_timeout(10_000)
            import sqlite_vec

            reader.enable_load_extension(True)
            reader.load_extension(sqlite_vec.loadable_path())
            reader.enable_load_extension(False)
        except apsw.Error as exc:
            reader.close()
            writer.close()
            raise base.ArmError(f"{self.name}: cannot load sqlite-vec for {path}: {exc}") from exc
        self._writer, self._reader, self._path = writer, reader, path

    def _w(self) -> Writer:
        if self._writer is None:
            raise base.ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._writer

    def _r(self) -> apsw.Connection:
        if self._reader is None:
            raise base.ArmError(f"{self.name}: store is not open (call build() or open() first)")
        return self._reader

    def close(self) -> None:
        """Close the reader, drain and stop the writer thread; safe to call twice."""
        reader, writer = self._reader, self._writer
        self._reader = self._writer = None
        try:
            if reader is not None:
                reader.close()
        finally:
            if writer is not None:
                writer.close()
