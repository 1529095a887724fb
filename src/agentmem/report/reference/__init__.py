"""The published study's numbers (docs/STUDY.md §1–4) as data, and our results beside them.

The study ("Persistent memory architecture in agents using DBMS", public capture
HKTITAN/dbms-agent-memory ``data/capture.json``, transcribed in ``docs/STUDY.md``) is the
yardstick. Submodules:

- :mod:`.study`: the published figures, read from the data files under ``data/``;
- :mod:`.records`: lookup keys, :class:`Published`, :data:`TOLERANCES`;
- :mod:`.published`: every published number as a record (:data:`PUBLISHED`);
- :mod:`.ours`: :class:`OurResults`, the reader of our result files;
- :mod:`.findings`: the findings engine, reading ``data/findings.yaml`` (:data:`FINDINGS`);
- :mod:`.comparison`: :func:`compare` and the verdicts;
- :mod:`.render`: :func:`write_vs_reference` (``results/tables/vs_reference.{md,csv}``).
"""

import lazy_loader

#: each public name, from the submodule that ``__init__.pyi`` names, imported on first use
#: (the workflow's DAG needs few of them; a job loads only the submodules it uses)
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
