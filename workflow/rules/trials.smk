rule run_crash_trials:
    output:
        table="results/trials/crash/{family}.csv",
        work_dir=directory("results/stores/trials/crash/{family}"),
    log:
        "results/logs/run_crash_trials/{family}.log",
    benchmark:
        "results/benchmarks/run_crash_trials/{family}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    # not a timing job (it counts records, not milliseconds), and mostly waiting on the
    # writer's fsyncs and the kill delay (about a tenth of its wall time on a CPU): it
    # takes no core from --cores (threads 0) and runs beside the other jobs at nice 19,
    # one family at a time (crash_slot)
    threads: 0
    resources:
        crash_slot=1,
        mem_mb=2000,
    params:
        family="{family}",
        settings=CFG.trials.crash.model_dump(),
        seed=CFG.trials.seed,
    script:
        "../../scripts/run_crash_trials.py"


rule combine_crash_trials:
    input:
        crash_tables(),
    output:
        "results/trials/crash.csv",
    log:
        "results/logs/combine_crash_trials.log",
    benchmark:
        "results/benchmarks/combine_crash_trials.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=500,
    script:
        "../../scripts/combine_tables.py"


rule run_lost_update_trials:
    output:
        table="results/trials/lost_update.csv",
        work_dir=directory("results/stores/trials/lost_update"),
    log:
        "results/logs/run_lost_update_trials.log",
    benchmark:
        "results/benchmarks/run_lost_update_trials.tsv"
    # a timing job: the chain of them bounds the run, so it goes before untimed jobs; one
    # thread (its writer processes are not pinned), since a 2-thread job waits until both
    # cores are free at once, which under --cores 2 happens only at a run's end
    priority: 20
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        bench_slot=1,
        background_slot=1,  # a timing job holds one too (profiles/default/config.yaml)
        mem_mb=2000,
    params:
        settings=CFG.trials.lost_update.model_dump(),
    script:
        "../../scripts/run_lost_update_trials.py"


rule run_fleet_trials:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", corpus=f"results/corpus/{FLEET_SIZE}"),
        embeddings=f"results/embeddings/{FLEET_SIZE}.parquet",
        sources=fleet_sources(),
    output:
        table="results/trials/fleet.csv",
        work_dir=directory("results/stores/trials/fleet"),
    log:
        "results/logs/run_fleet_trials.log",
    benchmark:
        "results/benchmarks/run_fleet_trials.tsv"
    # a timing job (throughput and latency); its agent processes take every core there is,
    # which is what N > cores measures (contention), so it holds bench_slot like the others
    priority: 20
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        bench_slot=1,
        background_slot=1,  # a timing job holds one too (profiles/default/config.yaml)
        mem_mb=8000,
    params:
        arms=FLEET_ARMS,
        arm_params={a: dict(CFG.arm_params.get(a, {})) for a in FLEET_ARMS},
        settings=CFG.trials.fleet.model_dump(),
        seed=CFG.trials.seed,
    script:
        "../../scripts/run_fleet_trials.py"


rule probe_update_anomaly:
    input:
        **corpus_files(*CORPUS_TABLES, "queries", "qrels"),
        embeddings="results/embeddings/{size}.parquet",
        store="results/stores/{size}/{arm}",
        source=library_file("agentmem/trials/anomaly.py"),
    output:
        "results/trials/anomaly/{size}/{arm}.csv",
    log:
        "results/logs/probe_update_anomaly/{size}/{arm}.log",
    benchmark:
        "results/benchmarks/probe_update_anomaly/{size}/{arm}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: background_threads
    # untimed (counts restatements reached): runs beside the timing jobs
    resources:
        background_slot=1,
        mem_mb=2000,
    params:
        arm="{arm}",
        arm_params=arm_params,
        settings=CFG.trials.anomaly.model_dump(),
    script:
        "../../scripts/run_anomaly_probe.py"


rule combine_anomaly_probes:
    input:
        anomaly_tables(),
    output:
        "results/trials/anomaly.csv",
    log:
        "results/logs/combine_anomaly_probes.log",
    benchmark:
        "results/benchmarks/combine_anomaly_probes.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=500,
    script:
        "../../scripts/combine_tables.py"


rule summarise_restatements:
    input:
        **corpus_files(*CORPUS_TABLES),
        code=library_file("agentmem/corpus/spec.py"),
    output:
        "results/trials/restatements/{size}.json",
    log:
        "results/logs/summarise_restatements/{size}.log",
    benchmark:
        "results/benchmarks/summarise_restatements/{size}.tsv"
    conda:
        "../../envs/agentmem.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../../scripts/summarise_restatements.py"
