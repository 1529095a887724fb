import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

from agentmem.report.tables import score_run_file

score_run_file(
    snakemake.input.runs,
    snakemake.input.queries,
    snakemake.input.qrels,
    snakemake.output[0],
    k=snakemake.params.k,
)
