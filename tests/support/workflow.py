"""Running the real Snakemake workflow from a test, in a working directory of its own."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .paths import REPO

#: the venv's snakemake, beside the interpreter running the tests
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


#: an ONNX export of the encoder made once for the whole test session (``make test`` sets
#: it): each working directory starts with it, so its workflow runs no export_encoder job
ONNX_ENV = "AGENTMEM_TEST_ONNX"


def copy_workflow_config(wd: Path, encoder: bool = False) -> Path:
    """Copy the repository's config/ and profiles/ into ``wd`` (created if missing); ``wd``.

    A config's relative ``external.<name>.path`` and ``robustness.study_corpus`` are
    relative to the working directory (the repository, run as documented); in the copies,
    one that exists from the repository is made absolute (the smoke config's LoCoMo file,
    tiny dataset and tiny study corpus), a missing one is kept.
    With ``encoder`` (for a test that runs the workflow) and ``$AGENTMEM_TEST_ONNX`` set,
    that export is copied to ``results/cache/encoder/`` (where export_encoder writes it; a
    rule without inputs is not rerun for an output that exists); without, ``wd`` has no
    ``results/``.

    Raises:
        FileNotFoundError: when ``$AGENTMEM_TEST_ONNX`` is set but names no file.
    """
    for d in ("config", "profiles"):
        shutil.copytree(REPO / d, wd / d)
    onnx = os.environ.get(ONNX_ENV)
    if encoder and onnx:
        if not Path(onnx).is_file():
            raise FileNotFoundError(f"${ONNX_ENV} is {onnx!r}, which is not a file")
        (wd / "results/cache/encoder").mkdir(parents=True, exist_ok=True)
        shutil.copy2(onnx, wd / "results/cache/encoder" / Path(onnx).name)
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
        rob = data.get("robustness") or {}
        study = rob.get("study_corpus")
        moved = bool(study) and not Path(study).is_absolute() and (REPO / study).exists()
        if moved:
            rob["study_corpus"] = str((REPO / study).resolve())
        if found or moved:
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


def planned_jobs(listing: str) -> list[dict]:
    """Every job of a dry run's listing (``snakemake -n`` stdout), in order.

    Each is ``{"rule", "wildcards" ("" if none), "threads" ("1" if not listed),
    "priority" (a float, 0 if not listed), "resources" ({name: value as printed})}``.
    """
    jobs: list[dict] = []
    for line in listing.splitlines():
        if m := re.match(r"^(?:local)?rule (\w+):", line):
            jobs.append(
                {"rule": m.group(1), "wildcards": "", "threads": "1", "priority": 0}
                | {"resources": {}}
            )
        elif jobs and (m := re.match(r"^\s+(wildcards|threads|priority|resources): (.*)$", line)):
            key, value = m.groups()
            if key == "priority":
                jobs[-1][key] = float(value)
            elif key == "resources":
                pairs = (kv.split("=", 1) for kv in value.split(", ") if "=" in kv)
                jobs[-1][key] = dict(pairs)
            else:
                jobs[-1][key] = value
    return jobs
