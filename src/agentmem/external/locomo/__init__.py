"""LoCoMo: real conversations in the corpus contract, and retrieval scored with no LLM.

LoCoMo (Maharana et al. 2024, public repository ``snap-research/LoCoMo``, file
``data/locomo10.json``, licence CC BY-NC 4.0) holds 10 long two-person conversations and
their questions, each with the turns that hold its answer: the retrieval ground truth.
The file is read from a configured path and never copied into the repository.

:mod:`.load` reads the file and parses its dates and evidence labels; :mod:`.prepare`
(:func:`prepare_locomo`) writes it as a corpus directory every arm and the runner read
unchanged; :mod:`.score` (:func:`score_locomo`) scores runs at turn and session level;
:mod:`.published` holds the published anchors. The mapping, the label repairs and the
scoring rules: ``docs/LOCOMO.md``.
"""

from agentmem.external.locomo.load import (
    DEFAULT_PATH,
    LICENSE,
    SOURCE_FILE,
    SOURCE_REPOSITORY,
    LocomoFormatError,
    LocomoMissing,
    load_locomo,
    missing_message,
    normalise_label,
    parse_evidence,
    parse_session_datetime,
)
from agentmem.external.locomo.prepare import (
    ADVERSARIAL,
    CATEGORY_CLASSES,
    FILES,
    LABEL_COLUMNS,
    QUERY_CLASSES,
    QUERY_SCHEMA,
    SCHEMA_VERSION,
    prepare_locomo,
)
from agentmem.external.locomo.published import ANCHORS, anchors, write_comparison_md
from agentmem.external.locomo.score import (
    LEVELS,
    METRIC_COLUMNS,
    SCORE_COLUMNS,
    level_scores,
    per_query_scores,
    score_locomo,
    session_ranking,
)

__all__ = [
    "ADVERSARIAL",
    "ANCHORS",
    "CATEGORY_CLASSES",
    "DEFAULT_PATH",
    "FILES",
    "LABEL_COLUMNS",
    "LEVELS",
    "LICENSE",
    "METRIC_COLUMNS",
    "QUERY_CLASSES",
    "QUERY_SCHEMA",
    "SCHEMA_VERSION",
    "SCORE_COLUMNS",
    "SOURCE_FILE",
    "SOURCE_REPOSITORY",
    "LocomoFormatError",
    "LocomoMissing",
    "anchors",
    "level_scores",
    "load_locomo",
    "missing_message",
    "normalise_label",
    "parse_evidence",
    "parse_session_datetime",
    "per_query_scores",
    "prepare_locomo",
    "score_locomo",
    "session_ranking",
    "write_comparison_md",
]
