from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# Scaling table and fitted exponents from the per-(size, arm) build records and metrics.
# snakemake.params.entries    list of [arm, size], one per job
# snakemake.input.builds      results/builds/{size}/{arm}.json, same order as entries
# snakemake.input.metrics     results/metrics/{size}/{arm}.parquet, same order as entries
# snakemake.output.table      results/sweeps/scaling.csv
# snakemake.output.exponents  CSV of per-arm power-law exponents (fit_exponents)

from agentmem.io import write_csv
from agentmem.sweeps.scaling import fit_exponents, scaling_table

entries = [
    (arm, size, build, metrics)
    for (arm, size), build, metrics in zip(
        snakemake.params.entries, snakemake.input.builds, snakemake.input.metrics, strict=True
    )
]
table = scaling_table(entries)
write_csv(snakemake.output.table, table)
write_csv(snakemake.output.exponents, fit_exponents(table))
