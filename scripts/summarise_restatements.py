from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# Restatements per fact of one corpus (agentmem.trials.anomaly.write_restatement_stats).
# input: the corpus files it reads (memories, sessions, facts, entities); output[0]: JSON
from agentmem.trials.anomaly import write_restatement_stats

write_restatement_stats(corpus_dir(snakemake.input, *CORPUS_TABLES), snakemake.output[0])
