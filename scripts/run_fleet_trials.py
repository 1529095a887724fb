from agentmem.jobs import start_job

start_job(snakemake, background=False)  # a timing job (holds bench_slot): full priority

# Fleet trial: N agent processes per arm on one store -> results/trials/fleet.csv
# (docs/experiments/fleet.md). input: the fleet corpus (memories ...) and its embeddings;
# params: arms, arm_params; settings (config trials.fleet, validated by the library);
# seed (config trials.seed); output.work_dir: stores and agent logs.
from pathlib import Path

import polars as pl

from agentmem.io import write_csv
from agentmem.jobs import corpus_dir
from agentmem.trials.fleet import FIELDS, run_fleet

p = snakemake.params
work_dir = Path(snakemake.output.work_dir)
work_dir.mkdir(parents=True, exist_ok=True)
rows = run_fleet(
    arms=list(p.arms),
    arm_params=dict(p.arm_params),
    corpus_dir=corpus_dir(snakemake.input, "memories", "sessions", "facts", "entities", "queries"),
    embeddings=snakemake.input.embeddings,
    work_dir=work_dir,
    settings=p.settings,
    seed=p.seed,
)
# no fleet arm among `arms`: a table of the columns alone (the figure says no arm took part)
table = (
    pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame({f: [] for f in FIELDS})
)
write_csv(snakemake.output.table, table.select(FIELDS))
