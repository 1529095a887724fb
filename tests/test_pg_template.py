"""New embedded stores copied from one template cluster (agentmem.pg.template).

Real servers on the copies: a store seeded from the template starts, answers as a fresh
``initdb`` cluster would (UTF-8, superuser ``postgres``, trust authentication), and keeps
its own data apart from a second copy; the template is initialised once, holds no server
state, and nothing is copied without the environment variable.
"""

from __future__ import annotations

import inspect
import os
import threading
from pathlib import Path

import pytest

from agentmem import pg
from agentmem.pg.postmaster import server_user
from agentmem.pg.template import INITDB_ARGS, ensure_template, seed_data_dir, template_path
from agentmem.procs import PG_TEMPLATE_ENV


def test_pgserver_still_runs_initdb_with_the_templates_arguments() -> None:
    """The template is initialised with pgserver's own initdb arguments (a pinned release)."""
    from pgserver.postgres_server import PostgresServer

    source = inspect.getsource(PostgresServer.ensure_pgdata_inited)
    call = source[source.index("initdb(") :]
    for arg in INITDB_ARGS[:-2]:
        assert repr(arg) in call
    assert "'-U', self.postgres_user" in call
    assert INITDB_ARGS[-1] == "postgres"


def test_stores_start_from_the_template_and_stay_apart(tmp_path: Path, monkeypatch) -> None:
    templates = tmp_path / "templates"
    monkeypatch.setenv(PG_TEMPLATE_ENV, str(templates))
    a, b = tmp_path / "a", tmp_path / "b"
    with pg.connect_store(a, "tpl", create=True) as h:
        template = template_path(templates.resolve())
        assert (template / "PG_VERSION").is_file()
        assert not (template / "postmaster.pid").exists()  # never started
        first_inode = (template / "PG_VERSION").stat().st_ino
        row = h.conn.execute(
            "SELECT current_setting('server_encoding'), current_user, "
            "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
        ).fetchone()
        assert row == ("UTF8", "postgres", True)
        h.conn.execute("CREATE TABLE t (x int)")
        h.conn.execute("INSERT INTO t VALUES (1), (2)")
        h.conn.commit()
    with pg.connect_store(b, "tpl", create=True) as h:
        # a second copy: the template is reused and a's table is not in it
        assert (template / "PG_VERSION").stat().st_ino == first_inode
        assert h.conn.execute("SELECT to_regclass('public.t')").fetchone() == (None,)
    with pg.connect_store(a, "tpl", create=False) as h:
        assert h.conn.execute("SELECT sum(x) FROM t").fetchone() == (3,)
    pgdata = a / pg.PGDATA_DIRNAME
    assert (pgdata.stat().st_mode & 0o777) == 0o700
    if server_user() is not None:  # as root the copy belongs to the server's user
        import pwd

        uid = pwd.getpwnam(server_user()).pw_uid
        copied = [pgdata / p.relative_to(template) for p in template.rglob("*")]
        assert len(copied) > 500  # a cluster's catalog files
        assert {p.lstat().st_uid for p in [pgdata, *copied] if p.exists()} == {uid}
    assert sorted(p.name for p in templates.iterdir()) == [template.name]  # no temporaries left


def test_without_the_variable_nothing_is_copied(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(PG_TEMPLATE_ENV, raising=False)
    assert seed_data_dir(tmp_path / "pgdata") is False
    assert not (tmp_path / "pgdata").exists()
    monkeypatch.setenv(PG_TEMPLATE_ENV, str(tmp_path / "templates"))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("x")
    assert seed_data_dir(busy) is False  # a directory with files is never overwritten
    assert sorted(p.name for p in busy.iterdir()) == ["keep.txt"]


def test_racing_processes_get_one_template(tmp_path: Path) -> None:
    """Threads stand in for processes here: each initialises its own directory and renames
    it into place; one rename wins and every caller gets the same, complete template."""
    root = tmp_path / "templates"
    got: list[Path] = []
    errors: list[BaseException] = []

    def make() -> None:
        try:
            got.append(ensure_template(root))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(got)) == 1 and (got[0] / "PG_VERSION").is_file()
    assert [p.name for p in root.iterdir()] == [got[0].name]


def test_an_unwritable_template_directory_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(PG_TEMPLATE_ENV, str(blocker))
    with pytest.raises(pg.PgError, match="template cluster"):
        seed_data_dir(tmp_path / "pgdata")
    assert not (tmp_path / "pgdata").exists()
    assert os.listdir(tmp_path) == ["file"]


def test_the_server_account_is_created_or_found_after_a_lost_race(monkeypatch) -> None:
    """As root the template needs the OS account pgserver runs as, which a fresh machine
    lacks: it is created (pgserver's useradd), and a job whose useradd lost a race to
    another job's finds the account; one that cannot be made is a PgError naming it."""
    import subprocess

    import pgserver.utils

    from agentmem.pg.template import _server_account

    def lost(name: str) -> None:
        raise subprocess.CalledProcessError(9, ["useradd", name], stderr="already exists")

    monkeypatch.setattr(pgserver.utils, "ensure_user_exists", lost)
    assert _server_account("root").pw_uid == 0  # the winner's account is found
    with pytest.raises(pg.PgError, match="'no-such-agentmem-user'.*already exists"):
        _server_account("no-such-agentmem-user")


@pytest.mark.skipif(server_user() is None, reason="the server runs as its own user only as root")
def test_a_missing_server_account_is_created_and_owns_the_template(tmp_path: Path) -> None:
    """As root, a missing account is created by the real useradd (a throwaway name, removed
    after), and the template belongs to the server's account."""
    import pwd
    import subprocess
    import uuid

    from agentmem.pg.template import _server_account

    name = f"am{uuid.uuid4().hex[:10]}"
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    try:
        entry = _server_account(name)
        assert entry.pw_name == name
        assert pwd.getpwnam(name).pw_uid == entry.pw_uid
        assert _server_account(name).pw_uid == entry.pw_uid  # found the second time
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)
    template = ensure_template(tmp_path)
    assert template.stat().st_uid == pwd.getpwnam(server_user()).pw_uid
