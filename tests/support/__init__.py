"""Helpers shared by the test modules, imported as ``support.<module>`` (tests/ is on the path).

- ``paths``: the repository root and the shared LoCoMo file.
- ``tiny``: the six-memory hand-made corpus and its deterministic fake vectors.
- ``corpora``: generated corpora with real embeddings, built once per directory.
- ``postgres``: finding and waiting for the embedded PostgreSQL servers a test started.
- ``conformance``: which arms the conformance suite runs on (``--arm``).
- ``timing``: an arm's build with the wall time of the call, to bound its own timings.
- ``workflow``: the real Snakemake workflow in a working directory of the test's own.
- ``hostile``: query texts every arm must survive.
- ``browser``: a page in headless Chromium through Playwright.
- ``slurm_cluster``: a throw-away single-node SLURM cluster.
"""
