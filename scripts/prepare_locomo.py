from agentmem.jobs import corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (DESIGN §5)

# Adapt LoCoMo to the corpus contract (agentmem.external.locomo.prepare_locomo).
#   params.path      the LoCoMo JSON (config external.locomo.path; read in place, never copied)
#   output.*         the corpus files it writes to results/external/locomo/corpus/
#                    (memories, sessions, agents, facts, entities, queries, qrels,
#                    qrels_session Parquet, labels.csv, manifest.json)
# A missing file fails with LocomoMissing, whose message says where to get it and put it.
from agentmem.external.locomo import FILES, prepare_locomo

prepare_locomo(
    snakemake.params.path,
    corpus_dir(snakemake.output, *FILES, "labels", "manifest"),
    limit_conversations=snakemake.params.limit_conversations,
)
