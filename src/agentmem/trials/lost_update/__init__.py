"""Lost-update trials (docs/MEASUREMENT.md §2, docs/STUDY.md §4): concurrent increments.

Writers (:mod:`.writers`) each add 1 to one shared counter, all starting together, in
threads or in processes (:mod:`.runner`); ``lost = expected - observed``. The stores,
why each does or does not lose updates, and the modes are described in
docs/experiments/lost-update.md.
"""

from agentmem.trials.lost_update.runner import (
    FIELDS,
    MODES,
    run_lost_update,
    run_lost_update_matrix,
)
from agentmem.trials.lost_update.writers import PG_TABLE, STORES

__all__ = ["FIELDS", "MODES", "PG_TABLE", "STORES", "run_lost_update", "run_lost_update_matrix"]
