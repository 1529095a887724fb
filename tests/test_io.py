"""agentmem.io: background priority for non-timing jobs (run in a child: nice is one-way)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO


def test_run_in_background_raises_niceness_and_never_lowers_it() -> None:
    code = (
        "import json, os\n"
        "from agentmem.io import run_in_background\n"
        "before = os.nice(0)\n"
        "first = run_in_background()\n"
        "second = run_in_background(5)\n"
        "print(json.dumps([before, first, second, os.nice(0)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert out.returncode == 0, out.stderr
    before, first, second, now = json.loads(out.stdout)
    assert 0 <= before <= 19
    assert (first, second, now) == (19, 19, 19)
