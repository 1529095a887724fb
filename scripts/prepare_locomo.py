import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# Adapt LoCoMo to the corpus contract (agentmem.external.locomo.prepare_locomo).
#   params.path      the LoCoMo JSON (config external.locomo.path; read in place, never copied)
#   output.manifest  results/external/locomo/corpus/manifest.json; the corpus dir is its
#                    parent (memories, sessions, agents, facts, entities, queries, qrels,
#                    qrels_session Parquet + labels.csv)
# A missing file fails with LocomoMissing, whose message says where to get it and put it.
from pathlib import Path

from agentmem.external.locomo import prepare_locomo

prepare_locomo(
    snakemake.params.path,
    Path(snakemake.output.manifest).parent,
    limit_conversations=snakemake.params.limit_conversations,
)
