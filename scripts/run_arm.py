import sys

sys.stderr = open(snakemake.log[0], "w")

from pathlib import Path

from agentmem.io import run_in_background
from agentmem.runner import run_arm

p = snakemake.params
if getattr(p, "background", False):  # LoCoMo: an untimed quality run (rule run_arm_locomo)
    run_in_background()
build = run_arm(
    p.arm,
    p.arm_params,
    Path(snakemake.input.memories).parent,
    snakemake.input.embeddings,
    p.store_dir,
    snakemake.output.runs,
    snakemake.output.build,
    snakemake.output.plans,
    k=p.k,
    warmup=p.warmup,
    repeats=p.repeats,
)
print(f"build: {build}", file=sys.stderr)
