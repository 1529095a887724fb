from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.sweeps.hnsw_recall import hnsw_recall

hnsw_recall(
    snakemake.input.embeddings,
    snakemake.input.memories,
    snakemake.input.queries,
    snakemake.output[0],
    k=snakemake.params.k,
)
