import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.figures.crash import plot

plot(snakemake.input.table, snakemake.output.svg)
