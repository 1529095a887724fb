rule embed_texts:
    input:
        memories="results/corpus/{size}/memories.parquet",
        queries="results/corpus/{size}/queries.parquet",
    output:
        "results/embeddings/{size}.parquet",
    log:
        "results/logs/embed_texts/{size}.log",
    benchmark:
        "results/benchmarks/embed_texts/{size}.tsv"
    # one encoder at a time (profiles/default: embed_slot=1): two 2-thread encoders on
    # 2 cores thrash; first in line, since every arm run waits for its embeddings
    priority: 50
    conda:
        "../../envs/agentmem.yaml"
    threads: 2
    resources:
        embed_slot=1,
        mem_mb=4000,
    params:
        cache_dir="results/cache/embeddings",
        batch_size=CFG.embedding.batch_size,
    script:
        "../../scripts/embed_texts.py"
