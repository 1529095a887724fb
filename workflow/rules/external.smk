# External datasets (config `external`): LoCoMo converted into one agentmem-memory dataset
# per memory unit, and datasets in that format (docs/DATASETS.md), each prepared into the
# corpus contract, embedded, run by the arms of its entry (every arm by default) in each
# of its settings and scored.


rule convert_locomo:
    input:
        locomo_source,
    output:
        dataset="results/external/{locomo}/source/{unit}/dataset.json",
        corpus="results/external/{locomo}/source/{unit}/corpus.jsonl",
        queries="results/external/{locomo}/source/{unit}/queries.jsonl",
        qrels="results/external/{locomo}/source/{unit}/qrels.tsv",
        labels="results/external/{locomo}/source/{unit}/labels.csv",
        conversion="results/external/{locomo}/source/{unit}/conversion.json",
    log:
        "results/logs/convert_locomo/{locomo}-{unit}.log",
    benchmark:
        "results/benchmarks/convert_locomo/{locomo}-{unit}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        path=locomo_path,
        limit_conversations=locomo_limit,
        unit="{unit}",
    script:
        "../../scripts/convert_locomo.py"


rule prepare_external:
    input:
        external_source,
    output:
        memories="results/external/{dataset}/corpus/memories.parquet",
        sessions="results/external/{dataset}/corpus/sessions.parquet",
        agents="results/external/{dataset}/corpus/agents.parquet",
        facts="results/external/{dataset}/corpus/facts.parquet",
        entities="results/external/{dataset}/corpus/entities.parquet",
        queries="results/external/{dataset}/corpus/queries.parquet",
        qrels="results/external/{dataset}/corpus/qrels.parquet",
        qrels_group="results/external/{dataset}/corpus/qrels_group.parquet",
        evidence="results/external/{dataset}/corpus/evidence.parquet",
        query_evidence="results/external/{dataset}/corpus/query_evidence.parquet",
        issues="results/external/{dataset}/corpus/issues.csv",
        manifest="results/external/{dataset}/corpus/manifest.json",
    log:
        "results/logs/prepare_external/{dataset}.log",
    benchmark:
        "results/benchmarks/prepare_external/{dataset}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        source=external_prepare_params,
    script:
        "../../scripts/prepare_external.py"


rule embed_external:
    input:
        memories="results/external/{dataset}/corpus/memories.parquet",
        queries="results/external/{dataset}/corpus/queries.parquet",
        encoder=encoder_model,
    output:
        "results/external/{dataset}/embeddings.parquet",
    log:
        "results/logs/embed_external/{dataset}.log",
    benchmark:
        "results/benchmarks/embed_external/{dataset}.tsv"
    # an external dataset's runs are untimed: its encoder is not on the timing jobs'
    # critical path, so it runs on one thread in the background lane (background_slot,
    # nice 19: it takes only what the main size's encoder leaves), first among the
    # background jobs but after every timing job (the lowest, run_pareto_point, is 10): a
    # timing job needs a background_slot too, and one a background job took first would
    # leave the timing lane waiting for the next to end
    priority: 9
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    resources:
        background_slot=1,
        mem_mb=4000,
    params:
        background=True,
        encoder_threads=1,
        cache_dir="results/cache/embeddings",
        batch_size=CFG.embedding.batch_size,
        backend=CFG.embedding.backend,
    script:
        "../../scripts/embed_texts.py"


# one job per (dataset, arm) of an entry that runs both settings: the store is built once
# and both settings' queries run on it (queries only read the store)
rule run_arm_external:
    input:
        **corpus_files(
            *CORPUS_TABLES, "queries", corpus="results/external/{dataset}/corpus"
        ),
        embeddings="results/external/{dataset}/embeddings.parquet",
        sources=arm_sources,
    output:
        store=directory("results/stores/external/{dataset}/{arm}"),
        runs=expand(
            "results/external/{{dataset}}/runs/{setting}/{{arm}}.parquet",
            setting=EXTERNAL_SETTINGS,
        ),
        build=expand(
            "results/external/{{dataset}}/builds/{setting}/{{arm}}.json",
            setting=EXTERNAL_SETTINGS,
        ),
        plans=expand(
            "results/external/{{dataset}}/plans/{setting}/{{arm}}.json",
            setting=EXTERNAL_SETTINGS,
        ),
    log:
        "results/logs/run_arm_external/{dataset}/{arm}.log",
    benchmark:
        "results/benchmarks/run_arm_external/{dataset}/{arm}.tsv"
    wildcard_constraints:
        dataset=external_ids_regex(both=True),
    # the runs of a costlier arm (its query_cost) first: the longest does not end the study
    priority: external_priority
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    # external datasets report retrieval quality only (no latency figure or table reads
    # these runs), so this is not a timing job: no bench_slot, one untimed pass per query
    # by default (through the arms' batch search), at nice 19, a heavy background job (one
    # background_slot); k is the deepest recall cut-off scored (R@50)
    resources:
        background_slot=1,
        mem_mb=4000,
    params:
        arm="{arm}",
        arm_params=arm_params,
        k=RUN_K,
        warmup=external_warmup,
        repeats=external_repeats,
        batch=external_batch,
        settings=external_job_settings,
        background=True,
    script:
        "../../scripts/run_arm.py"


# one setting of an entry that runs one (its own, or the other: one target away, e.g.
# results/external/<id>/runs/unscoped/<arm>.parquet), on a store of its own
use rule run_arm_external as run_arm_external_setting with:
    output:
        store=directory("results/stores/external/{dataset}/{setting}/{arm}"),
        runs="results/external/{dataset}/runs/{setting}/{arm}.parquet",
        build="results/external/{dataset}/builds/{setting}/{arm}.json",
        plans="results/external/{dataset}/plans/{setting}/{arm}.json",
    log:
        "results/logs/run_arm_external/{dataset}/{setting}/{arm}.log",
    benchmark:
        "results/benchmarks/run_arm_external/{dataset}/{setting}/{arm}.tsv"
    wildcard_constraints:
        dataset=external_ids_regex(both=False),


rule score_external:
    input:
        memories="results/external/{dataset}/corpus/memories.parquet",
        queries="results/external/{dataset}/corpus/queries.parquet",
        qrels="results/external/{dataset}/corpus/qrels.parquet",
        qrels_group="results/external/{dataset}/corpus/qrels_group.parquet",
        evidence="results/external/{dataset}/corpus/evidence.parquet",
        query_evidence="results/external/{dataset}/corpus/query_evidence.parquet",
        manifest="results/external/{dataset}/corpus/manifest.json",
        runs=external_runs_of,
        code=library_package("agentmem/external"),
    output:
        scores=report(
            "results/external/{dataset}/scores.csv",
            caption="../report/external_scores.rst",
            category="External datasets",
            subcategory="{dataset}",
        ),
        ci="results/external/{dataset}/scores_ci.csv",
        comparison="results/external/{dataset}/vs_published.md",
    log:
        "results/logs/score_external/{dataset}.log",
    benchmark:
        "results/benchmarks/score_external/{dataset}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        run_keys=external_run_keys,
        tuning_scopes=external_tuning_scopes,
        unit=published_unit,
        n_boot=CFG.report.n_boot,
    script:
        "../../scripts/score_external.py"


# each ablation of an arm that declares them (sqlite-gated), on the dataset's scoped store:
# what every choice is worth on real conversations, beside results/sweeps/ablation.csv
use rule run_ablation_sweep as run_ablation_external with:
    input:
        **corpus_files(
            *CORPUS_TABLES,
            "queries",
            "qrels",
            corpus="results/external/{dataset}/corpus",
        ),
        embeddings="results/external/{dataset}/embeddings.parquet",
        stores=external_ablation_stores,
        runs=external_ablation_runs,
        code=library_file("agentmem/sweeps/ablation.py"),
    output:
        csv="results/external/{dataset}/ablation.csv",
        md="results/external/{dataset}/ablation.md",
    log:
        "results/logs/run_ablation_external/{dataset}.log",
    benchmark:
        "results/benchmarks/run_ablation_external/{dataset}.tsv"
    params:
        arms=external_ablation_arms,
        k=CFG.run.k,
        run_k=RUN_K,
        arm_params=dict(CFG.arm_params),
