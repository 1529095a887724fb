# agentmem: the reproducible experiment pipeline for agent-memory storage architectures.
# Wiring only: see workflow/rules/*.smk for the rules and src/agentmem for the logic.
from snakemake.utils import min_version

min_version("9.0")

# the job-rate limit's timers (profiles/default) never keep the command waiting after a
# run, however it ends (agentmem.jobs)
from agentmem.jobs import cancel_pending_timers_at_exit, sparser_benchmark_samples

cancel_pending_timers_at_exit()
# each job's benchmark sampled every 5 s, not 0.5 s, in its first 30 samples: the samples
# cost the smoke workflow 9 % of its CPU, mostly kernel time (agentmem.jobs)
sparser_benchmark_samples()


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


report: "workflow/report/workflow.rst"


include: "workflow/rules/corpus.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/arms.smk"
include: "workflow/rules/trials.smk"
include: "workflow/rules/sweeps.smk"
include: "workflow/rules/external.smk"
include: "workflow/rules/seed_systems.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/robustness.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/pareto.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),


onsuccess:
    # say where the report is (when this run built or kept it)
    if Path("results/report/index.html").is_file():
        print(f"Report: {Path('results/report/index.html').resolve()}")
    # where this run's time went: results/bench/timeline.{csv,md,svg} (when any job ran); a
    # failure here is a warning, never a failed run
    try:
        from agentmem.bench.timeline import run_timeline

        groups = {r.name: Path(r.snakefile).stem for r in workflow.rules}
        line = run_timeline(log, "results/bench", groups)
        if line:
            print(line)
    except Exception as exc:
        print(f"Warning: no timeline of this run ({type(exc).__name__}: {exc})")
    # exit now, not when the job-rate limit's last timer fires (agentmem.jobs)
    from agentmem.jobs import cancel_pending_timers

    cancel_pending_timers()


onerror:
    from agentmem.jobs import cancel_pending_timers

    cancel_pending_timers()
