from agentmem.jobs import corpus_dir, start_job

# the encoder of the main and smaller sizes holds bench_slot (full priority); one of a
# larger size runs in the background (params.background: nice 19, one thread)
start_job(snakemake, background=snakemake.params.get("background", False))

# Embed every memory body and query text of a corpus (agentmem.embeddings.embed_corpus).
# input.memories, input.queries  the corpus files it reads; input.encoder the exported ONNX
#   model (backend onnx only); output[0] the embeddings Parquet
# params.cache_dir, params.batch_size, params.backend; optional params.model: a further
#   embedding model (agentmem.encoder.PACKAGED_MODELS), which brings its own graph
import sys

from agentmem.embeddings import embed_corpus, set_encoder_threads

backend = snakemake.params.backend
threads = set_encoder_threads(snakemake.threads, backend)
print(f"{backend} encoder threads: {threads}", file=sys.stderr)

stats = embed_corpus(
    corpus_dir(snakemake.input, "memories", "queries"),
    snakemake.output[0],
    snakemake.params.cache_dir,
    batch_size=snakemake.params.batch_size,
    progress=True,
    backend=backend,
    onnx_model=snakemake.input.encoder[0]
    if backend == "onnx" and snakemake.input.encoder
    else None,
    model=snakemake.params.get("model"),
)
print(f"embeddings: {stats}", file=sys.stderr)
