"""Running the real Snakemake workflow from a test, in a working directory of its own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .paths import REPO

#: the venv's snakemake, beside the interpreter running the tests
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


def copy_workflow_config(wd: Path) -> Path:
    """Copy the repository's config/ and profiles/ into ``wd`` (created if missing); ``wd``.

    A config's relative ``external.<name>.path`` is relative to the working directory (the
    repository, run as documented); in the copies, one that exists from the repository is
    made absolute (the smoke config's LoCoMo file and tiny dataset), a missing one is kept.
    """
    for d in ("config", "profiles"):
        shutil.copytree(REPO / d, wd / d)
    for f in (wd / "config").glob("*.yaml"):
        data = yaml.safe_load(f.read_text()) or {}
        found = {
            name: REPO / entry["path"]
            for name, entry in (data.get("external") or {}).items()
            if "path" in entry
            and not Path(entry["path"]).is_absolute()
            and (REPO / entry["path"]).exists()
        }
        for name, path in found.items():
            data["external"][name]["path"] = str(path.resolve())
        if found:
            f.write_text(yaml.safe_dump(data, sort_keys=False))
    return wd


def run_snakemake(
    wd: Path, *args: str, config: str = "config/smoke.yaml"
) -> subprocess.CompletedProcess:
    """The workflow in ``wd`` on 2 cores with ``config`` (15-minute timeout), output captured."""
    cmd = [
        SNAKEMAKE,
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(wd),
        "--cores",
        "2",
        f"--configfile={config}",
        *args,
    ]
    return subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=900)
