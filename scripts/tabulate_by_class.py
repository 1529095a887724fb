from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.report.tables import timed_note, write_by_class

write_by_class(
    dict(zip(snakemake.params.arms, snakemake.input.metrics, strict=True)),
    snakemake.output.csv,
    snakemake.output.md,
    latency_note=timed_note(**snakemake.params.timing),
)
