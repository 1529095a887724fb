import sys

sys.stderr = open(snakemake.log[0], "w")

# Embed the update-anomaly repair questions once per size (issue 10): the per-arm probe
# jobs then read these vectors instead of each loading the model.
from pathlib import Path

from agentmem.embeddings import set_encoder_threads
from agentmem.trials.anomaly import embed_repair_questions

set_encoder_threads(snakemake.threads)

p = snakemake.params
stats = embed_repair_questions(
    Path(snakemake.input.memories).parent,
    snakemake.output[0],
    p.cache_dir,
    facts=p.facts,
    seed=p.seed,
    batch_size=p.batch_size,
)
print(f"repair questions: {stats}", file=sys.stderr)
