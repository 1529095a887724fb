import sys

sys.stderr = open(snakemake.log[0], "w")  # kept open for the whole job

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# Update-anomaly repair probe on ONE already-built arm (issue 4, DESIGN §6).
# params: arm, arm_params, store_dir, corpus_dir, facts, k, seed (optional: cache_dir)
# input: embeddings (the repair questions' vectors, rule embed_repair_questions);
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
    seed=p.seed,
    cache_dir=getattr(p, "cache_dir", None),
)
print(f"anomaly probe: {row}", file=sys.stderr)
