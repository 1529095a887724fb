import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.figures.lost_update import plot

plot(snakemake.input.table, snakemake.output.svg)
