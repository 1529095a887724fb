# The further corpora (config `robustness`, agentmem.robustness): corpus seeds and design
# variants, each generated, embedded, run by the robustness arms (untimed, one call per
# query), scored and validated under results/robustness/<id>/ in the layout of results/,
# then the study's twelve findings checked on every one of them (results/tables/findings.*),
# under the arms as shipped and under the study's implementation choices.
# Every job here is untimed and runs in the background lane, at nice 19.


use rule generate_corpus as generate_robustness_corpus with:
    output:
        memories=f"{ROB}/corpus/{{size}}/memories.parquet",
        facts=f"{ROB}/corpus/{{size}}/facts.parquet",
        entities=f"{ROB}/corpus/{{size}}/entities.parquet",
        sessions=f"{ROB}/corpus/{{size}}/sessions.parquet",
        agents=f"{ROB}/corpus/{{size}}/agents.parquet",
        queries=f"{ROB}/corpus/{{size}}/queries.parquet",
        qrels=f"{ROB}/corpus/{{size}}/qrels.parquet",
        manifest=f"{ROB}/corpus/{{size}}/manifest.json",
    log:
        "results/logs/generate_robustness_corpus/{variant}/{size}.log",
    benchmark:
        "results/benchmarks/generate_robustness_corpus/{variant}/{size}.tsv"
    priority: 0
    params:
        size=robustness_size_params,
        corpus=robustness_options,


# the study's own corpus is read from its generator's file, not generated
ruleorder: import_study_corpus > generate_robustness_corpus


rule import_study_corpus:
    input:
        source=study_corpus_source,
        code=library_file("agentmem/corpus/study.py"),
        io=library_file("agentmem/corpus/io.py"),
    output:
        memories=f"{STUDY_ROB}/corpus/{{size}}/memories.parquet",
        facts=f"{STUDY_ROB}/corpus/{{size}}/facts.parquet",
        entities=f"{STUDY_ROB}/corpus/{{size}}/entities.parquet",
        sessions=f"{STUDY_ROB}/corpus/{{size}}/sessions.parquet",
        agents=f"{STUDY_ROB}/corpus/{{size}}/agents.parquet",
        queries=f"{STUDY_ROB}/corpus/{{size}}/queries.parquet",
        qrels=f"{STUDY_ROB}/corpus/{{size}}/qrels.parquet",
        manifest=f"{STUDY_ROB}/corpus/{{size}}/manifest.json",
    log:
        "results/logs/import_study_corpus/{size}.log",
    benchmark:
        "results/benchmarks/import_study_corpus/{size}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        entry="agentmem.corpus.study:import_job",
    script:
        "../../scripts/run_entry.py"


use rule embed_external as embed_robustness with:
    input:
        memories=f"{ROB}/corpus/{{size}}/memories.parquet",
        queries=f"{ROB}/corpus/{{size}}/queries.parquet",
        encoder=robustness_encoder,
        # a design variant reads most of its texts from the cache the headline encoder of
        # its size fills; a seed or a further model shares none and starts at once
        after=robustness_encoder_after,
    output:
        f"{ROB}/embeddings/{{size}}.parquet",
    log:
        "results/logs/embed_robustness/{variant}/{size}.log",
    benchmark:
        "results/benchmarks/embed_robustness/{variant}/{size}.tsv"
    # a further corpus is a chain (encoder, then the check, then the findings table) that
    # ends the run if it starts last: its two jobs go before the other untimed ones (the
    # LoCoMo runs, the sweeps), whose many short jobs then fill the run's tail instead
    priority: 5
    params:
        background=True,
        encoder_threads=1,
        cache_dir="results/cache/embeddings",
        batch_size=CFG.embedding.batch_size,
        backend=CFG.embedding.backend,
        model=lambda wc: ROBUSTNESS[wc.variant].model,


rule check_robustness_corpus:
    input:
        **corpus_files(
            *CORPUS_TABLES, "queries", "qrels", corpus=f"{ROB}/corpus/{{size}}"
        ),
        embeddings=f"{ROB}/embeddings/{{size}}.parquet",
        sources=robustness_arm_sources,
    output:
        stores=directory("results/stores/robustness/{variant}/{size}"),
        runs=robustness_outputs("runs/{size}/{arm}.parquet"),
        builds=robustness_outputs("builds/{size}/{arm}.json"),
        plans=robustness_outputs("plans/{size}/{arm}.json"),
        metrics=robustness_outputs("metrics/{size}/{arm}.parquet"),
        by_class_csv=f"{ROB}/tables/by_class_{{size}}.csv",
        by_class_md=f"{ROB}/tables/by_class_{{size}}.md",
        choices=f"{ROB}/tables/choices_{{size}}.csv",
        anomaly=f"{ROB}/trials/anomaly_{{size}}.csv",
        postfilter=f"{ROB}/sweeps/postfilter_{{size}}.csv",
    log:
        "results/logs/check_robustness_corpus/{variant}/{size}.log",
    benchmark:
        "results/benchmarks/check_robustness_corpus/{variant}/{size}.tsv"
    priority: 5  # right after its encoder (see embed_robustness)
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    # quality only (the findings read no latency of these runs): one untimed pass of every
    # arm (its batch search), then the anomaly probe and the post-filter sweep on the stores built;
    # one job per corpus (a job per arm and probe would triple the run's job count)
    resources:
        background_slot=1,
        mem_mb=4000,
    params:
        arms=ROBUSTNESS_ARMS,
        arm_params=dict(CFG.arm_params),
        k=CFG.run.k,
        # the study's implementation choices (agentmem.choices.RUNS_BY_KIND), on the stores built
        choices=robustness_choices,
        anomaly={
            "arms": robustness_anomaly_arms(),
            "settings": CFG.trials.anomaly.model_dump(),
        },
        # the findings read the fill rate at the least and the most overfetch
        postfilter={
            "arms": robustness_swept_arms(),
            "overfetch": sorted(
                {min(CFG.sweeps.overfetch), max(CFG.sweeps.overfetch)}
            ),
        },
    script:
        "../../scripts/check_robustness_corpus.py"


use rule validate_corpus as validate_robustness_corpus with:
    input:
        memories=f"{ROB}/corpus/{{size}}/memories.parquet",
        queries=f"{ROB}/corpus/{{size}}/queries.parquet",
        qrels=f"{ROB}/corpus/{{size}}/qrels.parquet",
        manifest=f"{ROB}/corpus/{{size}}/manifest.json",
        embeddings=f"{ROB}/embeddings/{{size}}.parquet",
        code=library_file("agentmem/corpus/validation.py"),
        spec=library_file("agentmem/corpus/spec.py"),
    output:
        table=f"{ROB}/tables/validation_{{size}}.csv",
        probe=f"{ROB}/tables/dense_probe_{{size}}.csv",
        spec=f"{ROB}/tables/corpus_spec_{{size}}.csv",
    log:
        "results/logs/validate_robustness_corpus/{variant}/{size}.log",
    benchmark:
        "results/benchmarks/validate_robustness_corpus/{variant}/{size}.tsv"
    params:
        random_pairs=CFG.validation.random_pairs,
        seed=lambda wc: ROBUSTNESS[wc.variant].options.seed,


rule tabulate_findings:
    input:
        # the headline run's files the findings read (agentmem.report.headline)
        manifests=expand("results/corpus/{size}/manifest.json", size=CORPUS_SIZES),
        by_class="results/tables/by_class.csv",
        choices="results/tables/choices.csv",
        builds=main_builds(),
        validation="results/tables/validation.csv",
        postfilter="results/sweeps/postfilter.csv",
        scaling="results/sweeps/scaling.csv",
        crash="results/trials/crash.csv",
        lost_update="results/trials/lost_update.csv",
        anomaly="results/trials/anomaly.csv",
        further=[f for i in ROBUSTNESS for f in robustness_inputs(i)],
        code=[
            library_file("agentmem/report/headline.py"),
            library_file("agentmem/sweeps/choices.py"),
            *library_package("agentmem/report/reference"),
            *library_package("agentmem/report/reference/data", "*.yaml"),
        ],
    output:
        csv=report(
            "results/tables/findings.csv",
            caption="../report/findings_table.rst",
            category="Reference",
        ),
        md="results/tables/findings.md",
        seeds="results/tables/findings_seeds.csv",
    log:
        "results/logs/tabulate_findings.log",
    benchmark:
        "results/benchmarks/tabulate_findings.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        corpora=findings_corpora(),
        main_size=MAIN,
    script:
        "../../scripts/tabulate_findings.py"


rule tabulate_study_cells:
    input:
        by_class=f"{STUDY_ROB}/tables/by_class_{MAIN}.csv",
        choices=f"{STUDY_ROB}/tables/choices_{MAIN}.csv",
        code=[
            library_file("agentmem/report/study_cells.py"),
            library_file("agentmem/sweeps/choices.py"),
            *library_package("agentmem/report/reference"),
        ],
    output:
        csv=report(
            "results/tables/study_cells.csv",
            caption="../report/study_cells_table.rst",
            category="Reference",
        ),
        md="results/tables/study_cells.md",
    log:
        "results/logs/tabulate_study_cells.log",
    benchmark:
        "results/benchmarks/tabulate_study_cells.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        entry="agentmem.report.study_cells:study_cells_job",
    script:
        "../../scripts/run_entry.py"


rule tabulate_seed_spread:
    input:
        by_class=list(seed_by_class().values()),
        bootstrap="results/tables/bootstrap_ci.csv",
        code=library_file("agentmem/report/stats.py"),
    output:
        report(
            "results/tables/by_class_seeds.csv",
            caption="../report/by_class_seeds.rst",
            category="Reference",
        ),
    log:
        "results/logs/tabulate_seed_spread.log",
    benchmark:
        "results/benchmarks/tabulate_seed_spread.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        labels=list(seed_by_class()),
        arms=ROBUSTNESS_ARMS,
    script:
        "../../scripts/tabulate_seed_spread.py"
