"""Importing mem0 with its telemetry off and its home directory inside the store."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from agentmem.errors import ArmError

#: ``MEM0_DIR`` under the store directory (mem0 reads it once, at import).
MEM0_HOME = "mem0home"


IMPORT_LOCK = threading.Lock()


def import_memory(store_dir: Path) -> type:
    """Import and return ``mem0.Memory`` with telemetry off and ``MEM0_DIR`` in ``store_dir``.

    mem0 reads ``MEM0_TELEMETRY`` and ``MEM0_DIR`` when ``mem0`` is first imported and
    writes ``MEM0_DIR/config.json`` then (and nothing there afterwards while telemetry
    is off and ``history_db_path`` is set). The first import in a process therefore
    points ``MEM0_DIR`` at ``store_dir/mem0home`` (restoring the variable afterwards);
    later arm instances in the process reuse the imported module.

    Raises:
        ArmError: when mem0 was imported earlier in the process with telemetry on.
    """
    with IMPORT_LOCK:
        if "mem0.memory.main" not in sys.modules:
            os.environ["MEM0_TELEMETRY"] = "False"
            previous = os.environ.get("MEM0_DIR")
            os.environ["MEM0_DIR"] = str(Path(store_dir) / MEM0_HOME)
            try:
                import mem0  # noqa: F401
            finally:
                if previous is None:
                    os.environ.pop("MEM0_DIR", None)
                else:
                    os.environ["MEM0_DIR"] = previous
        from mem0 import Memory
        from mem0.memory import main as mem0_main

        if mem0_main.MEM0_TELEMETRY:
            raise ArmError(
                "mem0: telemetry is on: mem0 was imported before the arm with "
                "MEM0_TELEMETRY unset; set MEM0_TELEMETRY=False before importing mem0"
            )
        return Memory
