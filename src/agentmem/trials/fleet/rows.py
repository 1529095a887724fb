"""The fleet table's rows: one per (arm, variant, N), from the agents' stats and the check."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from agentmem.trials.fleet.agent import ERROR_KINDS

FIELDS: tuple[str, ...] = (
    "arm",
    "variant",
    "processes",
    "cores",
    "contention",
    "supported",
    "reason",
    "operations",
    "seconds",
    "ops_per_s",
    "recall_p50_ms",
    "recall_p99_ms",
    "remember_p50_ms",
    "remember_p99_ms",
    "acknowledged",
    "lost",
    "lost_earlier",
    "duplicated",
    "unacked_present",
    "corrections",
    "corrections_in_force",
    "corrections_returned",
    "read_your_writes",
    *(f"errors_{k}" for k in ERROR_KINDS),
    "retries",
    "error_sample",
    "integrity_check",
    "corrupt",
    "problems",
)


def percentile(xs: list[float], q: float) -> float | None:
    """The ``q``-th percentile of ``xs`` (numpy's linear), to 3 decimals; None if empty."""
    return round(float(np.percentile(xs, q)), 3) if xs else None


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask; the CPU count elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def blank_row(arm: str, variant: str, n: int) -> dict[str, Any]:
    """A row of :data:`FIELDS` for ``arm``'s ``variant`` run with ``n`` agents, measures unset.

    ``contention`` is set when ``n`` exceeds the usable cores.
    """
    row: dict[str, Any] = dict.fromkeys(FIELDS)
    row.update(arm=arm, variant=variant, processes=n, cores=usable_cores(), supported=True)
    row["contention"] = n > row["cores"]
    return row


def apply_check(row: dict[str, Any], chk: dict[str, Any]) -> None:
    """Copy the store check's counts (lost, duplicated, corrections, integrity) into ``row``."""
    for key in ("lost", "lost_earlier", "duplicated", "unacked_present"):
        row[key] = chk.get(key)
    row["corrections_in_force"] = chk.get("corrections_in_force")
    row["corrections_returned"] = chk.get("corrections_returned")
    row["integrity_check"] = chk.get("integrity_check")
    problems = list(chk.get("integrity") or [])
    row["corrupt"] = bool(problems)
    row["problems"] = "; ".join(problems) or None


def add_run_stats(row: dict[str, Any], stats: list[dict[str, Any]]) -> None:
    """Fill ``row``'s throughput, latency percentiles, counts and errors from the agents' stats.

    ``stats``: one dict per agent (its t0/t1, per-call milliseconds, acknowledged ids,
    read-your-writes checks, errors by kind and retries).
    """
    t0 = min(s["t0"] for s in stats)
    t1 = max(s["t1"] for s in stats)
    recall = [x for s in stats for x in s["recall_ms"]]
    writes = [x for s in stats for x in s["remember_ms"] + s["correction_ms"]]
    ops = len(recall) + len(writes)
    row["operations"] = ops
    row["seconds"] = round(t1 - t0, 3)
    row["ops_per_s"] = round(ops / (t1 - t0), 1) if t1 > t0 else None
    row["recall_p50_ms"], row["recall_p99_ms"] = percentile(recall, 50), percentile(recall, 99)
    row["remember_p50_ms"], row["remember_p99_ms"] = percentile(writes, 50), percentile(writes, 99)
    row["acknowledged"] = sum(len(s["acked"]) for s in stats)
    row["corrections"] = sum(len(s["corrections"]) for s in stats)
    checks = sum(s["ryw_checks"] for s in stats)
    row["read_your_writes"] = (
        round(sum(s["ryw_hits"] for s in stats) / checks, 4) if checks else None
    )
    for kind in ERROR_KINDS:
        row[f"errors_{kind}"] = sum(s["errors"][kind] for s in stats)
    row["retries"] = sum(s["retries"] for s in stats)
    samples = {k: v for s in stats for k, v in s["error_samples"].items()}
    row["error_sample"] = "; ".join(f"{k}: {v}" for k, v in sorted(samples.items())) or None


def say_row(row: dict[str, Any]) -> None:
    """Print one line on stderr: the run's throughput or SIGKILL, p99, losses, integrity."""
    what = "SIGKILL" if row["variant"] == "sigkill" else f"{row['ops_per_s']} ops/s"
    state = "corrupt: " + str(row["problems"]) if row["corrupt"] else "intact"
    print(
        f"fleet {row['arm']} N={row['processes']}: {what}, recall p99 {row['recall_p99_ms']} ms, "
        f"acknowledged {row['acknowledged']}, lost {row['lost']}, duplicated "
        f"{row['duplicated']}, {state}",
        file=sys.stderr,
        flush=True,
    )


def add_note(row: dict[str, Any], note: str) -> None:
    """Append ``note`` to the row's ``problems``."""
    row["problems"] = "; ".join(filter(None, [row["problems"], note]))
