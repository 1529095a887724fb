from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# sqlite-graph decay over simulated days (agentmem.sweeps.decay.decay_sweep).
# snakemake.input.memories, sessions, facts, entities, queries, qrels   the corpus files
# snakemake.input.embeddings    that corpus's embeddings Parquet
# snakemake.params.settings     config seed_systems.decay, whole (DecayConfig: its days and k)
# snakemake.output.table        results/sweeps/decay.csv
#                               day,pruned_fraction,context_tokens_per_query,currency_ndcg,
#                               lexical_ndcg,valid_fact_recall
# snakemake.output.work_dir     where the graph store is built (work_dir/sqlite-graph)

from agentmem.config import DecayConfig
from agentmem.io import write_csv
from agentmem.sweeps.decay import decay_sweep

cfg = DecayConfig.model_validate(snakemake.params.settings)
write_csv(
    snakemake.output.table,
    decay_sweep(
        corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
        snakemake.input.embeddings,
        snakemake.output.work_dir,
        days=cfg.days(),
        k=cfg.k,
    ),
)
