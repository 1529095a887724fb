rule run_postfilter_sweep:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", "qrels", corpus=MAIN_CORPUS),
        embeddings=f"results/embeddings/{MAIN}.parquet",
        stores=postfilter_stores(),
        code=library_file("agentmem/sweeps/postfilter.py"),
    output:
        "results/sweeps/postfilter.csv",
    log:
        "results/logs/run_postfilter_sweep.log",
    benchmark:
        "results/benchmarks/run_postfilter_sweep.tsv"
    # untimed (fill, recall, share of the corpus fetched): beside the timing jobs
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    resources:
        background_slot=1,
        mem_mb=2000,
    params:
        arms=POSTFILTER_ARMS,
        overfetch=CFG.sweeps.overfetch,
        k=CFG.run.k,
        arm_params=dict(CFG.arm_params),
    script:
        "../../scripts/run_postfilter_sweep.py"


rule run_ablation_sweep:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", "qrels", corpus=MAIN_CORPUS),
        embeddings=f"results/embeddings/{MAIN}.parquet",
        stores=ablation_stores(),
        # the configured arms' timed runs on those stores: the configured rows come from them
        runs=ablation_runs(),
        code=library_file("agentmem/sweeps/ablation.py"),
    output:
        csv="results/sweeps/ablation.csv",
        md="results/sweeps/ablation.md",
    log:
        "results/logs/run_ablation_sweep.log",
    benchmark:
        "results/benchmarks/run_ablation_sweep.tsv"
    # untimed (quality only): beside the timing jobs
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    resources:
        background_slot=1,
        mem_mb=2000,
    params:
        arms=ABLATION_ARMS,
        k=CFG.run.k,
        run_k=CFG.run.k,
        arm_params=dict(CFG.arm_params),
    script:
        "../../scripts/run_ablation_sweep.py"


rule run_choices_sweep:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", "qrels", corpus=MAIN_CORPUS),
        embeddings=f"results/embeddings/{MAIN}.parquet",
        stores=choice_stores(),
        code=[
            library_file("agentmem/sweeps/choices.py"),
            library_file("agentmem/choices.py"),
        ],
    output:
        "results/tables/choices.csv",
    log:
        "results/logs/run_choices_sweep.log",
    benchmark:
        "results/benchmarks/run_choices_sweep.tsv"
    # untimed (quality only): the study's implementation choices on the headline corpus
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    resources:
        background_slot=1,
        mem_mb=2000,
    params:
        arms=CHOICE_ARMS,
        configurations=CHOICE_CONFIGURATIONS,
        k=CFG.run.k,
        arm_params=dict(CFG.arm_params),
    script:
        "../../scripts/run_choices_sweep.py"


rule run_budget_sweep:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", "qrels"),
        embeddings="results/embeddings/{size}.parquet",
        store="results/stores/{size}/{arm}",
        code=library_file("agentmem/sweeps/budget.py"),
    output:
        "results/sweeps/budget/{size}/{arm}.csv",
    log:
        "results/logs/run_budget_sweep/{size}/{arm}.log",
    benchmark:
        "results/benchmarks/run_budget_sweep/{size}/{arm}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    # untimed (quality and tokens only): runs beside the timing jobs
    resources:
        background_slot=1,
        mem_mb=2000,
    params:
        arm="{arm}",
        arm_params=arm_params,
        ks=CFG.sweeps.budget_k,
    script:
        "../../scripts/run_budget_sweep.py"


rule combine_budget_sweeps:
    input:
        expand("results/sweeps/budget/{size}/{arm}.csv", size=MAIN, arm=BUDGET_ARMS),
    output:
        "results/sweeps/budget.csv",
    log:
        "results/logs/combine_budget_sweeps.log",
    benchmark:
        "results/benchmarks/combine_budget_sweeps.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=500,
    script:
        "../../scripts/combine_tables.py"


rule tabulate_scaling:
    input:
        builds=[f"results/builds/{s}/{a}.json" for a, s in SCALING_ENTRIES],
        metrics=[f"results/metrics/{s}/{a}.parquet" for a, s in SCALING_ENTRIES],
    output:
        table="results/sweeps/scaling.csv",
        exponents="results/sweeps/scaling_exponents.csv",
    log:
        "results/logs/tabulate_scaling.log",
    benchmark:
        "results/benchmarks/tabulate_scaling.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        entries=[list(e) for e in SCALING_ENTRIES],
    script:
        "../../scripts/tabulate_scaling.py"
