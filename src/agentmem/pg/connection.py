"""Connections to a store's database, on the embedded server or on an external one.

**Embedded** (default): one server per store directory (data directory
``<store_dir>/pgdata``, Unix socket only), shared through :meth:`EmbeddedServer.acquire`.
**External**: when :data:`~agentmem.pg.dsn.ENV_DSN` (``AGENTMEM_PG_DSN``) is set at
connect time, every store lives on that server and the DSN's own database is used only to
``DROP``/``CREATE DATABASE``; the role needs ``CREATEDB``, and superuser rights or
``vector`` installed in ``template1``.

A store is one database (:func:`~agentmem.pg.dsn.database_name`), recreated by the job
that builds it (``connect_store(..., create=True)``: dropped if present, created with
``vector``, dropped again if creation fails half-way); it stays for later jobs until the
next build or :func:`drop_store`. ``<store_dir>/pgstore.json`` records the databases built
there and their mode. Connection errors name the server by its DSN, password redacted.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from agentmem.io import write_json
from agentmem.pg.dsn import ENV_DSN, Mode, database_name, external_dsn, redact_dsn, scrub
from agentmem.pg.errors import PgError
from agentmem.pg.extension import prepare_vector, require_vector
from agentmem.pg.server import EmbeddedServer

#: Name of the embedded server's data directory inside a store directory.
PGDATA_DIRNAME = "pgdata"
#: Marker file inside a store directory: ``{database: {"mode": ..., "server": ...}}``.
MARKER_NAME = "pgstore.json"
#: Seconds to wait for a TCP/socket connection before giving up.
CONNECT_TIMEOUT_S = 10


def connect(
    dsn: str,
    *,
    what: str = "PostgreSQL",
    retry_s: float = 0.0,
    shown: str | None = None,
    **kwargs: Any,
) -> psycopg.Connection:
    """Open a psycopg 3 connection, turning any failure into a :class:`PgError`.

    Args:
        dsn: libpq URI or key/value string.
        what: how to name the target in the error (e.g. ``"database agentmem_x"``).
        retry_s: keep retrying an :class:`psycopg.OperationalError` (e.g. "the database
            system is starting up") for this many seconds; ``0`` tries once.
        shown: how to write the server in the error (already redacted); default
            :func:`redact_dsn` of ``dsn``.
        **kwargs: passed to :func:`psycopg.connect` (``autocommit`` defaults to ``True``,
            ``prepare_threshold`` to ``None`` so every statement is planned with its
            actual parameters, as ``EXPLAIN`` shows it).

    Returns:
        The open connection.

    Raises:
        PgError: ``cannot connect to <what> at <redacted dsn>: <reason>``.
    """
    kwargs.setdefault("autocommit", True)
    kwargs.setdefault("prepare_threshold", None)
    kwargs.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    deadline = time.monotonic() + retry_s
    while True:
        try:
            return psycopg.connect(dsn, **kwargs)
        except psycopg.OperationalError as exc:
            if time.monotonic() < deadline and "does not exist" not in str(exc):
                time.sleep(0.2)
                continue
            error: psycopg.Error = exc
        except psycopg.Error as exc:
            error = exc
        reason = scrub(str(error).strip(), dsn)
        raise PgError(f"cannot connect to {what} at {shown or redact_dsn(dsn)}: {reason}") from None


@dataclass
class PgHandle:
    """An open store: a connection to its database plus whatever must be released with it.

    Attributes:
        conn: psycopg 3 connection (autocommit, ``vector`` types registered via
            :func:`pgvector.psycopg.register_vector`).
        database: the store's database name (:func:`database_name`).
        mode: ``"embedded"`` or ``"external"``.
        server: the server's DSN with the password redacted (for messages).
        store_dir: the store directory.
        pgdata: the embedded data directory (``None`` in external mode).
        postmaster_pid: pid of the embedded postmaster (``None`` in external mode).
    """

    conn: psycopg.Connection
    database: str
    mode: Mode
    server: str
    store_dir: Path
    pgdata: Path | None = None
    postmaster_pid: int | None = None
    _embedded: EmbeddedServer | None = field(default=None, repr=False)
    _closed: bool = field(default=False, repr=False)

    def close(self) -> None:
        """Close the connection and release the embedded server (stopping it if last).

        Idempotent; never raises for an already-dead connection or server.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self.conn.close()
        finally:
            if self._embedded is not None:
                self._embedded.release()
                self._embedded = None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    def __enter__(self) -> PgHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_marker(store_dir: Path) -> dict[str, Any]:
    """Return the store's marker dict (``{}`` when missing or unreadable)."""
    try:
        data = json.loads((store_dir / MARKER_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_marker(store_dir: Path, database: str, mode: Mode, server: str) -> None:
    """Record ``database`` (built in ``mode`` on ``server``) in the store's marker file."""
    data = _read_marker(store_dir)
    data[database] = {"mode": mode, "server": server}
    write_json(store_dir / MARKER_NAME, data)


def _create_database(
    admin_dsn: str, database: str, server: str, retry_s: float, what: str = "PostgreSQL server"
) -> None:
    """Check pgvector is available, then ``DROP DATABASE IF EXISTS`` + ``CREATE DATABASE``.

    The availability check (``pg_available_extensions``) runs before anything is created,
    so a server without pgvector is reported without leaving an empty database behind.

    Args:
        admin_dsn: DSN of the server's maintenance database (the external DSN as given, or
            the embedded server's URI).
        database: the store's database (:func:`database_name`).
        server: ``admin_dsn`` redacted, for messages.
        retry_s: see :func:`connect`.
        what: how to name the server in a connection error.

    Raises:
        PgError: naming the redacted server when it cannot be reached, ``vector`` is not
            available, or the statements fail (e.g. the role lacks ``CREATEDB``).
    """
    with connect(admin_dsn, what=what, retry_s=retry_s) as admin:
        try:
            require_vector(admin, server)
            ident = sql.Identifier(database)
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(ident))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise PgError(
                f"cannot create database {database} on {server}: "
                f"{scrub(str(exc).strip(), admin_dsn)} (the role in the DSN needs the "
                "CREATEDB privilege, and must own any earlier database of that name)"
            ) from None
        except psycopg.Error as exc:
            raise PgError(
                f"cannot create database {database} on {server}: "
                f"{scrub(str(exc).strip(), admin_dsn)}"
            ) from None


def _drop_database_quietly(admin_dsn: str, database: str) -> None:
    """Best-effort ``DROP DATABASE IF EXISTS`` (cleanup after a failed store creation)."""
    try:
        with connect(admin_dsn) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
            )
    except (PgError, psycopg.Error):
        pass


def drop_store(store_dir: Path, name: str) -> None:
    """Drop the external database of store ``name`` under ``store_dir`` (no-op if embedded).

    Embedded stores disappear with their directory; external ones would otherwise stay
    on the server (tests call this to clean up).

    Raises:
        PgError: when the external server cannot be reached.
    """
    dsn = external_dsn()
    if dsn is None:
        return
    database = database_name(name, Path(store_dir))
    with connect(dsn, what="PostgreSQL server") as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        )


def connect_store(store_dir: Path, name: str, *, create: bool) -> PgHandle:
    """Open (or, with ``create``, recreate) the PostgreSQL store ``name`` under ``store_dir``.

    Embedded mode starts or joins the server of ``store_dir/pgdata``; external mode
    (:data:`ENV_DSN` set) uses that server. The store's database is
    :func:`database_name` ``(name, store_dir)``. With ``create`` the store directory is
    made, the database is dropped if it exists and created empty with the ``vector``
    extension, and the marker file records it.

    Args:
        store_dir: the store directory (created with ``create``).
        name: the store owner's name, normally the arm name (one database per name).
        create: build a fresh, empty database instead of opening an existing one.

    Returns:
        A :class:`PgHandle`; close it (or use it as a context manager) to release the
        connection and stop the embedded server.

    Raises:
        PgError: naming the store directory or the redacted DSN when the store is missing,
            was built in the other mode, the server cannot be started or reached, or
            pgvector is unavailable.
    """
    store_dir = Path(store_dir)
    database = database_name(name, store_dir)
    dsn = external_dsn()
    mode: Mode = "external" if dsn else "embedded"
    if create:
        store_dir.mkdir(parents=True, exist_ok=True)
    else:
        marker = _read_marker(store_dir)
        if not store_dir.is_dir() or database not in marker:
            raise PgError(
                f"no PostgreSQL store {name!r} under {store_dir} "
                f"(no entry for database {database} in {store_dir / MARKER_NAME}); build it first"
            )
        built = marker[database].get("mode")
        if built != mode:
            hint = f"set {ENV_DSN}" if built == "external" else f"unset {ENV_DSN}"
            raise PgError(
                f"PostgreSQL store {name!r} under {store_dir} was built in {built} mode "
                f"(server {marker[database].get('server')}) but {ENV_DSN} selects {mode} "
                f"mode now: {hint} or rebuild"
            )

    embedded: EmbeddedServer | None = None
    pgdata: Path | None = None
    if dsn is None:
        pgdata = store_dir / PGDATA_DIRNAME
        embedded = EmbeddedServer.acquire(pgdata, create=create)
        admin_dsn = embedded.uri()
        store_dsn = embedded.uri(database)
    else:
        admin_dsn = dsn
        store_dsn = make_conninfo(dsn, dbname=database)
    server = redact_dsn(admin_dsn)
    retry_s = float(CONNECT_TIMEOUT_S) if embedded is not None else 0.0
    server_what = f"PostgreSQL server ({ENV_DSN})" if embedded is None else "PostgreSQL server"
    created = False
    try:
        if create:
            _create_database(admin_dsn, database, server, retry_s, what=server_what)
            created = True
        # named by the server DSN as configured (make_conninfo rewrites it to key=value)
        conn = connect(store_dsn, what=f"database {database}", retry_s=retry_s, shown=server)
        try:
            prepare_vector(conn, create=create, what=f"database {database} on {server}")
        except BaseException:
            conn.close()
            raise
        if create:
            _write_marker(store_dir, database, mode, server)
    except BaseException:
        if created:  # leave no half-made database (e.g. pgvector could not be installed)
            _drop_database_quietly(admin_dsn, database)
        if embedded is not None:
            embedded.release()
        raise
    return PgHandle(
        conn=conn,
        database=database,
        mode=mode,
        server=server,
        store_dir=store_dir,
        pgdata=pgdata.resolve() if pgdata is not None else None,
        postmaster_pid=embedded.pid if embedded is not None else None,
        _embedded=embedded,
    )


__all__ = [
    "CONNECT_TIMEOUT_S",
    "MARKER_NAME",
    "PGDATA_DIRNAME",
    "PgHandle",
    "connect",
    "connect_store",
    "drop_store",
]


def open_store(store_dir: Path, arm: str, *, create: bool, what: str = "store") -> PgHandle:
    """:func:`connect_store` for the arm ``arm``, its error naming the arm and the store.

    Raises:
        PgError: ``"<arm>: cannot create <what> in <store_dir>: <reason>"`` (``create``) or
            ``"<arm>: cannot open <what> in <store_dir>: <reason>"``.
    """
    try:
        return connect_store(store_dir, arm, create=create)
    except PgError as exc:
        verb = "create" if create else "open"
        raise PgError(f"{arm}: cannot {verb} {what} in {store_dir}: {exc}") from None
