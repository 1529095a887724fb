from agentmem.jobs import start_job

start_job(snakemake)  # counts records, not milliseconds: yield the CPU to timing jobs

# Crash trials of ONE family -> results/trials/crash/{family}.csv (docs/MEASUREMENT.md §2).
# params: family; settings (config trials.crash, validated by the library); seed
#         (config trials.seed)
# output[0]: the CSV; optional output.work_dir: where the trials write (default: a
#         temporary directory, removed afterwards).
import tempfile
from pathlib import Path

import polars as pl

from agentmem.io import write_csv
from agentmem.trials.crash import FIELDS, run_crash_trials

p = snakemake.params
work_dir = snakemake.output.get("work_dir")
with tempfile.TemporaryDirectory(prefix=f"agentmem-crash-{p.family}-") as tmp:
    if work_dir:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
    rows = run_crash_trials(
        family=p.family,
        settings=p.settings,
        seed=p.seed,
        work_dir=work_dir or tmp,
        progress=True,
    )
write_csv(snakemake.output[0], pl.DataFrame(rows).select(FIELDS))
