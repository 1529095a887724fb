from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.report.tables import score_run_file

score_run_file(
    snakemake.input.runs,
    snakemake.input.queries,
    snakemake.input.qrels,
    snakemake.output[0],
    k=snakemake.params.k,
    memories=snakemake.input.memories,
)
