from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# One LoCoMo memory unit as an agentmem-memory dataset (agentmem.external.convert_locomo).
#   params.path                 the LoCoMo JSON (config external.<name>.path; read in place)
#   params.limit_conversations  keep only the first N conversations (None: all)
#   params.unit                 turns, observations or summaries
#   output.*                    the dataset files it writes to
#                               results/external/<name>/source/<unit>/
# A missing file fails with LocomoMissing, whose message says where to get it and put it.
from pathlib import Path

from agentmem.external import convert_locomo

p = snakemake.params
convert_locomo(
    p.path,
    Path(snakemake.output.dataset).parent.parent,
    units=(p.unit,),
    limit_conversations=p.limit_conversations,
)
