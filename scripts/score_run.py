import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.tables import score_run_file

score_run_file(
    snakemake.input.runs,
    snakemake.input.queries,
    snakemake.input.qrels,
    snakemake.output[0],
    k=snakemake.params.k,
)
