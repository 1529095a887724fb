"""External data sets read from a configured path (never copied into the repository).

``locomo``: the LoCoMo conversational-memory benchmark (snap-research/LoCoMo,
CC BY-NC 4.0) adapted to the corpus contract of DESIGN §2 and scored at turn and
session level.
"""

from agentmem.external.locomo import LocomoMissing, prepare_locomo, score_locomo

__all__ = ["LocomoMissing", "prepare_locomo", "score_locomo"]
