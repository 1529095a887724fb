"""agentmem.procs: background priority for non-timing jobs (run in children: nice is one-way).

``run_in_background`` is imported from :mod:`agentmem.io`, where the scripts import it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO


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


def test_share_background_priority_lowers_a_child_session() -> None:
    """A niced job lowers the session of a child that left its session (like pg_ctl's)."""
    if not Path("/proc/self/autogroup").exists():
        pytest.skip("kernel without autogroup scheduling")
    code = (
        "import json, subprocess, sys\n"
        "from pathlib import Path\n"
        "from agentmem.io import run_in_background\n"
        "from agentmem.procs import share_background_priority\n"
        "child = subprocess.Popen(['sleep', '30'], start_new_session=True)\n"
        "try:\n"
        "    before = Path(f'/proc/{child.pid}/autogroup').read_text().split()[-1]\n"
        "    not_niced = share_background_priority(child.pid)\n"
        "    run_in_background()\n"
        "    done = share_background_priority(child.pid)\n"
        "    after = Path(f'/proc/{child.pid}/autogroup').read_text().split()[-1]\n"
        "    import os\n"
        "    prio = os.getpriority(os.PRIO_PROCESS, child.pid)\n"
        "finally:\n"
        "    child.kill(); child.wait()\n"
        "print(json.dumps([before, not_niced, done, after, prio]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert out.returncode == 0, out.stderr
    before, not_niced, done, after, prio = json.loads(out.stdout)
    assert before == "0"
    assert not_niced is False  # the caller was not niced yet: nothing changed
    assert done is True and after == "19" and prio == 19


def test_embedding_cache_skips_an_unreadable_shard_and_reads_the_others(tmp_path, caplog):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from agentmem.embeddings import DIM, read_cache

    vec = np.arange(2 * DIM, dtype=np.float32).reshape(2, DIM)
    good = pa.table(
        {
            "sha256": ["a", "b"],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), DIM),
        }
    )
    pq.write_table(good, tmp_path / "0-good.parquet")
    (tmp_path / "1-torn.parquet").write_bytes(b"PAR1 not a parquet file")
    with caplog.at_level("WARNING", logger="agentmem.embeddings"):
        cache = read_cache(tmp_path)
    assert sorted(cache) == ["a", "b"]
    assert cache["b"].tolist() == vec[1].tolist()
    assert any("1-torn.parquet" in r.getMessage() for r in caplog.records)
