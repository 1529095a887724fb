"""The public names of this package and their submodules (read by lazy_loader.attach_stub)."""

from .format import (
    read_dataset as read_dataset,
    validate_dataset as validate_dataset,
    write_dataset as write_dataset,
)
from .locomo import (
    LocomoFormatError as LocomoFormatError,
    LocomoMissing as LocomoMissing,
    convert_locomo as convert_locomo,
)
from .prepare import PREPARED_FILES as PREPARED_FILES, prepare_dataset as prepare_dataset
from .schema import (
    FORMAT as FORMAT,
    FORMAT_VERSION as FORMAT_VERSION,
    ISSUE_KINDS as ISSUE_KINDS,
    Dataset as Dataset,
    DatasetError as DatasetError,
    Issue as Issue,
)
from .score import SCORE_COLUMNS as SCORE_COLUMNS, score_dataset as score_dataset
