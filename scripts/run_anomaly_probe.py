import sys

sys.stderr = open(snakemake.log[0], "w")  # kept open for the whole job

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# Update-anomaly repair probe on ONE already-built arm (DESIGN §6), as the study ran it:
# the corpus's own fact questions with their embeddings and predicates.
# params: arm, arm_params, store_dir, facts, k
# input: memories (its directory is the corpus), embeddings (the corpus's vectors);
# output[0]: one-row CSV arm,facts_probed,mean_reached,mean_total,stale_fraction.
from pathlib import Path

from agentmem.trials.anomaly import run_anomaly_probe

p = snakemake.params
row = run_anomaly_probe(
    p.arm,
    p.arm_params,
    p.store_dir,
    Path(snakemake.input.memories).parent,
    snakemake.input.embeddings,
    snakemake.output[0],
    facts=p.facts,
    k=p.k,
)
print(f"anomaly probe: {row}", file=sys.stderr)
