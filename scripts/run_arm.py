from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

# a timing job (holds bench_slot), except the untimed external-dataset runs (params.background)
start_job(snakemake, background=snakemake.params.get("background", False))

# Build ONE arm from scratch and run every query (agentmem.runner.run_arm_settings).
# params: arm, arm_params, k, warmup, repeats, min_time_ms (default 0); optional background
#         (see above) and settings (the external datasets': the settings, e.g. ["scoped",
#         "unscoped"], whose queries run on the one build; default: scoped only) and batch
#         (one untimed pass through the arm's batch search, latency null; default False)
# input: the corpus files the runner reads (memories, sessions, facts, entities, queries),
#        embeddings
# output: store (the arm's store directory); runs, build, plans: one file each, or with
#         settings one per setting, in their order
import sys

from agentmem.runner import RunFiles, run_arm_settings

p = snakemake.params
out = snakemake.output
settings = p.get("settings") or ["scoped"]
runs, builds, plans = (
    [f] if isinstance(f, str) else list(f) for f in (out.runs, out.build, out.plans)
)
files = [
    RunFiles(setting != "unscoped", *paths)
    for setting, *paths in zip(settings, runs, builds, plans, strict=True)
]
records = run_arm_settings(
    p.arm,
    p.arm_params,
    corpus_dir(snakemake.input, *CORPUS_TABLES, "queries"),
    snakemake.input.embeddings,
    out.store,
    files,
    k=p.k,
    warmup=p.warmup,
    repeats=p.repeats,
    min_time_ms=p.get("min_time_ms", 0.0),
    batch=p.get("batch", False),
)
for record in records:
    print(f"build: {record}", file=sys.stderr)
