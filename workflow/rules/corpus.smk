rule generate_corpus:
    output:
        memories="results/corpus/{size}/memories.parquet",
        facts="results/corpus/{size}/facts.parquet",
        entities="results/corpus/{size}/entities.parquet",
        sessions="results/corpus/{size}/sessions.parquet",
        agents="results/corpus/{size}/agents.parquet",
        queries="results/corpus/{size}/queries.parquet",
        qrels="results/corpus/{size}/qrels.parquet",
        manifest="results/corpus/{size}/manifest.json",
    log:
        "results/logs/generate_corpus/{size}.log",
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        size=size_params,
        corpus=CFG.corpus.model_dump(),
    script:
        "../../scripts/generate_corpus.py"
