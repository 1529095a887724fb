"""The fleet trial: agent processes sharing one memory store, reading and writing at once.

N agent processes (:mod:`.agent`) run a seeded mix of recalls, remembers and
corrections (:mod:`.workload`) on one store, each through its own arm instance; a
process that took no part then checks that every acknowledged write is there exactly
once, every correction is in force and the store is intact (:mod:`.check`); a SIGKILL
run checks the same after every agent dies mid-write. :func:`run_fleet` runs it all
(docs/experiments/fleet.md).
"""

from agentmem.trials.fleet.agent import ERROR_KINDS, error_kind
from agentmem.trials.fleet.runner import FIELDS, run_fleet, unsupported_reason
from agentmem.trials.fleet.workload import OPS, FleetData, plan_runs

__all__ = [
    "ERROR_KINDS",
    "FIELDS",
    "OPS",
    "FleetData",
    "error_kind",
    "plan_runs",
    "run_fleet",
    "unsupported_reason",
]
