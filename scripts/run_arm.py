from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

# a timing job (holds bench_slot), except the untimed external-dataset runs (params.background)
start_job(snakemake, background=snakemake.params.get("background", False))

# Build ONE arm from scratch and run every query (agentmem.runner.run_arm).
# params: arm, arm_params, k, warmup, repeats; optional background (see above) and scoped
#         (False: the queries run without their scope; default True)
# input: the corpus files the runner reads (memories, sessions, facts, entities, queries),
#        embeddings
# output: store (the arm's store directory), runs, build, plans
import sys

from agentmem.runner import run_arm

p = snakemake.params
build = run_arm(
    p.arm,
    p.arm_params,
    corpus_dir(snakemake.input, *CORPUS_TABLES, "queries"),
    snakemake.input.embeddings,
    snakemake.output.store,
    snakemake.output.runs,
    snakemake.output.build,
    snakemake.output.plans,
    k=p.k,
    warmup=p.warmup,
    repeats=p.repeats,
    scoped=p.get("scoped", True),
)
print(f"build: {build}", file=sys.stderr)
