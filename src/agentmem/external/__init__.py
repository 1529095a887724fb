"""External datasets: the "agentmem-memory" format, its preparation and scoring, LoCoMo.

:mod:`.format` reads, validates and writes the format (a BEIR-style directory with the
memory columns; specification in ``docs/DATASETS.md``); :mod:`.prepare`
(:func:`prepare_dataset`) writes a dataset as a corpus directory every arm and the runner
read unchanged; :mod:`.score` (:func:`~agentmem.external.score.score_dataset`) scores runs
at memory, evidence and group level; :mod:`.published` holds published figures;
:mod:`.locomo` converts the LoCoMo benchmark into the format (``docs/LOCOMO.md``).
Datasets are read from configured paths and never copied into the repository.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmem.external.format import read_dataset, validate_dataset, write_dataset
    from agentmem.external.locomo import LocomoFormatError, LocomoMissing, convert_locomo
    from agentmem.external.prepare import PREPARED_FILES, prepare_dataset
    from agentmem.external.schema import (
        FORMAT,
        FORMAT_VERSION,
        ISSUE_KINDS,
        Dataset,
        DatasetError,
        Issue,
    )
    from agentmem.external.score import SCORE_COLUMNS, score_dataset

#: the submodule that defines each public name (imported on first use)
_SOURCES: dict[str, str] = {
    "FORMAT": "agentmem.external.schema",
    "FORMAT_VERSION": "agentmem.external.schema",
    "ISSUE_KINDS": "agentmem.external.schema",
    "PREPARED_FILES": "agentmem.external.prepare",
    "SCORE_COLUMNS": "agentmem.external.score",
    "Dataset": "agentmem.external.schema",
    "DatasetError": "agentmem.external.schema",
    "Issue": "agentmem.external.schema",
    "LocomoFormatError": "agentmem.external.locomo",
    "LocomoMissing": "agentmem.external.locomo",
    "convert_locomo": "agentmem.external.locomo",
    "prepare_dataset": "agentmem.external.prepare",
    "read_dataset": "agentmem.external.format",
    "score_dataset": "agentmem.external.score",
    "validate_dataset": "agentmem.external.format",
    "write_dataset": "agentmem.external.format",
}

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


def __getattr__(name: str) -> Any:
    """A public name, from its submodule (:data:`_SOURCES`), imported on first use.

    The workflow's DAG needs only the format's names; a job loads only the submodules it uses.
    """
    try:
        module = _SOURCES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
