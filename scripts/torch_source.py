"""Print the extra pip arguments ``make install`` needs for the lock's CPU build of torch.

The lock pins torch's CPU build (``torch==X+cpu``), which PyPI does not carry. When pip, as
configured (``pip config list``, ``PIP_*`` variables: index, extra indexes, find-links),
finds that wheel, nothing is printed; otherwise the arguments adding PyTorch's CPU wheel
index, with a note on stderr. A lock without such a pin needs nothing. The probe is a pip
dry run of the pin alone (no dependencies, whatever is installed); nothing is installed.

Usage: python scripts/torch_source.py requirements.lock
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

#: PyTorch's index of CPU-only wheels
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
_PIN = re.compile(r"^(torch==\S+\+cpu)\s*$", re.MULTILINE)


def cpu_torch_pin(lock_text: str) -> str | None:
    """The lock's ``torch==X+cpu`` requirement, or ``None`` when it pins no CPU build."""
    m = _PIN.search(lock_text)
    return m[1] if m else None


def pip_finds(requirement: str) -> bool:
    """Whether pip, as configured, finds a distribution for ``requirement`` (a dry run)."""
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
           "--quiet", "--disable-pip-version-check", requirement]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True).returncode == 0


def extra_pip_args(lock: Path) -> list[str]:
    """The arguments ``pip install -r lock`` needs beyond pip's configuration."""
    pin = cpu_torch_pin(lock.read_text())
    if pin is None or pip_finds(pin):
        return []
    print(f"{pin} is not in pip's configured sources; adding PyTorch's CPU index {CPU_INDEX}",
          file=sys.stderr)  # fmt: skip
    return ["--extra-index-url", CPU_INDEX]


def main(argv: list[str]) -> int:
    """Print :func:`extra_pip_args` of the lock ``argv[0]`` on one line (empty: none)."""
    if len(argv) != 1:
        print("usage: python scripts/torch_source.py requirements.lock", file=sys.stderr)
        return 2
    args = extra_pip_args(Path(argv[0]))
    if args:
        print(" ".join(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
