"""Sweeps that explain the headline table (issue 5): post-filter overfetch, token budget, scaling.

Each module turns stores and result files the pipeline already wrote into one long-form
table (a polars DataFrame); the Snakemake scripts under ``scripts/`` write them as CSV:

- :mod:`agentmem.sweeps.postfilter` -> ``results/sweeps/postfilter.csv``
- :mod:`agentmem.sweeps.budget` -> ``results/sweeps/budget.csv`` (one job per arm)
- :mod:`agentmem.sweeps.scaling` -> ``results/sweeps/scaling.csv`` and the fitted exponents
"""
