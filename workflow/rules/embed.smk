rule embed_texts:
    input:
        memories="results/corpus/{size}/memories.parquet",
        queries="results/corpus/{size}/queries.parquet",
    output:
        "results/embeddings/{size}.parquet",
    params:
        cache_dir="results/cache/embeddings",
        batch_size=CFG.embedding.batch_size,
    log:
        "results/logs/embed_texts/{size}.log",
    threads: 2
    resources:
        mem_mb=4000,
    script:
        "../../scripts/embed_texts.py"
