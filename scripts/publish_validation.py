from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.report.tables import concat_csv

# the main size's validation table and corpus specification table, published as is
concat_csv([snakemake.input.table], snakemake.output.table)
concat_csv([snakemake.input.spec], snakemake.output.spec)
