import sys

sys.stderr = open(snakemake.log[0], "w")

# p50 and p95 query latency per arm (log scale), published markers.
# input.table: results/tables/by_class.csv; output.svg (a .png is written beside it)

from agentmem.report.figures.latency import plot

plot(snakemake.input.table, snakemake.output.svg)
