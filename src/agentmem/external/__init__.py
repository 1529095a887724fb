"""External datasets: the "agentmem-memory" format, its preparation and scoring, LoCoMo.

:mod:`.format` reads, validates and writes the format (a BEIR-style directory with the
memory columns; specification in ``docs/DATASETS.md``); :mod:`.prepare`
(:func:`prepare_dataset`) writes a dataset as a corpus directory every arm and the runner
read unchanged; :mod:`.score` (:func:`~agentmem.external.score.score_dataset`) scores runs
at memory, evidence and group level; :mod:`.published` holds published figures;
:mod:`.locomo` converts the LoCoMo benchmark into the format (``docs/LOCOMO.md``).
Datasets are read from configured paths and never copied into the repository.
"""

import lazy_loader

#: each public name, from the submodule that ``__init__.pyi`` names, imported on first use
#: (the workflow's DAG needs few of them; a job loads only the submodules it uses)
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
