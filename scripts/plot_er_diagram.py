import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.figures.er_diagram import plot

plot(snakemake.output.svg)
