"""Lost-update trials (docs/MEASUREMENT.md §2, docs/STUDY.md §4): concurrent increments.

Writers (:mod:`.writers`) each add 1 to one shared counter, all starting together, in
threads or in processes (:mod:`.runner`); ``lost = expected - observed``. The stores,
why each does or does not lose updates, and the modes are described in
docs/experiments/lost-update.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentmem.trials.lost_update.writers import PG_TABLE, STORES

if TYPE_CHECKING:
    from agentmem.trials.lost_update.runner import (
        FIELDS,
        MODES,
        run_lost_update,
        run_lost_update_matrix,
    )

#: the runner's names, imported on first use: a writer process (``python -m
#: agentmem.trials.lost_update --writer``) imports this package and needs none of them
_RUNNER_NAMES = frozenset({"FIELDS", "MODES", "run_lost_update", "run_lost_update_matrix"})


def __getattr__(name: str) -> Any:
    """The runner's names (:data:`_RUNNER_NAMES`), imported when first asked for."""
    if name not in _RUNNER_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from agentmem.trials.lost_update import runner

    return getattr(runner, name)


__all__ = ["FIELDS", "MODES", "PG_TABLE", "STORES", "run_lost_update", "run_lost_update_matrix"]
