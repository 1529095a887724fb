import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# p50 and p95 query latency per arm (log scale), published markers.
# input.table: results/tables/by_class.csv; output.svg (a .png is written beside it)

from agentmem.report.figures.latency import plot

plot(snakemake.input.table, snakemake.output.svg)
