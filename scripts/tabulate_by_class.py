import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

from agentmem.report.tables import write_by_class

write_by_class(
    dict(zip(snakemake.params.arms, snakemake.input.metrics, strict=True)),
    snakemake.output.csv,
    snakemake.output.md,
)
