rule run_arm:
    input:
        **corpus_files(*CORPUS_TABLES, "queries"),
        embeddings="results/embeddings/{size}.parquet",
        sources=arm_sources,
    output:
        store=directory("results/stores/{size}/{arm}"),
        runs="results/runs/{size}/{arm}.parquet",
        build="results/builds/{size}/{arm}.json",
        plans="results/plans/{size}/{arm}.json",
    log:
        "results/logs/run_arm/{size}/{arm}.log",
    benchmark:
        "results/benchmarks/run_arm/{size}/{arm}.tsv"
    # a timing job: the chain of them bounds the run, so it goes before untimed jobs
    priority: 20
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        bench_slot=1,
        background_slot=1,  # a timing job holds one too (profiles/default/config.yaml)
        mem_mb=4000,
    params:
        arm="{arm}",
        arm_params=arm_params,
        k=CFG.run.k,
        warmup=CFG.run.warmup,
        repeats=CFG.run.repeats,
        min_time_ms=CFG.run.min_time_ms,
    script:
        "../../scripts/run_arm.py"


rule score_run:
    input:
        runs="results/runs/{size}/{arm}.parquet",
        queries="results/corpus/{size}/queries.parquet",
        qrels="results/corpus/{size}/qrels.parquet",
        memories="results/corpus/{size}/memories.parquet",
        code=library_file("agentmem/metrics.py"),
    output:
        "results/metrics/{size}/{arm}.parquet",
    log:
        "results/logs/score_run/{size}/{arm}.log",
    benchmark:
        "results/benchmarks/score_run/{size}/{arm}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        k=CFG.run.k,
    script:
        "../../scripts/score_run.py"
