import sys

sys.stderr = open(snakemake.log[0], "w")

from pathlib import Path

from agentmem.corpus.validation import write_validation

write_validation(
    Path(snakemake.input.memories).parent,
    snakemake.input.embeddings,
    snakemake.output.table,
    snakemake.output.probe,
    random_pairs=int(snakemake.params.random_pairs),
    seed=int(snakemake.params.seed),
)
