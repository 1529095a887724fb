from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# An agentmem-memory dataset as a corpus directory (agentmem.external.prepare_dataset).
#   params.source  the dataset directory (a LoCoMo unit's converted dataset, or the
#                  configured external.<name>.path)
#   output.*       the corpus files it writes to results/external/<dataset>/corpus/
# A missing or malformed dataset fails with DatasetError (file, line and field).
import sys
from pathlib import Path

from agentmem.external import prepare_dataset

manifest = prepare_dataset(snakemake.params.source, Path(snakemake.output.manifest).parent)
print(f"counts: {manifest['counts']}", file=sys.stderr)
print(f"issues: {manifest['issues']}", file=sys.stderr)
