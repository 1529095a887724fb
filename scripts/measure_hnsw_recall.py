import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.diagnostics import hnsw_recall

hnsw_recall(
    snakemake.input.embeddings,
    snakemake.input.memories,
    snakemake.input.queries,
    snakemake.output[0],
    k=snakemake.params.k,
)
