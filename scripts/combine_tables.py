import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

from agentmem.report.tables import concat_csv

concat_csv(list(snakemake.input), snakemake.output[0])
