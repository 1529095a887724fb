rule export_encoder:
    output:
        ONNX_ENCODER,
    log:
        "results/logs/export_encoder.log",
    # untimed, a few seconds: the encoder jobs wait for it, so it goes first too
    priority: 50
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=3000,
    script:
        "../../scripts/export_encoder.py"


rule quantize_encoder:
    input:
        ONNX_ENCODER,
    output:
        ONNX_INT8_ENCODER,
    log:
        "results/logs/quantize_encoder.log",
    # untimed, a few seconds; needed only where an encoder job runs onnx-int8
    # (embedding.backend or backend_above_main), before it, so it goes first too
    priority: 50
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    script:
        "../../scripts/export_encoder.py"


rule embed_texts:
    input:
        memories="results/corpus/{size}/memories.parquet",
        queries="results/corpus/{size}/queries.parquet",
        encoder=size_encoder,
    output:
        "results/embeddings/{size}.parquet",
    log:
        "results/logs/embed_texts/{size}.log",
    benchmark:
        "results/benchmarks/embed_texts/{size}.tsv"
    # the encoder of the main size and the smaller ones is the critical path (every arm
    # run waits for its vectors): it holds bench_slot (no timing job beside it), its
    # threads (encoder_threads), and goes first. A size above the main one is needed only
    # after the main size's runs: its encoder takes one thread and background_slot at
    # nice 19 and runs from the start beside the main size's encoder and runs, on what
    # they leave, taking no core from --cores locally (background_threads). The encoder
    # gets min(threads, usable CPUs).
    priority: 50
    conda:
        "../../envs/agentmem.yaml"
    threads: embed_threads
    resources:
        bench_slot=lambda wc: 0 if above_main(wc.size) else 1,
        background_slot=1,  # as a timing job or as a background one
        mem_mb=4000,
    params:
        background=lambda wc: above_main(wc.size),
        encoder_threads=encoder_threads,
        cache_dir="results/cache/embeddings",
        batch_size=CFG.embedding.batch_size,
        # embedding.backend, or backend_above_main for a size above the main one
        backend=lambda wc: PLAN.size_backend(wc.size),
    script:
        "../../scripts/embed_texts.py"
