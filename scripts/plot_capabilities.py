import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# The capability grid (declared capabilities of each arm class) as a ✓/✗ figure.
# params.arms: arm names (agentmem.arms.ARMS keys); output.svg (a .png is written beside it)

from agentmem.report.figures.capabilities import plot

plot(list(snakemake.params.arms), snakemake.output.svg)
