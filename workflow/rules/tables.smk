# Tables from the runs (per class, capabilities, fill rates, HNSW recall, bootstrap
# intervals) and the schema texts.


rule tabulate_by_class:
    input:
        metrics=main_metrics(),
        code=library_file("agentmem/report/tables.py"),
    output:
        csv=report(
            "results/tables/by_class.csv",
            caption="../report/by_class.rst",
            category="Retrieval",
            labels={"table": "by class (csv)"},
        ),
        md="results/tables/by_class.md",
    log:
        "results/logs/tabulate_by_class.log",
    benchmark:
        "results/benchmarks/tabulate_by_class.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        arms=ARM_NAMES,
        timing=CFG.run.model_dump(),
    script:
        "../../scripts/tabulate_by_class.py"


rule tabulate_capabilities:
    input:
        library_file("agentmem/arms/__init__.py"),
    output:
        report(
            "results/tables/capabilities.md",
            caption="../report/capabilities.rst",
            category="Architectures",
        ),
    log:
        "results/logs/tabulate_capabilities.log",
    benchmark:
        "results/benchmarks/tabulate_capabilities.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        arms=ARM_NAMES,
    script:
        "../../scripts/tabulate_capabilities.py"


rule measure_hnsw_recall:
    input:
        embeddings="results/embeddings/{size}.parquet",
        memories="results/corpus/{size}/memories.parquet",
        queries="results/corpus/{size}/queries.parquet",
    output:
        "results/tables/hnsw_recall_{size}.json",
    log:
        "results/logs/measure_hnsw_recall/{size}.log",
    benchmark:
        "results/benchmarks/measure_hnsw_recall/{size}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        k=CFG.run.k,
    script:
        "../../scripts/measure_hnsw_recall.py"


rule tabulate_fill_rates:
    input:
        runs=expand("results/runs/{size}/{arm}.parquet", size=MAIN, arm=ARM_NAMES),
        memories=f"results/corpus/{MAIN}/memories.parquet",
        queries=f"results/corpus/{MAIN}/queries.parquet",
    output:
        "results/tables/fill_rate.csv",
    log:
        "results/logs/tabulate_fill_rates.log",
    benchmark:
        "results/benchmarks/tabulate_fill_rates.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        arms=ARM_NAMES,
        k=CFG.run.k,
    script:
        "../../scripts/tabulate_fill_rates.py"


rule bootstrap_metrics:
    input:
        metrics=main_metrics(),
        code=library_file("agentmem/report/stats.py"),
    output:
        ci="results/tables/bootstrap_ci.csv",
        paired="results/tables/paired_bootstrap.csv",
    log:
        "results/logs/bootstrap_metrics.log",
    benchmark:
        "results/benchmarks/bootstrap_metrics.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        arms=ARM_NAMES,
        pairs=paired_tests(CFG),
        n_boot=CFG.report.n_boot,
        seed=CFG.corpus.seed,
    script:
        "../../scripts/bootstrap_metrics.py"


rule render_schema:
    input:
        code=library_file("agentmem/schema.py"),
    output:
        mermaid="results/schema/er.mmd",
        dot="results/schema/er.dot",
        sqlite="results/schema/sqlite.sql",
        postgres="results/schema/postgres.sql",
    log:
        "results/logs/render_schema.log",
    benchmark:
        "results/benchmarks/render_schema.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=500,
    script:
        "../../scripts/render_schema.py"
