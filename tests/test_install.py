"""``make install``: uv installs the lock from pip's sources, torch's CPU build included.

``scripts/package_sources.py`` prints pip's configured sources as uv's arguments and
decides, by a pip dry run, whether they hold the pinned ``torch==X+cpu`` wheel; when they do
not, it adds PyTorch's CPU wheel index. The decision is tested without the network: pip is
pointed at local directories only (no configuration file, no index).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.paths import REPO

SCRIPT = REPO / "scripts" / "package_sources.py"
LOCK = REPO / "requirements.lock"
_spec = importlib.util.spec_from_file_location("package_sources", SCRIPT)
package_sources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(package_sources)
FALLBACK = (
    "--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match"
)


def _pin() -> tuple[str, str]:
    """(version, local label) of the lock's torch pin, e.g. ("2.13.0+cpu", "cpu")."""
    (version,) = re.findall(r"^torch==(\S+)$", LOCK.read_text(), re.MULTILINE)
    return version, version.partition("+")[2]


def _isolated_pip(find_links: Path) -> dict[str, str]:
    """An environment in which pip reads no configuration file and only ``find_links``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(find_links))
    return env


def _decide(lock: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(lock)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def _fake_wheel(directory: Path, version: str) -> Path:
    """A minimal pure-Python wheel named torch ``version`` (enough for pip to resolve it)."""
    dist = f"torch-{version}.dist-info"
    path = directory / f"torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr("torch/__init__.py", "")
        whl.writestr(
            f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
        )
        whl.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                     "Root-Is-Purelib: true\nTag: py3-none-any\n")  # fmt: skip
        whl.writestr(f"{dist}/RECORD", "")
    return path


def test_the_lock_pins_a_cpu_build_of_torch():
    assert _pin()[1] == "cpu"


def test_pytorch_cpu_index_when_pip_cannot_find_the_wheel(tmp_path):
    out = _decide(LOCK, _isolated_pip(tmp_path))  # an empty find-links directory, no index
    expected = f"--no-index --find-links {tmp_path} {FALLBACK}\n"
    assert (out.returncode, out.stdout) == (0, expected), out.stderr
    assert f"torch=={_pin()[0]} is not in pip's configured sources" in out.stderr


def test_no_fallback_when_a_configured_source_holds_the_wheel(tmp_path):
    _fake_wheel(tmp_path, _pin()[0])
    out = _decide(LOCK, _isolated_pip(tmp_path))
    assert (out.returncode, out.stdout, out.stderr) == (
        0,
        f"--no-index --find-links {tmp_path}\n",
        "",
    )


def test_no_fallback_for_a_lock_without_a_cpu_build(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("numpy==2.3.4\n    # via agentmem (pyproject.toml)\ntorch==2.13.0\n")
    out = _decide(lock, _isolated_pip(tmp_path / "nowhere"))  # pip is not even asked
    # the missing find-links directory is left out (pip ignores it, uv would stop)
    assert (out.returncode, out.stdout, out.stderr) == (0, "--no-index\n", "")


def _configured_find_links() -> list[Path]:
    """The find-links directories of pip's configuration and environment."""
    cfg = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                         capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    values = re.findall(r"^\S*find-links='([^']*)'$", cfg, re.MULTILINE)
    values.append(os.environ.get("PIP_FIND_LINKS", ""))
    return [Path(p) for v in values for p in v.split() if p and "://" not in p]


def test_no_fallback_with_this_machines_configuration():
    version = _pin()[0]
    if not any(d.glob(f"torch-{version}-*.whl") for d in _configured_find_links()):
        pytest.skip(f"no torch-{version} wheel in pip's configured find-links directories")
    out = _decide(LOCK, dict(os.environ))
    assert out.returncode == 0 and "download.pytorch.org" not in out.stdout, out.stderr


def test_pip_sources_become_uv_arguments(tmp_path):
    local = tmp_path / "simple"
    local.mkdir()
    config = "\n".join([
        "global.cert='/etc/ssl/certs/ca-certificates.crt'",
        ":env:.index-url='https://mirror.example/simple'",  # PIP_INDEX_URL wins
        "global.index-url='https://pypi.example/simple'",
        "install.index-url='https://install.example/simple'",
        "download.find-links='/not/for/install'",
        f"global.extra-index-url='file://{local} file:///no/such/index'",
        f":env:.find-links='{tmp_path} /no/such/dir https://wheels.example/'",
        "global.timeout='60'",
    ])  # fmt: skip
    assert package_sources.pip_sources(config) == [
        "--index-url", "https://mirror.example/simple",
        "--extra-index-url", f"file://{local}",
        "--find-links", str(tmp_path), "--find-links", "https://wheels.example/",
    ]  # fmt: skip
    assert package_sources.pip_sources(":env:.no-index='1'\n") == ["--no-index"]
    assert package_sources.pip_sources("") == []


def test_the_lock_and_the_dev_extra_pin_the_same_uv():
    lock_pin = re.findall(r"^uv==\S+$", LOCK.read_text(), re.MULTILINE)
    assert lock_pin and f'"{lock_pin[0]}"' in (REPO / "pyproject.toml").read_text()


def test_make_install_bootstraps_uv_and_passes_the_sources(tmp_path):
    """The install recipe (``make -n``: printed, not run): pip installs uv, uv the lock."""
    venv = tmp_path / "venv"  # no stamp there: make would install
    out = subprocess.run(["make", "-n", "-C", str(REPO), "install", f"VENV={venv}"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    recipe = re.sub(r"\\\n\s*", "", out.stdout)  # continuation lines joined
    lines = [line for line in recipe.splitlines() if " install " in line]
    uv = f"{venv}/bin/uv pip install --quiet --python {venv}/bin/python --no-deps"
    assert lines[0].endswith(
        f"set -x; {venv}/bin/python -m pip install --quiet --disable-pip-version-check $pin"
    )
    assert lines[1] == (
        f"sources=$({venv}/bin/python scripts/package_sources.py requirements.lock) || exit 1; "
        f"set -x; {uv} $sources -r requirements.lock"
    )
    assert lines[2] == f"{uv} --no-build-isolation -e ."
