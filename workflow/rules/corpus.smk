rule generate_corpus:
    input:
        # the generator is library code: editing it regenerates the corpus
        generate=library_file("agentmem/corpus/generate.py"),
        world=library_file("agentmem/corpus/world.py"),
        templates=library_file("agentmem/corpus/templates.py"),
        queries=library_file("agentmem/corpus/queries.py"),
    output:
        memories="results/corpus/{size}/memories.parquet",
        facts="results/corpus/{size}/facts.parquet",
        entities="results/corpus/{size}/entities.parquet",
        sessions="results/corpus/{size}/sessions.parquet",
        agents="results/corpus/{size}/agents.parquet",
        queries="results/corpus/{size}/queries.parquet",
        qrels="results/corpus/{size}/qrels.parquet",
        manifest="results/corpus/{size}/manifest.json",
    log:
        "results/logs/generate_corpus/{size}.log",
    benchmark:
        "results/benchmarks/generate_corpus/{size}.tsv"
    # untimed, seconds: every encoder and timing job waits for a corpus, so it goes first
    # (before the untimed jobs that need no input) and is not niced
    priority: 50
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        size=size_params,
        corpus=CFG.corpus.model_dump(),
    script:
        "../../scripts/generate_corpus.py"


rule validate_corpus:
    input:
        memories="results/corpus/{size}/memories.parquet",
        queries="results/corpus/{size}/queries.parquet",
        qrels="results/corpus/{size}/qrels.parquet",
        manifest="results/corpus/{size}/manifest.json",
        embeddings="results/embeddings/{size}.parquet",
        code=library_file("agentmem/corpus/validation.py"),
        spec=library_file("agentmem/corpus/spec.py"),
    output:
        table="results/tables/validation_{size}.csv",
        probe="results/tables/dense_probe_{size}.csv",
        spec="results/tables/corpus_spec_{size}.csv",
    log:
        "results/logs/validate_corpus/{size}.log",
    benchmark:
        "results/benchmarks/validate_corpus/{size}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        random_pairs=CFG.validation.random_pairs,
        seed=CFG.corpus.seed,
    script:
        "../../scripts/validate_corpus.py"


rule publish_validation:
    input:
        table=f"results/tables/validation_{MAIN}.csv",
        spec=f"results/tables/corpus_spec_{MAIN}.csv",
    output:
        table=report(
            "results/tables/validation.csv",
            caption="../report/validation.rst",
            category="Corpus",
        ),
        spec=report(
            "results/tables/corpus_spec.csv",
            caption="../report/corpus_spec.rst",
            category="Corpus",
        ),
    log:
        "results/logs/publish_validation.log",
    benchmark:
        "results/benchmarks/publish_validation.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=500,
    script:
        "../../scripts/publish_validation.py"
