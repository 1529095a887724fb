"""LoCoMo: real conversations converted into the "agentmem-memory" format, scored with no LLM.

LoCoMo (Maharana et al. 2024, public repository ``snap-research/LoCoMo``, file
``data/locomo10.json``, licence CC BY-NC 4.0) holds 10 long two-person conversations and
their questions, each with the turns that hold its answer: the retrieval ground truth.
The file is read from a configured path and never copied into the repository.

:mod:`.load` reads the file and parses its dates and evidence labels; :mod:`.convert`
(:func:`convert_locomo`) writes one dataset per memory unit (dialog turns, observations,
session summaries), which :func:`agentmem.external.prepare_dataset` prepares and
:func:`agentmem.external.score.score_dataset` scores like any other dataset. The mapping,
the label repairs and the official metric: ``docs/LOCOMO.md``.
"""

from agentmem.external.locomo.convert import CATEGORY_NAMES, LABEL_COLUMNS, UNITS, convert_locomo
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
from agentmem.external.published import ANCHORS, anchors

__all__ = [
    "ANCHORS",
    "CATEGORY_NAMES",
    "DEFAULT_PATH",
    "LABEL_COLUMNS",
    "LICENSE",
    "SOURCE_FILE",
    "SOURCE_REPOSITORY",
    "UNITS",
    "LocomoFormatError",
    "LocomoMissing",
    "anchors",
    "convert_locomo",
    "load_locomo",
    "missing_message",
    "normalise_label",
    "parse_evidence",
    "parse_session_datetime",
]
