rule run_crash_trials:
    output:
        "results/trials/crash/{family}.csv",
    params:
        family="{family}",
        trials=CFG.trials.crash.trials,
        seed=CFG.trials.seed,
        record_chars=CFG.trials.crash.record_chars,
        batch_size=CFG.trials.crash.batch_size,
        baseline_records=CFG.trials.crash.baseline_records,
        max_kill_after_ms=CFG.trials.crash.max_kill_after_ms,
        work_dir="results/stores/trials/crash/{family}",
    log:
        "results/logs/run_crash_trials/{family}.log",
    threads: 2
    resources:
        bench_slot=1,
        mem_mb=2000,
    script:
        "../../scripts/run_crash_trials.py"


rule combine_crash_trials:
    input:
        crash_tables(),
    output:
        "results/trials/crash.csv",
    log:
        "results/logs/combine_crash_trials.log",
    threads: 1
    resources:
        mem_mb=500,
    script:
        "../../scripts/combine_crash_trials.py"


rule run_lost_update_trials:
    output:
        "results/trials/lost_update.csv",
    params:
        writers=CFG.trials.lost_update.writers,
        increments=CFG.trials.lost_update.increments,
        modes=list(CFG.trials.lost_update.modes),
        work_dir="results/stores/trials/lost_update",
    log:
        "results/logs/run_lost_update_trials.log",
    threads: 2
    resources:
        bench_slot=1,
        mem_mb=2000,
    script:
        "../../scripts/run_lost_update_trials.py"
