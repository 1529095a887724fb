# The seed systems' claims (docs/STUDY.md §5): long conversations and forgetting.


rule run_conversation_sweep:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", "qrels", corpus=MAIN_CORPUS),
        embeddings=f"results/embeddings/{MAIN}.parquet",
        code=conversation_sources(),
    output:
        table="results/sweeps/conversation.csv",
        summary="results/sweeps/conversation_summary.csv",
        tiers="results/sweeps/conversation_tiers.csv",
        work_dir=directory("results/stores/seeds/conversation"),
    log:
        "results/logs/run_conversation_sweep.log",
    benchmark:
        "results/benchmarks/run_conversation_sweep.tsv"
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
        settings=CFG.seed_systems.conversation.model_dump()
        | {"arms": CONVERSATION_ARMS},
        arm_params={a: dict(CFG.arm_params.get(a, {})) for a in CONVERSATION_ARMS},
    script:
        "../../scripts/run_conversation_sweep.py"


rule run_decay_sweep:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", "qrels", corpus=MAIN_CORPUS),
        embeddings=f"results/embeddings/{MAIN}.parquet",
        code=[
            library_file("agentmem/sweeps/decay.py"),
            *library_package("agentmem/arms/graph"),
        ],
    output:
        table="results/sweeps/decay.csv",
        work_dir=directory("results/stores/seeds/decay"),
    log:
        "results/logs/run_decay_sweep.log",
    benchmark:
        "results/benchmarks/run_decay_sweep.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    # untimed (pruning, nDCG and recall per simulated day): runs beside the timing jobs
    resources:
        background_slot=1,
        mem_mb=4000,
    params:
        entry="agentmem.sweeps.decay:decay_job",
        settings=CFG.seed_systems.decay.model_dump(),
    script:
        "../../scripts/run_entry.py"
