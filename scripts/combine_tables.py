from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.report.tables import concat_csv

concat_csv(list(snakemake.input), snakemake.output[0])
