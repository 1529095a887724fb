"""Running the real Snakemake workflow from a test, in a working directory of its own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from .paths import REPO

#: the venv's snakemake, beside the interpreter running the tests
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


def copy_workflow_config(wd: Path) -> Path:
    """Copy the repository's config/ and profiles/ into ``wd`` (created if missing); ``wd``."""
    for d in ("config", "profiles"):
        shutil.copytree(REPO / d, wd / d)
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
