"""The embedded PostgreSQL servers a test started: find them, wait for them to stop."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psutil

from agentmem import pg


def poll(predicate: Callable[[], bool], timeout_s: float = 15.0) -> bool:
    """Call ``predicate()`` every 50 ms until it is true (True) or ``timeout_s`` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def servers_under(root: Path) -> list[int]:
    """Pids of live (non-zombie) postgres processes whose command line names ``root``."""
    out = []
    for p in psutil.process_iter(["name", "cmdline", "status"]):
        try:
            if (
                p.info["name"] == "postgres"
                and p.info["status"] != psutil.STATUS_ZOMBIE
                and any(str(root) in part for part in (p.info["cmdline"] or []))
            ):
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


def servers_left(root: Path, timeout_s: float = 15.0) -> list[int]:
    """Wait up to ``timeout_s`` for every server under ``root`` to stop; pids still running."""
    poll(lambda: not servers_under(root), timeout_s)
    return servers_under(root)


def wait_dead(pid: int | None, timeout_s: float = 15.0) -> bool:
    """Wait until postmaster ``pid`` no longer runs (a zombie awaiting reaping is dead)."""
    return poll(lambda: not pg.process_alive(pid), timeout_s)
