"""The ``vector`` extension (pgvector) in a store's database: checked, installed, registered."""

from __future__ import annotations

import psycopg

from agentmem.pg.dsn import ENV_DSN
from agentmem.pg.errors import PgError


def require_vector(admin: psycopg.Connection, server: str) -> None:
    """Check that the server behind ``admin`` can install pgvector.

    Reads ``pg_available_extensions``, so a server without pgvector is reported before
    any database is created for it.

    Args:
        admin: a connection to the server's maintenance database.
        server: the server's DSN, redacted, for the message.

    Raises:
        PgError: when ``vector`` is not available on the server.
        psycopg.Error: when the catalog query fails.
    """
    row = admin.execute(
        "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if row is None:
        raise PgError(
            f"the PostgreSQL server at {server} has no 'vector' extension available: "
            "install pgvector >= 0.8 on it (https://github.com/pgvector/pgvector) "
            f"or unset {ENV_DSN} to use the embedded server"
        )


def prepare_vector(conn: psycopg.Connection, *, create: bool, what: str) -> None:
    """Install (with ``create``) and register the ``vector`` type on ``conn``.

    pgvector is not a *trusted* extension (its control file has no ``trusted = true``),
    so ``CREATE EXTENSION vector`` needs a superuser unless the database already has it,
    e.g. because an administrator installed it in ``template1``, from which every new
    database is copied; then ``CREATE EXTENSION IF NOT EXISTS`` is a no-op for any role.
    The type is registered with :func:`pgvector.psycopg.register_vector`.

    Args:
        conn: a connection to the store's database.
        create: run ``CREATE EXTENSION IF NOT EXISTS vector`` first.
        what: how to name the database in an error (e.g. ``"database x on <server>"``).

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
