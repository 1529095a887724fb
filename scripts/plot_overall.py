import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# Overall nDCG@10, recall@10, MRR per arm with 95 % bootstrap intervals, published markers.
# input.table: results/tables/bootstrap_ci.csv; output.svg (a .png is written beside it)

from agentmem.report.figures.overall import plot

plot(snakemake.input.table, snakemake.output.svg)
