import sys

sys.stderr = open(snakemake.log[0], "w")

from pathlib import Path

from agentmem.trials.anomaly import write_restatement_stats

write_restatement_stats(Path(snakemake.input.memories).parent, snakemake.output[0])
