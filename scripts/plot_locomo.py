import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# Figure: LoCoMo session-level Hit@1/R@5 per arm beside the published anchors, and
# turn-level nDCG@10 per category (agentmem.report.figures.locomo.plot).
#   input.table   results/external/locomo/scores.csv
#   output.svg    the SVG (a PNG is written beside it)
from agentmem.report.figures.locomo import plot

plot(snakemake.input.table, snakemake.output.svg)
