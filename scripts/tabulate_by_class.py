import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.tables import write_by_class

write_by_class(
    dict(zip(snakemake.params.arms, snakemake.input.metrics, strict=True)),
    snakemake.output.csv,
    snakemake.output.md,
)
