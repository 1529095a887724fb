"""Print the package sources ``make install`` passes to uv, as uv's arguments.

uv installs the lock; it does not read pip's configuration. This prints pip's configured
sources (``pip config list``: configuration files and ``PIP_*`` variables) as uv's
arguments: ``--index-url``, ``--extra-index-url``, ``--find-links``, ``--no-index``; a local
source that does not exist is left out (pip ignores it with a warning, uv would stop).
With more than one index, ``--index-strategy unsafe-best-match`` makes uv pick a version
across all of them, as pip does.

The lock pins torch's CPU build (``torch==X+cpu``), which PyPI does not carry. When pip, as
configured, does not find that wheel (a pip dry run of the pin alone: no dependencies,
nothing installed), PyTorch's CPU wheel index is added, with a note on stderr. A lock
without such a pin needs no probe.

Usage: python scripts/package_sources.py requirements.lock
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

#: PyTorch's index of CPU-only wheels
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
_PIN = re.compile(r"^(torch==\S+\+cpu)\s*$", re.MULTILINE)
#: pip's option (``pip config list`` key, section stripped) -> uv's flag; lists are split
_FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
          "find-links": "--find-links"}  # fmt: skip
_ENTRY = re.compile(r"^([^.\s]*)\.([a-z-]+)=(.*)$")
#: the sections of ``pip config list`` that ``pip install`` reads, lowest precedence first
_SECTIONS = ("global", "install", ":env:")


def cpu_torch_pin(lock_text: str) -> str | None:
    """The lock's ``torch==X+cpu`` requirement, or ``None`` when it pins no CPU build."""
    m = _PIN.search(lock_text)
    return m[1] if m else None


def pip_finds(requirement: str) -> bool:
    """Whether pip, as configured, finds a distribution for ``requirement`` (a dry run)."""
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
           "--quiet", "--disable-pip-version-check", requirement]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True).returncode == 0


def _exists(source: str) -> bool:
    """False for a local path or ``file:`` URL that is not there; True for anything remote."""
    url = urlparse(source)
    if url.scheme == "file":
        return Path(unquote(url.path)).exists()
    return bool(url.scheme and url.netloc) or Path(source).exists()


def pip_sources(config_list: str) -> list[str]:
    """uv's arguments for the sources in ``config_list`` (the output of ``pip config list``).

    An option set in several sections is taken as ``pip install`` takes it: a ``PIP_*``
    variable (``:env:``) over the ``install`` section over ``global``; other sections
    (``download``, ``wheel``) are not ``pip install``'s.
    """
    values: dict[str, tuple[int, str]] = {}
    for line in config_list.splitlines():
        m = _ENTRY.match(line.strip())
        if m and m[1] in _SECTIONS:
            rank = _SECTIONS.index(m[1])
            if rank >= values.get(m[2], (-1, ""))[0]:
                values[m[2]] = (rank, m[3].strip("'\""))
    args = []
    if values.get("no-index", (0, ""))[1].lower() in ("1", "true", "yes", "on"):
        args.append("--no-index")
    for option, flag in _FLAGS.items():
        for source in values.get(option, (0, ""))[1].split():
            if _exists(source):
                args += [flag, source]
    return args


def uv_args(lock: Path) -> list[str]:
    """The arguments ``uv pip install -r lock`` needs: pip's sources, and torch's if lacking."""
    config = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    args = pip_sources(config)
    pin = cpu_torch_pin(lock.read_text())
    if pin is not None and not pip_finds(pin):
        print(f"{pin} is not in pip's configured sources; adding PyTorch's CPU index {CPU_INDEX}",
              file=sys.stderr)  # fmt: skip
        args += ["--extra-index-url", CPU_INDEX]
    if "--extra-index-url" in args:
        args += ["--index-strategy", "unsafe-best-match"]
    return args


def main(argv: list[str]) -> int:
    """Print :func:`uv_args` of the lock ``argv[0]`` on one line (empty: none)."""
    if len(argv) != 1:
        print("usage: python scripts/package_sources.py requirements.lock", file=sys.stderr)
        return 2
    args = uv_args(Path(argv[0]))
    if args:
        print(" ".join(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
