"""Naming PostgreSQL servers and store databases: the external DSN, redaction, database names."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Literal

import psycopg

#: Environment variable naming an external PostgreSQL server (libpq URI or key=value DSN).
ENV_DSN = "AGENTMEM_PG_DSN"

Mode = Literal["embedded", "external"]

_URI_RE = re.compile(r"^(?P<scheme>postgres(?:ql)?://)(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_KV_PASSWORD_RE = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_URI_QUERY_PASSWORD_RE = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)
_IDENT_BAD = re.compile(r"[^a-z0-9_]+")


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


def scrub(message: str, dsn: str) -> str:
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


def _sanitise(part: str) -> str:
    """Lower-case ``part`` and map every run of other characters to ``_``."""
    return _IDENT_BAD.sub("_", part.lower()).strip("_")


def database_name(name: str, store_dir: Path) -> str:
    """Return the database holding store ``name`` (an arm name) under ``store_dir``.

    Form: ``agentmem_<name>_<label>_<hash>``, sanitised to ``[a-z0-9_]`` and at most 63
    bytes (PostgreSQL's identifier limit). ``<label>`` is the store directory's last two
    path components minus any equal to ``name`` (so ``results/stores/m/my-arm`` gives
    ``agentmem_my_arm_m_…``); ``<hash>`` is 8 hex digits of the sha256 of the resolved
    path, so two store directories never share a database on one external server.

    Args:
        name: the arm (or other store owner) name, e.g. ``"my-arm"``.
        store_dir: the store directory.

    Returns:
        A valid unquoted PostgreSQL identifier.
    """
    p = Path(store_dir).resolve()
    label_parts = [c for c in (p.parent.name, p.name) if c and c != name]
    digest = hashlib.sha256(str(p).encode()).hexdigest()[:8]
    stem = "_".join(x for x in ("agentmem", _sanitise(name), *map(_sanitise, label_parts)) if x)
    return f"{stem[: 63 - 9]}_{digest}"
