from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.report.diagnostics import fill_rates

fill_rates(
    dict(zip(snakemake.params.arms, snakemake.input.runs, strict=True)),
    snakemake.input.memories,
    snakemake.input.queries,
    snakemake.output[0],
    k=snakemake.params.k,
)
