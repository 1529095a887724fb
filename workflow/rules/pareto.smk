# Operating points (agentmem.sweeps.pareto, docs/OPERATING_POINTS.md): every arm with knobs
# at each point of its grid, one job per point, then the tables and the figures.


rule run_pareto_point:
    input:
        unpack(pareto_point_inputs),
        **corpus_files(
            *CORPUS_TABLES, "queries", "qrels", corpus=f"results/corpus/{PARETO_SIZE}"
        ),
        embeddings=f"results/embeddings/{PARETO_SIZE}.parquet",
        sources=arm_sources,
        code=library_package("agentmem/sweeps/pareto"),
    output:
        point="results/pareto/points/{arm}/{point}.json",
    log:
        "results/logs/run_pareto_point/{arm}/{point}.log",
    benchmark:
        "results/benchmarks/run_pareto_point/{arm}/{point}.tsv"
    # a timing job, timed as the headline runs are; after them (they bound the run)
    priority: 10
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        bench_slot=1,
        background_slot=1,  # a timing job holds one too (profiles/default/config.yaml)
        mem_mb=4000,
    params:
        entry="agentmem.sweeps.pareto.run:point_job",
        timed=True,
        arm="{arm}",
        point="{point}",
        # the point's knob, stage and constructor parameters (not the whole grid: a new
        # value in a grid runs the new point alone)
        setting=pareto_point_params,
        k=CFG.run.k,
        warmup=CFG.run.warmup,
        repeats=CFG.run.repeats,
        min_time_ms=CFG.run.min_time_ms,
        # build-time points build in results/pareto/scratch/ (removed after each)
        scratch=lambda w, output: str(Path(output.point).parents[2] / "scratch"),
    script:
        "../../scripts/run_entry.py"


rule tabulate_pareto:
    input:
        points=pareto_point_files(),
        findings="results/tables/findings.csv",
        code=library_package("agentmem/sweeps/pareto"),
    output:
        points="results/pareto/points.csv",
        frontier="results/pareto/frontier.csv",
        budgets="results/pareto/budgets.csv",
        findings="results/pareto/findings.csv",
        md="results/pareto/pareto.md",
    log:
        "results/logs/tabulate_pareto.log",
    benchmark:
        "results/benchmarks/tabulate_pareto.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        entry="agentmem.sweeps.pareto.report:tabulate_job",
        budgets_ms=list(CFG.pareto.budgets_ms),
        # the headline results directory (results/tables/findings.csv is two levels down)
        results_dir=lambda w, input: str(Path(input.findings).parents[1]),
        main_size=MAIN,
    script:
        "../../scripts/run_entry.py"


use rule plot_ndcg_heatmap as plot_pareto with:
    input:
        table="results/pareto/points.csv",
        code=[
            library_file("agentmem/report/figures/pareto.py"),
            library_file("agentmem/report/figures/_pareto.py"),
        ],
    output:
        svg=report(
            "results/figures/pareto.svg",
            caption="../report/pareto.rst",
            category="Operating points",
        ),
        png="results/figures/pareto.png",
    log:
        "results/logs/plot_pareto.log",
    benchmark:
        "results/benchmarks/plot_pareto.tsv"
    params:
        figure="pareto",


use rule plot_ndcg_heatmap as plot_pareto_classes with:
    input:
        table="results/pareto/points.csv",
        code=[
            library_file("agentmem/report/figures/pareto_classes.py"),
            library_file("agentmem/report/figures/_pareto.py"),
        ],
    output:
        svg=report(
            "results/figures/pareto_classes.svg",
            caption="../report/pareto_classes.rst",
            category="Operating points",
        ),
        png="results/figures/pareto_classes.png",
    log:
        "results/logs/plot_pareto_classes.log",
    benchmark:
        "results/benchmarks/plot_pareto_classes.tsv"
    params:
        figure="pareto_classes",


use rule plot_ndcg_heatmap as plot_pareto_storage with:
    input:
        table="results/pareto/points.csv",
        code=[
            library_file("agentmem/report/figures/pareto_storage.py"),
            library_file("agentmem/report/figures/_pareto.py"),
        ],
    output:
        svg=report(
            "results/figures/pareto_storage.svg",
            caption="../report/pareto_storage.rst",
            category="Operating points",
        ),
        png="results/figures/pareto_storage.png",
    log:
        "results/logs/plot_pareto_storage.log",
    benchmark:
        "results/benchmarks/plot_pareto_storage.tsv"
    params:
        figure="pareto_storage",
