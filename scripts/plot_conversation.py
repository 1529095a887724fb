import sys

sys.stderr = open(snakemake.log[0], "w")

# snakemake.input.table  results/sweeps/conversation.csv
# snakemake.output.svg   the figure (a PNG is written beside it)

from agentmem.report.figures.conversation import plot

plot(snakemake.input.table, snakemake.output.svg)
