import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

from pathlib import Path

from agentmem.corpus.validation import write_validation

write_validation(
    Path(snakemake.input.memories).parent,
    snakemake.input.embeddings,
    snakemake.output.table,
    snakemake.output.probe,
    random_pairs=int(snakemake.params.random_pairs),
    seed=int(snakemake.params.seed),
    spec_csv=snakemake.output.spec,
)
