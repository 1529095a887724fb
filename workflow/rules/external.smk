# LoCoMo: real conversations through the same corpus contract, arms, runner and metrics.


rule prepare_locomo:
    input:
        locomo_source,
    output:
        memories="results/external/locomo/corpus/memories.parquet",
        facts="results/external/locomo/corpus/facts.parquet",
        entities="results/external/locomo/corpus/entities.parquet",
        sessions="results/external/locomo/corpus/sessions.parquet",
        agents="results/external/locomo/corpus/agents.parquet",
        queries="results/external/locomo/corpus/queries.parquet",
        qrels="results/external/locomo/corpus/qrels.parquet",
        qrels_session="results/external/locomo/corpus/qrels_session.parquet",
        labels="results/external/locomo/corpus/labels.csv",
        manifest="results/external/locomo/corpus/manifest.json",
    log:
        "results/logs/prepare_locomo.log",
    benchmark:
        "results/benchmarks/prepare_locomo.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        path=CFG.external.locomo.path,
        limit_conversations=CFG.external.locomo.limit_conversations,
    script:
        "../../scripts/prepare_locomo.py"


rule embed_locomo:
    input:
        memories="results/external/locomo/corpus/memories.parquet",
        queries="results/external/locomo/corpus/queries.parquet",
        encoder=encoder_model,
    output:
        "results/external/locomo/embeddings.parquet",
    log:
        "results/logs/embed_locomo.log",
    benchmark:
        "results/benchmarks/embed_locomo.tsv"
    # the encoder is the critical path (every arm run waits for its vectors): it holds
    # bench_slot (no timing job, no other encoder beside it) and goes first; the encoder
    # gets min(threads, usable CPUs) threads
    priority: 50
    conda:
        "../../envs/agentmem.yaml"
    threads: 2
    resources:
        bench_slot=1,
        mem_mb=4000,
    params:
        cache_dir="results/cache/embeddings",
        batch_size=CFG.embedding.batch_size,
        backend=CFG.embedding.backend,
    script:
        "../../scripts/embed_texts.py"


rule run_arm_locomo:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", corpus=LOCOMO_CORPUS),
        embeddings="results/external/locomo/embeddings.parquet",
        sources=arm_sources,
    output:
        store=directory("results/stores/locomo/{arm}"),
        runs="results/external/locomo/runs/{arm}.parquet",
        build="results/external/locomo/builds/{arm}.json",
        plans="results/external/locomo/plans/{arm}.json",
    log:
        "results/logs/run_arm_locomo/{arm}.log",
    benchmark:
        "results/benchmarks/run_arm_locomo/{arm}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    # LoCoMo reports retrieval quality only (no latency figure or table reads these
    # runs), so this is not a timing job: no bench_slot, one untimed pass per query, at
    # nice 19, one heavy background job at a time (background_slot)
    resources:
        background_slot=1,
        mem_mb=4000,
    params:
        arm="{arm}",
        arm_params=arm_params,
        k=CFG.run.k,
        warmup=CFG.external.locomo.warmup,
        repeats=CFG.external.locomo.repeats,
        background=True,
    script:
        "../../scripts/run_arm.py"


rule score_locomo:
    input:
        **corpus_files(
            "memories", "queries", "qrels", "qrels_session", corpus=LOCOMO_CORPUS
        ),
        runs=expand("results/external/locomo/runs/{arm}.parquet", arm=ARM_NAMES),
        code=library_package("agentmem/external/locomo"),
    output:
        scores=report(
            "results/external/locomo/scores.csv",
            caption="../report/locomo.rst",
            category="LoCoMo",
        ),
        ci="results/external/locomo/scores_ci.csv",
        comparison="results/external/locomo/vs_published.md",
    log:
        "results/logs/score_locomo.log",
    benchmark:
        "results/benchmarks/score_locomo.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        arms=ARM_NAMES,
    script:
        "../../scripts/score_locomo.py"
