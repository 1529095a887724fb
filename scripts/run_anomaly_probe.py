from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# Update-anomaly repair probe on ONE already-built arm (docs/MEASUREMENT.md §2), as the study
# ran it: the corpus's own fact questions with their embeddings and predicates.
# params: arm, arm_params, settings (config trials.anomaly, whole)
# input: store (the arm's store, built by run_arm), the corpus files the probe reads
# (memories, sessions, facts, entities, queries, qrels), embeddings (the corpus's vectors);
# output[0]: one-row CSV arm,facts_probed,mean_reached,mean_total,stale_fraction.
import sys

from agentmem.trials.anomaly import run_anomaly_probe

p = snakemake.params
row = run_anomaly_probe(
    p.arm,
    p.arm_params,
    snakemake.input.store,
    corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
    snakemake.input.embeddings,
    snakemake.output[0],
    p.settings,
)
print(f"anomaly probe: {row}", file=sys.stderr)
