import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

from pathlib import Path

from agentmem.trials.anomaly import write_restatement_stats

write_restatement_stats(Path(snakemake.input.memories).parent, snakemake.output[0])
