# Figures: one rule per figure, each drawn by agentmem.report.figures.<params.figure>.plot
# through scripts/plot_figure.py. plot_ndcg_heatmap is written out; every other plot rule
# is it with its own input, output, log, benchmark and params.


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
    params:
        figure="ndcg_heatmap",
    script:
        "../../scripts/plot_figure.py"


use rule plot_ndcg_heatmap as plot_overall with:
    input:
        table="results/tables/bootstrap_ci.csv",
        seeds="results/tables/by_class_seeds.csv",
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
    params:
        figure="overall",


use rule plot_ndcg_heatmap as plot_latency with:
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
    params:
        figure="latency",


use rule plot_ndcg_heatmap as plot_crash with:
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
    params:
        figure="crash",


use rule plot_ndcg_heatmap as plot_lost_update with:
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
    params:
        figure="lost_update",


use rule plot_ndcg_heatmap as plot_fleet with:
    input:
        table="results/trials/fleet.csv",
        code=library_file("agentmem/report/figures/fleet.py"),
    output:
        svg=report(
            "results/figures/fleet.svg",
            caption="../report/fleet.rst",
            category="Integrity trials",
        ),
        png="results/figures/fleet.png",
    log:
        "results/logs/plot_fleet.log",
    benchmark:
        "results/benchmarks/plot_fleet.tsv"
    params:
        figure="fleet",


use rule plot_ndcg_heatmap as plot_anomaly with:
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
    params:
        figure="anomaly",


use rule plot_ndcg_heatmap as plot_postfilter with:
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
    params:
        figure="postfilter",


use rule plot_ndcg_heatmap as plot_budget with:
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
    params:
        figure="budget",


use rule plot_ndcg_heatmap as plot_scaling with:
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
    params:
        figure="scaling",


use rule plot_ndcg_heatmap as plot_validation with:
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
    params:
        figure="validation",


use rule plot_ndcg_heatmap as plot_er_diagram with:
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
    params:
        figure="er_diagram",


use rule plot_ndcg_heatmap as plot_storage with:
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
    params:
        figure="storage",
        arms=ARM_NAMES,


use rule plot_ndcg_heatmap as plot_capabilities with:
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
    params:
        figure="capabilities",
        arms=ARM_NAMES,


use rule plot_ndcg_heatmap as plot_conversation with:
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
    params:
        figure="conversation",


use rule plot_ndcg_heatmap as plot_decay with:
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
    params:
        figure="decay",


use rule plot_ndcg_heatmap as plot_external with:
    input:
        table="results/external/{dataset}/scores.csv",
        code=library_file("agentmem/report/figures/external.py"),
    output:
        svg=report(
            "results/figures/external-{dataset}.svg",
            caption="../report/external.rst",
            category="External datasets",
            subcategory="{dataset}",
        ),
        png="results/figures/external-{dataset}.png",
    log:
        "results/logs/plot_external/{dataset}.log",
    benchmark:
        "results/benchmarks/plot_external/{dataset}.tsv"
    params:
        figure="external",
        options=external_figure_options,


use rule plot_ndcg_heatmap as plot_findings with:
    input:
        table="results/tables/findings.csv",
        code=library_file("agentmem/report/figures/findings.py"),
    output:
        svg=report(
            "results/figures/findings.svg",
            caption="../report/findings.rst",
            category="Reference",
        ),
        png="results/figures/findings.png",
    log:
        "results/logs/plot_findings.log",
    benchmark:
        "results/benchmarks/plot_findings.tsv"
    params:
        figure="findings",


use rule plot_ndcg_heatmap as plot_study_cells with:
    input:
        table="results/tables/study_cells.csv",
        code=library_file("agentmem/report/figures/study_cells.py"),
    output:
        svg=report(
            "results/figures/study_cells.svg",
            caption="../report/study_cells.rst",
            category="Reference",
        ),
        png="results/figures/study_cells.png",
    log:
        "results/logs/plot_study_cells.log",
    benchmark:
        "results/benchmarks/plot_study_cells.tsv"
    params:
        figure="study_cells",
