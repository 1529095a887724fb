# The capture (every headline number in one JSON), the comparison with the published
# study and the HTML report.


rule write_capture:
    input:
        by_class="results/tables/by_class.csv",
        builds=main_builds(),
        manifest=f"results/corpus/{MAIN}/manifest.json",
        crash="results/trials/crash.csv",
        lost_update="results/trials/lost_update.csv",
        fleet="results/trials/fleet.csv",
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


rule compare_reference:
    input:
        # every file agentmem.report.reference.compare reads under results/
        **corpus_files("manifest", "entities", "queries", "qrels", corpus=MAIN_CORPUS),
        capture="results/capture.json",
        ci="results/tables/bootstrap_ci.csv",
        manifests=expand("results/corpus/{size}/manifest.json", size=CORPUS_SIZES),
        restatements=f"results/trials/restatements/{MAIN}.json",
        validation="results/tables/validation.csv",
        dense_probe=f"results/tables/dense_probe_{MAIN}.csv",
        by_class="results/tables/by_class.csv",
        builds=main_builds(),
        fill_rate="results/tables/fill_rate.csv",
        budget="results/sweeps/budget.csv",
        postfilter="results/sweeps/postfilter.csv",
        scaling="results/sweeps/scaling.csv",
        crash="results/trials/crash.csv",
        lost_update="results/trials/lost_update.csv",
        anomaly="results/trials/anomaly.csv",
        study_cells=study_cells(),
        code=[
            *library_package("agentmem/report/reference"),
            *library_package("agentmem/report/reference/data", "*.yaml"),
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


rule render_report:
    input:
        capture="results/capture.json",
        capabilities="results/tables/capabilities.md",
        figures=report_figures(),
        vs_reference="results/tables/vs_reference.csv",
        bootstrap="results/tables/bootstrap_ci.csv",
        paired="results/tables/paired_bootstrap.csv",
        external=external_scores(),
        findings="results/tables/findings.csv",
        findings_seeds="results/tables/findings_seeds.csv",
        seed_spread="results/tables/by_class_seeds.csv",
        study_cells=study_cells(),
        pareto=pareto_tables(),
        captions=captions(),
        code=[
            library_file("agentmem/report/html.py"),
            library_file("agentmem/report/templates/report.html.j2"),
        ],
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
    params:
        external_units=external_units(),
    script:
        "../../scripts/render_report.py"
