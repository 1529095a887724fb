"""Integrity trials (docs/MEASUREMENT.md §2): crashes, lost updates, update anomalies.

:mod:`.crash` measures whether a store loses data when a writer or the server dies
(docs/experiments/crash.md), :mod:`.lost_update` whether it loses updates when writers
race (docs/experiments/lost-update.md), both with real OS processes and real signals;
:mod:`.anomaly` measures the update anomaly of restated facts. The embedded PostgreSQL
server they start is :class:`agentmem.pg.EmbeddedServer`; process helpers are in
:mod:`agentmem.procs`.
"""

from agentmem.trials.common import TrialError, require_dir

__all__ = ["TrialError", "require_dir"]
