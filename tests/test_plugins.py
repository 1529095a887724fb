"""Plug-in arms: packages installed for real (pip, offline) that declare ``agentmem.arms``.

The example package (``tests/plugin_example``) goes through ``agentmem arms``, the
conformance suite (``agentmem check-arm``) and the smoke workflow; broken packages (a name
clash, an import error, missing methods) each stop the workflow before any job.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from support.paths import REPO
from support.workflow import copy_workflow_config

from agentmem.arms import BUILTIN_ARMS
from agentmem.arms.base import ArmBase, Capabilities
from agentmem.arms.registry import contract_problems, discover, format_problems

BIN = Path(sys.executable).parent
EXAMPLE = REPO / "tests" / "plugin_example"
PIP = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
       "--no-index", "--disable-pip-version-check"]  # fmt: skip


def _install(src: Path, target: Path) -> Path:
    """``pip install`` the package at ``src`` into ``target`` (built from a copy of ``src``)."""
    build = target.parent / f"{target.name}-src"
    shutil.copytree(src, build)
    proc = subprocess.run([*PIP, "--target", str(target), str(build)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return target


def _package(root: Path, dist: str, module: str, code: str, entry_points: dict[str, str]) -> Path:
    """Write a one-module package declaring ``entry_points`` (arm name -> ``module:Class``)."""
    root.mkdir(parents=True)
    eps = "\n".join(f'{name} = "{target}"' for name, target in entry_points.items())
    (root / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{dist}"
        version = "1.0"
        [project.entry-points."agentmem.arms"]
        {eps}
        [tool.setuptools]
        py-modules = ["{module}"]
        """))  # fmt: skip
    (root / f"{module}.py").write_text(textwrap.dedent(code))
    return root


#: broken packages: kind -> (distribution, module, code, entry points, expected stderr lines)
BROKEN = {
    "clash": (
        "clash-arm", "clash_arm",
        """\
        from agentmem_example_arm import ExampleBagArm

        class ClashArm(ExampleBagArm):
            name = "sqlite-fts"
        """,
        {"sqlite-fts": "clash_arm:ClashArm"},
        ["plug-in arm 'sqlite-fts' (package clash-arm 1.0, entry point clash_arm:ClashArm): "
         "the name clashes with the built-in arm 'sqlite-fts'; rename it"],
    ),
    "import": (
        "needs-gpu-arm", "needs_gpu_arm",
        "import agentmem_no_such_dependency\n",
        {"needs-gpu": "needs_gpu_arm:GpuArm"},
        ["plug-in arm 'needs-gpu' (package needs-gpu-arm 1.0, entry point needs_gpu_arm:GpuArm): "
         "import failed: ModuleNotFoundError: No module named 'agentmem_no_such_dependency'"],
    ),
    "missing": (
        "half-arm", "half_arm",
        """\
        from agentmem.arms.base import ArmBase, Capabilities

        class HalfArm(ArmBase):
            name = "half"
            family = "example"
            capabilities = Capabilities(False, False, False, "none", "scan", False)
            prefix_stable = "yes"

            def build(self, corpus, vectors, store_dir): ...
            def open(self, store_dir): ...
            def query(self, q, k): ...
            def explain(self, q, k=10): ...
            def storage(self): ...
            def close(self): ...
        """,
        {"half": "half_arm:HalfArm"},
        ["plug-in arm 'half' (package half-arm 1.0, entry point half_arm:HalfArm):",
         "  - class attribute 'prefix_stable' is 'yes', not a bool",
         "  - method remember() is missing",
         "  - method fetch() is missing"],
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def example_site(tmp_path_factory) -> Path:
    """A directory the example package is pip-installed into (add it to PYTHONPATH)."""
    return _install(EXAMPLE, tmp_path_factory.mktemp("plugins") / "example-site")


@pytest.fixture(scope="module")
def broken_sites(tmp_path_factory) -> dict[str, Path]:
    """kind -> a directory one broken package of :data:`BROKEN` is pip-installed into."""
    root = tmp_path_factory.mktemp("broken")
    sites = {}
    for kind, (dist, module, code, eps, _) in BROKEN.items():
        src = _package(root / f"{kind}-pkg", dist, module, code, eps)
        sites[kind] = _install(src, root / f"{kind}-site")
    return sites


def _env(*paths: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return env


def _agentmem(env: dict[str, str], *args: str, timeout: int = 120):
    return subprocess.run([str(BIN / "agentmem"), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)  # fmt: skip


# ----------------------------------------------------------------- the contract check
def test_builtin_arms_satisfy_the_contract():
    assert {name: contract_problems(cls, name) for name, cls in BUILTIN_ARMS.items()} == {
        name: [] for name in BUILTIN_ARMS
    }


def test_contract_problems_name_what_is_missing():
    class Partial(ArmBase):
        name = "partial"
        family = ""
        capabilities = Capabilities(True, False, False, "none", "scan", False, "sometimes")
        prefix_stable = True

        def __init__(self, path):
            self.path = path

        def build(self, corpus, vectors): ...
        def open(self, store_dir): ...
        def query(self, q, k): ...
        def explain(self, q): ...
        def remember(self, memories, vectors): ...
        def fetch(self, memory_ids): ...
        def close(self): ...

    assert contract_problems(Partial, "other") == [
        "class attribute 'family' is '', not a non-empty str",
        "capabilities.filter_stage is 'sometimes', not one of ('none', 'post-filter', 'in-search')",
        "class attribute 'name' is 'partial', but the entry point is named 'other'",
        "method build(self, corpus, vectors) cannot be called as build(corpus, vectors, "
        "store_dir) (the protocol's arguments)",
        "method explain(self, q) cannot be called as explain(q, k) (the protocol's arguments)",
        "method storage() is missing",
        "the constructor Partial(path) needs arguments; give every parameter a default (the "
        "pipeline calls it without any)",
    ]
    assert contract_problems(len, "x") == [
        "the entry point names a builtin_function_or_method, not an arm class"
    ]


def test_discover_registers_the_example_and_refuses_broken_packages(
    example_site, broken_sites, monkeypatch
):
    for site in (example_site, *broken_sites.values()):
        monkeypatch.syspath_prepend(str(site))
    found = discover(BUILTIN_ARMS)
    assert list(found.arms) == ["example-bag"]
    cls = found.arms["example-bag"]
    assert Path(sys.modules[cls.__module__].__file__).is_relative_to(example_site)
    assert found.packages == {"example-bag": "agentmem-example-arm 0.1.0"}
    assert sorted(p.arm for p in found.problems) == ["half", "needs-gpu", "sqlite-fts"]
    for p in found.problems:
        kind = {"half": "missing", "needs-gpu": "import", "sqlite-fts": "clash"}[p.arm]
        assert p.message().splitlines() == BROKEN[kind][4]
    assert format_problems(found.problems[:1]).splitlines()[0] == (
        "agentmem: broken plug-in arms (entry-point group 'agentmem.arms'):"
    )


def test_two_packages_claiming_one_name_are_both_refused(example_site, tmp_path, monkeypatch):
    code = "from agentmem_example_arm import ExampleBagArm as Twin\n"
    for dist in ("twin-a", "twin-b"):
        mod = dist.replace("-", "_")
        src = _package(tmp_path / dist, dist, mod, code, {"example-bag": f"{mod}:Twin"})
        monkeypatch.syspath_prepend(str(_install(src, tmp_path / f"{dist}-site")))
    monkeypatch.syspath_prepend(str(example_site))
    found = discover(BUILTIN_ARMS)
    assert found.arms == {}
    assert sorted((p.package, p.problems[0]) for p in found.problems) == [
        ("agentmem-example-arm 0.1.0",
         "the name is also declared by package twin-a 1.0, twin-b 1.0; rename one"),
        ("twin-a 1.0",
         "the name is also declared by package agentmem-example-arm 0.1.0, twin-b 1.0; rename one"),
        ("twin-b 1.0",
         "the name is also declared by package agentmem-example-arm 0.1.0, twin-a 1.0; rename one"),
    ]  # fmt: skip


# --------------------------------------------------------------------- the command
def test_agentmem_arms_lists_the_plugin_with_its_package(example_site):
    out = _agentmem(_env(example_site), "arms")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines()[1:]}
    assert rows["example-bag"] == ["example-bag", "example", "brute-force", "none",
                                   "in-search", "-", "agentmem-example-arm", "0.1.0"]  # fmt: skip
    assert rows["sqlite-fts"][-1] == "built-in"
    from importlib import metadata

    chroma = " ".join(rows["chroma"][6:])  # a product arm: the product's installed version
    assert chroma == f"built-in (chromadb {metadata.version('chromadb')})"
    assert set(rows) == {*BUILTIN_ARMS, "example-bag"}


def test_agentmem_arms_names_broken_plugins(example_site, broken_sites):
    out = _agentmem(_env(example_site, broken_sites["missing"]), "arms")
    assert out.returncode == 1
    assert "example-bag" in out.stdout and "half" not in out.stdout
    assert out.stderr.splitlines() == [
        "agentmem: not registered: " + BROKEN["missing"][4][0],
        *BROKEN["missing"][4][1:],
    ]


def test_check_arm_runs_the_conformance_suite_on_the_plugin_alone(example_site):
    out = _agentmem(_env(example_site), "check-arm", "example-bag", "--", "-v",
                    "-p", "no:cacheprovider", timeout=900)  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    results = re.findall(r"^tests/test_conformance\.py::(\w+)(?:\[([^\]]+)\])? (\w+)",
                         out.stdout, re.MULTILINE)  # fmt: skip
    params = {arm for _, arm, _ in results if arm}
    assert params == {"example-bag"}  # every arm-parametrised test, on this arm only
    outcome = {test: status for test, _, status in results}
    assert outcome["test_remember_then_query_finds_it_and_fetch_returns_it"] == "PASSED"
    assert outcome["test_correction_by_remember_hides_the_old_memory"] == "PASSED"
    assert outcome["test_bench_hooks_give_the_query_answer"] == "SKIPPED"  # hooks are optional
    assert "FAILED" not in outcome.values() and "ERROR" not in outcome.values()


def test_check_arm_tests_the_installed_arm_from_its_source_tree(example_site, tmp_path):
    """A working directory holding a folder named like the plug-in's module (the package's
    own source tree) does not shadow the installed package in the suite's process."""
    shadow = tmp_path / "agentmem_example_arm"
    shadow.mkdir()
    (shadow / "__init__.py").write_text('"""Not the installed module: no arm class here."""\n')
    out = subprocess.run(
        [str(BIN / "agentmem"), "check-arm", "example-bag", "--", "-p", "no:cacheprovider",
         "-k", "test_open_missing_store_names_path"],
        capture_output=True, text=True, env=_env(example_site), cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "has no attribute" not in out.stdout + out.stderr
    assert re.search(r"^1 passed, \d+ deselected", out.stdout.splitlines()[-1].strip("= "))


def test_check_arm_refuses_unknown_and_broken_arms(broken_sites):
    out = _agentmem(_env(), "check-arm", "no-such")
    assert out.returncode == 2 and "unknown arm 'no-such'" in out.stderr
    out = _agentmem(_env(broken_sites["import"]), "check-arm", "needs-gpu")
    assert out.returncode == 1
    assert out.stderr.splitlines() == ["agentmem: " + BROKEN["import"][4][0]]


# -------------------------------------------------------------------- the workflow
def _workdir(tmp: Path, arms: list[str], encoder: bool = True) -> Path:
    copy_workflow_config(tmp, encoder=encoder)  # encoder=False: no results/ before a run
    (tmp / "config" / "plugin.yaml").write_text(f"arms: {json.dumps(arms)}\n")
    return tmp


def _snakemake(workdir: Path, env: dict[str, str], *targets: str):
    cmd = [
        str(BIN / "snakemake"),
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        "2",
        *targets,
        "--configfile",
        "config/smoke.yaml",
        "config/plugin.yaml",
    ]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=env,
                          timeout=900)  # fmt: skip


def test_plugin_runs_through_the_smoke_workflow(example_site, tmp_path):
    wd = _workdir(tmp_path, ["example-bag"])
    proc = _snakemake(wd, _env(example_site), "results/tables/by_class.csv")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    t = pl.read_csv(wd / "results/tables/by_class.csv")
    assert t["arm"].unique().to_list() == ["example-bag"]
    assert t.height == 9  # eight query classes and "all"
    by = {r["query_class"]: r for r in t.iter_rows(named=True)}
    assert by["semantic"]["ndcg_at_10"] == 1.0  # exact cosine finds every paraphrase
    assert by["aggregate"]["exact_count_rate"] == 0.0  # it declares no aggregate
    build = json.loads((wd / "results/builds/xs/example-bag.json").read_text())
    assert (build["family"], build["storage_source"]) == ("example", "file sizes")
    assert build["storage_counts"] == {"memories": build["memories"]}
    assert build["storage_objects"]["bag.json"] == build["storage_bytes"] > 0


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_broken_plugin_stops_the_workflow_before_any_job(kind, example_site, broken_sites,
                                                         tmp_path):  # fmt: skip
    wd = _workdir(tmp_path, ["example-bag"], encoder=False)
    env = _env(example_site, broken_sites[kind])
    proc = _snakemake(wd, env, "results/tables/by_class.csv")
    assert proc.returncode == 1
    err = proc.stderr.splitlines()
    start = err.index("agentmem: broken plug-in arms (entry-point group 'agentmem.arms'):")
    assert err[start + 1 : start + 1 + len(BROKEN[kind][4])] == [
        "  " + line for line in BROKEN[kind][4]
    ]
    assert not (wd / "results").exists()  # no job ran
