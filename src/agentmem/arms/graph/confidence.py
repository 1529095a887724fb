"""Confidence of the sqlite-graph arm's nodes: Ebbinghaus-style decay, pruning, corrections.

The values marked "seed claim" are the seed's; the decay rates of non-episodic types are
this implementation's choice.
"""

from __future__ import annotations

import math

#: Decay rate per node type (per day**0.8). Episodic nodes never decay (seed claim); the
#: other values are this implementation's choice (opinions fade fastest, procedures
#: slowest): a semantic node at confidence 0.9 keeps 0.33 after 320 days unaccessed and
#: is pruned after about 1,000 days.
DECAY_RATES: dict[str, float] = {
    "episodic": 0.0,
    "semantic": 0.01,
    "procedural": 0.005,
    "opinion": 0.05,
}
#: Exponent on the days since last access (seed claim: ``days ** 0.8``).
DECAY_EXPONENT = 0.8
#: Nodes whose decayed confidence falls below this are pruned (seed claim).
PRUNE_BELOW = 0.05
#: A superseded node's confidence and decay rate after a correction (seed claim).
CORRECTED_CONFIDENCE = 0.3
CORRECTED_DECAY_RATE = 0.5
#: Default confidence of a memory written through
#: :meth:`~agentmem.arms.graph.SqliteGraphArm.add_node`.
DEFAULT_CONFIDENCE = 0.9


def decayed_confidence(confidence0: float, decay_rate: float, days_since_access: float) -> float:
    """Return the Ebbinghaus-style decayed confidence of the seed "graph cognitive memory".

    ``confidence_t = confidence_0 * exp(-decay_rate * days ** 0.8)`` (the seed's claim;
    an exponential forgetting curve after Ebbinghaus 1885 with a sub-linear time axis).

    Args:
        confidence0: confidence at the last access, in ``[0, 1]``.
        decay_rate: per ``day ** 0.8``; ``0`` means no decay.
        days_since_access: days since the last access; negative values count as 0.

    Returns:
        The decayed confidence (``confidence0`` when nothing has elapsed).
    """
    days = max(0.0, float(days_since_access))
    if days == 0.0 or decay_rate == 0.0:
        return float(confidence0)
    return float(confidence0) * math.exp(-float(decay_rate) * days**DECAY_EXPONENT)
