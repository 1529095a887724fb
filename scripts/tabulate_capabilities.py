import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.tables import write_capabilities

write_capabilities(list(snakemake.params.arms), snakemake.output[0])
