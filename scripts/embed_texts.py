from agentmem.jobs import corpus_dir, start_job

start_job(snakemake, background=False)  # the encoder holds bench_slot: full priority

# Embed every memory body and query text of a corpus (agentmem.embeddings.embed_corpus).
# input.memories, input.queries  the corpus files it reads; output[0] the embeddings Parquet
# params.cache_dir, params.batch_size
import sys

from agentmem.embeddings import embed_corpus, set_encoder_threads

print(f"torch threads: {set_encoder_threads(snakemake.threads)}", file=sys.stderr)

stats = embed_corpus(
    corpus_dir(snakemake.input, "memories", "queries"),
    snakemake.output[0],
    snakemake.params.cache_dir,
    batch_size=snakemake.params.batch_size,
    progress=True,
)
print(f"embeddings: {stats}", file=sys.stderr)
