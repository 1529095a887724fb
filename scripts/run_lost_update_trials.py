from agentmem.jobs import start_job

start_job(snakemake, background=False)  # a timing job (holds bench_slot): full priority

# Lost-update trials, every store x mode -> results/trials/lost_update.csv (docs/MEASUREMENT.md §2).
# params: settings (config trials.lost_update, validated by the library)
# output[0]: the CSV; optional output.work_dir: where the trials write (default: a
#         temporary directory, removed afterwards).
import tempfile
from pathlib import Path

import polars as pl

from agentmem.io import write_csv
from agentmem.trials.lost_update import FIELDS, run_lost_update_matrix

p = snakemake.params
work_dir = snakemake.output.get("work_dir")
with tempfile.TemporaryDirectory(prefix="agentmem-lost-update-") as tmp:
    if work_dir:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
    rows = run_lost_update_matrix(
        p.settings,
        work_dir=work_dir or tmp,
        progress=True,
    )
write_csv(snakemake.output[0], pl.DataFrame(rows).select(FIELDS))
