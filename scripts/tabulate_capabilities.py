from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.report.tables import write_capabilities

write_capabilities(list(snakemake.params.arms), snakemake.output[0])
