import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

from agentmem.report.tables import write_capabilities

write_capabilities(list(snakemake.params.arms), snakemake.output[0])
