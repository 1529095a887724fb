rule tabulate_by_class:
    input:
        metrics=main_metrics(),
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


rule write_capture:
    input:
        by_class="results/tables/by_class.csv",
        builds=main_builds(),
        manifest=f"results/corpus/{MAIN}/manifest.json",
        crash="results/trials/crash.csv",
        lost_update="results/trials/lost_update.csv",
        anomaly="results/trials/anomaly.csv",
        restatements=f"results/trials/restatements/{MAIN}.json",
        fill_rate="results/tables/fill_rate.csv",
        hnsw_recall=f"results/tables/hnsw_recall_{MAIN}.json",
        postfilter="results/sweeps/postfilter.csv",
        budget="results/sweeps/budget.csv",
        scaling="results/sweeps/scaling.csv",
        scaling_exponents="results/sweeps/scaling_exponents.csv",
        validation="results/tables/validation.csv",
        dense_probe=f"results/tables/dense_probe_{MAIN}.csv",
        conversation_summary="results/sweeps/conversation_summary.csv",
        conversation_tiers="results/sweeps/conversation_tiers.csv",
        decay="results/sweeps/decay.csv",
    output:
        "results/capture.json",
    log:
        "results/logs/write_capture.log",
    benchmark:
        "results/benchmarks/write_capture.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        config=CFG.model_dump(mode="json"),
        main_size=MAIN,
    script:
        "../../scripts/write_capture.py"


rule render_report:
    input:
        capture="results/capture.json",
        capabilities="results/tables/capabilities.md",
        figures=report_figures(),
        vs_reference="results/tables/vs_reference.csv",
        bootstrap="results/tables/bootstrap_ci.csv",
        paired="results/tables/paired_bootstrap.csv",
        locomo=locomo_scores_if_present(),
    output:
        "results/report/index.html",
    log:
        "results/logs/render_report.log",
    benchmark:
        "results/benchmarks/render_report.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=500,
    script:
        "../../scripts/render_report.py"


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


rule plot_ndcg_heatmap:
    input:
        table="results/tables/by_class.csv",
        code=library_file("agentmem/report/figures/ndcg_heatmap.py"),
    output:
        svg=report(
            "results/figures/ndcg_heatmap.svg",
            caption="../report/ndcg_heatmap.rst",
            category="Retrieval",
        ),
        png="results/figures/ndcg_heatmap.png",
    log:
        "results/logs/plot_ndcg_heatmap.log",
    benchmark:
        "results/benchmarks/plot_ndcg_heatmap.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_ndcg_heatmap.py"


rule plot_crash:
    input:
        table="results/trials/crash.csv",
        code=library_file("agentmem/report/figures/crash.py"),
    output:
        svg=report(
            "results/figures/crash.svg",
            caption="../report/crash.rst",
            category="Integrity trials",
        ),
        png="results/figures/crash.png",
    log:
        "results/logs/plot_crash.log",
    benchmark:
        "results/benchmarks/plot_crash.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_crash.py"


rule plot_lost_update:
    input:
        table="results/trials/lost_update.csv",
        code=library_file("agentmem/report/figures/lost_update.py"),
    output:
        svg=report(
            "results/figures/lost_update.svg",
            caption="../report/lost_update.rst",
            category="Integrity trials",
        ),
        png="results/figures/lost_update.png",
    log:
        "results/logs/plot_lost_update.log",
    benchmark:
        "results/benchmarks/plot_lost_update.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_lost_update.py"


rule plot_anomaly:
    input:
        table="results/trials/anomaly.csv",
        code=library_file("agentmem/report/figures/anomaly.py"),
    output:
        svg=report(
            "results/figures/anomaly.svg",
            caption="../report/anomaly.rst",
            category="Integrity trials",
        ),
        png="results/figures/anomaly.png",
    log:
        "results/logs/plot_anomaly.log",
    benchmark:
        "results/benchmarks/plot_anomaly.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_anomaly.py"


rule plot_postfilter:
    input:
        table="results/sweeps/postfilter.csv",
        code=library_file("agentmem/report/figures/postfilter.py"),
    output:
        svg=report(
            "results/figures/postfilter.svg",
            caption="../report/postfilter.rst",
            category="Sweeps",
        ),
        png="results/figures/postfilter.png",
    log:
        "results/logs/plot_postfilter.log",
    benchmark:
        "results/benchmarks/plot_postfilter.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_postfilter.py"


rule plot_budget:
    input:
        table="results/sweeps/budget.csv",
        code=library_file("agentmem/report/figures/budget.py"),
    output:
        svg=report(
            "results/figures/budget.svg",
            caption="../report/budget.rst",
            category="Sweeps",
        ),
        png="results/figures/budget.png",
    log:
        "results/logs/plot_budget.log",
    benchmark:
        "results/benchmarks/plot_budget.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_budget.py"


rule plot_scaling:
    input:
        table="results/sweeps/scaling.csv",
        code=library_file("agentmem/report/figures/scaling.py"),
    output:
        svg=report(
            "results/figures/scaling.svg",
            caption="../report/scaling.rst",
            category="Sweeps",
        ),
        png="results/figures/scaling.png",
    log:
        "results/logs/plot_scaling.log",
    benchmark:
        "results/benchmarks/plot_scaling.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_scaling.py"


rule plot_validation:
    input:
        table="results/tables/validation.csv",
        code=library_file("agentmem/report/figures/validation.py"),
    output:
        svg=report(
            "results/figures/validation.svg",
            caption="../report/validation.rst",
            category="Corpus",
        ),
        png="results/figures/validation.png",
    log:
        "results/logs/plot_validation.log",
    benchmark:
        "results/benchmarks/plot_validation.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_validation.py"


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


rule plot_er_diagram:
    input:
        code=[
            library_file("agentmem/schema.py"),
            library_file("agentmem/report/figures/er_diagram.py"),
        ],
    output:
        svg=report(
            "results/figures/er_diagram.svg",
            caption="../report/er_diagram.rst",
            category="Architectures",
        ),
        png="results/figures/er_diagram.png",
    log:
        "results/logs/plot_er_diagram.log",
    benchmark:
        "results/benchmarks/plot_er_diagram.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_er_diagram.py"


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
        n_boot=2000,
        seed=CFG.corpus.seed,
    script:
        "../../scripts/bootstrap_metrics.py"


rule compare_reference:
    input:
        capture="results/capture.json",
        ci="results/tables/bootstrap_ci.csv",
        code=[
            library_file(f"agentmem/report/reference/{name}")
            for name in (
                "__init__.py",
                "study.py",
                "records.py",
                "published.py",
                "ours.py",
                "lookups.py",
                "findings.py",
                "comparison.py",
                "render.py",
                "data/corpus.yaml",
                "data/queries.yaml",
                "data/arms.yaml",
                "data/experiments.yaml",
            )
        ],
    output:
        md=report(
            "results/tables/vs_reference.md",
            caption="../report/vs_reference.rst",
            category="Reference",
        ),
        csv="results/tables/vs_reference.csv",
    log:
        "results/logs/compare_reference.log",
    benchmark:
        "results/benchmarks/compare_reference.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        main_size=MAIN,
    script:
        "../../scripts/compare_reference.py"


rule plot_overall:
    input:
        table="results/tables/bootstrap_ci.csv",
        code=library_file("agentmem/report/figures/overall.py"),
    output:
        svg=report(
            "results/figures/overall.svg",
            caption="../report/overall.rst",
            category="Retrieval",
        ),
        png="results/figures/overall.png",
    log:
        "results/logs/plot_overall.log",
    benchmark:
        "results/benchmarks/plot_overall.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_overall.py"


rule plot_latency:
    input:
        table="results/tables/by_class.csv",
        code=library_file("agentmem/report/figures/latency.py"),
    output:
        svg=report(
            "results/figures/latency.svg",
            caption="../report/latency.rst",
            category="Retrieval",
        ),
        png="results/figures/latency.png",
    log:
        "results/logs/plot_latency.log",
    benchmark:
        "results/benchmarks/plot_latency.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_latency.py"


rule plot_storage:
    input:
        builds=main_builds(),
        code=library_file("agentmem/report/figures/storage.py"),
    output:
        svg=report(
            "results/figures/storage.svg",
            caption="../report/storage.rst",
            category="Architectures",
        ),
        png="results/figures/storage.png",
    log:
        "results/logs/plot_storage.log",
    benchmark:
        "results/benchmarks/plot_storage.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        arms=ARM_NAMES,
    script:
        "../../scripts/plot_storage.py"


rule plot_capabilities:
    input:
        code=[
            library_file("agentmem/arms/__init__.py"),
            library_file("agentmem/report/figures/capabilities.py"),
        ],
    output:
        svg=report(
            "results/figures/capabilities.svg",
            caption="../report/capabilities.rst",
            category="Architectures",
        ),
        png="results/figures/capabilities.png",
    log:
        "results/logs/plot_capabilities.log",
    benchmark:
        "results/benchmarks/plot_capabilities.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        arms=ARM_NAMES,
    script:
        "../../scripts/plot_capabilities.py"


rule plot_conversation:
    input:
        table="results/sweeps/conversation.csv",
        code=library_file("agentmem/report/figures/conversation.py"),
    output:
        svg=report(
            "results/figures/conversation.svg",
            caption="../report/conversation.rst",
            category="Seed systems",
        ),
        png="results/figures/conversation.png",
    log:
        "results/logs/plot_conversation.log",
    benchmark:
        "results/benchmarks/plot_conversation.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_conversation.py"


rule plot_decay:
    input:
        table="results/sweeps/decay.csv",
        code=library_file("agentmem/report/figures/decay.py"),
    output:
        svg=report(
            "results/figures/decay.svg",
            caption="../report/decay.rst",
            category="Seed systems",
        ),
        png="results/figures/decay.png",
    log:
        "results/logs/plot_decay.log",
    benchmark:
        "results/benchmarks/plot_decay.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/plot_decay.py"
