from agentmem.jobs import corpus_dir, start_job

# the encoder of the main and smaller sizes holds bench_slot (full priority); one of a
# larger size runs in the background (params.background: nice 19, one thread)
start_job(snakemake, background=snakemake.params.get("background", False))

# Embed every memory body and query text of a corpus (agentmem.embeddings.embed_corpus).
# input.memories, input.queries  the corpus files it reads; input.encoder the graphs it reads:
#   backend onnx: the exported fp32 model; onnx-int8: the fp32 model, then its int8 graph
#   (agentmem.encoder.int8_path of the first); torch: none
# output[0] the embeddings Parquet
# params.encoder_threads (a background encoder takes no core from --cores, yet one thread),
#   params.cache_dir, params.batch_size, params.backend; optional params.model: a further
#   embedding model (agentmem.encoder.PACKAGED_MODELS), which brings its own graph
import sys
from pathlib import Path

from agentmem.embeddings import embed_corpus, set_encoder_threads
from agentmem.encoder import ONNX_BACKENDS, int8_path

backend = snakemake.params.backend
model = snakemake.params.get("model")
graphs = [Path(p) for p in snakemake.input.encoder]
onnx_model = graphs[0] if backend in ONNX_BACKENDS and graphs else None
declared_int8 = len(graphs) == 2 and graphs[1] == int8_path(graphs[0])
if backend == "onnx-int8" and not model and not declared_int8:
    # the job runs the int8 graph: it must be a declared input (rule quantize_encoder)
    raise SystemExit(
        f"backend onnx-int8 needs input.encoder = [fp32 export, its int8 graph], got {graphs}"
    )
threads = set_encoder_threads(snakemake.params.encoder_threads, backend)
print(f"{backend} encoder threads: {threads}", file=sys.stderr)

stats = embed_corpus(
    corpus_dir(snakemake.input, "memories", "queries"),
    snakemake.output[0],
    snakemake.params.cache_dir,
    batch_size=snakemake.params.batch_size,
    progress=True,
    backend=backend,
    onnx_model=onnx_model,
    model=model,
)
print(f"embeddings: {stats}", file=sys.stderr)
