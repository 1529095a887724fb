"""External datasets: the "agentmem-memory" format, its preparation and scoring, LoCoMo.

:mod:`.format` reads, validates and writes the format (a BEIR-style directory with the
memory columns; specification in ``docs/DATASETS.md``); :mod:`.prepare`
(:func:`prepare_dataset`) writes a dataset as a corpus directory every arm and the runner
read unchanged; :mod:`.score` (:func:`~agentmem.external.score.score_dataset`) scores runs
at memory, evidence and group level; :mod:`.published` holds published figures;
:mod:`.locomo` converts the LoCoMo benchmark into the format (``docs/LOCOMO.md``).
Datasets are read from configured paths and never copied into the repository.
"""

from agentmem.external.format import (
    FORMAT,
    FORMAT_VERSION,
    ISSUE_KINDS,
    Dataset,
    DatasetError,
    Issue,
    read_dataset,
    validate_dataset,
    write_dataset,
)
from agentmem.external.locomo import LocomoFormatError, LocomoMissing, convert_locomo
from agentmem.external.prepare import PREPARED_FILES, prepare_dataset
from agentmem.external.score import SCORE_COLUMNS, score_dataset

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ISSUE_KINDS",
    "PREPARED_FILES",
    "SCORE_COLUMNS",
    "Dataset",
    "DatasetError",
    "Issue",
    "LocomoFormatError",
    "LocomoMissing",
    "convert_locomo",
    "prepare_dataset",
    "read_dataset",
    "score_dataset",
    "validate_dataset",
    "write_dataset",
]
