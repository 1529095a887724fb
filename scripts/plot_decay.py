import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# snakemake.input.table  results/sweeps/decay.csv
# snakemake.output.svg   the figure (a PNG is written beside it)

from agentmem.report.figures.decay import plot

plot(snakemake.input.table, snakemake.output.svg)
