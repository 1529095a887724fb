import sys

sys.stderr = open(snakemake.log[0], "w")

from pathlib import Path

from agentmem.embeddings import embed_corpus, set_encoder_threads

print(f"torch threads: {set_encoder_threads(snakemake.threads)}", file=sys.stderr)

stats = embed_corpus(
    Path(snakemake.input.memories).parent,
    snakemake.output[0],
    snakemake.params.cache_dir,
    batch_size=snakemake.params.batch_size,
    progress=True,
)
print(f"embeddings: {stats}", file=sys.stderr)
