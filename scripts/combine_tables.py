import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.report.tables import concat_csv

concat_csv(list(snakemake.input), snakemake.output[0])
