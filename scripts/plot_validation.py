import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.figures.validation import plot

plot(snakemake.input.table, snakemake.output.svg)
