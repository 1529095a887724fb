"""Sweeps that explain the headline table: overfetch, token budget, scaling, HNSW recall.

Each module turns stores and result files the pipeline already wrote into one long-form
table (a polars DataFrame; the HNSW recall sweep into one JSON document); the Snakemake
scripts under ``scripts/`` write them:

- :mod:`agentmem.sweeps.postfilter` -> ``results/sweeps/postfilter.csv``
- :mod:`agentmem.sweeps.budget` -> ``results/sweeps/budget.csv`` (one job per arm)
- :mod:`agentmem.sweeps.scaling` -> ``results/sweeps/scaling.csv`` and the fitted exponents
- :mod:`agentmem.sweeps.hnsw_recall` -> ``results/tables/hnsw_recall_{size}.json``
- :mod:`agentmem.sweeps.ablation` -> ``results/sweeps/ablation.csv``
- :mod:`agentmem.sweeps.choices` -> ``results/tables/choices.csv`` (the study's
  implementation choices; on a further corpus ``tables/choices_{size}.csv``)
"""
