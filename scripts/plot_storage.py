import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# Bytes on disk per memory per arm, published markers.
# input.builds: results/builds/{main}/{arm}.json files; params.arms: arm order
# output.svg (a .png is written beside it)

from agentmem.report.figures.storage import plot

plot(list(snakemake.input.builds), snakemake.output.svg, arms=list(snakemake.params.arms))
