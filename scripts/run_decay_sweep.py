from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# sqlite-graph decay over simulated days (agentmem.sweeps.decay.decay_sweep).
# snakemake.input.memories, sessions, facts, entities, queries, qrels   the corpus files
# snakemake.input.embeddings    that corpus's embeddings Parquet
# snakemake.params.step_days    one decay pass + evaluation every step_days days
# snakemake.params.max_day      days 0, step, ... <= max_day
# snakemake.params.k            results per evaluated query
# snakemake.output.table        results/sweeps/decay.csv
#                               day,pruned_fraction,context_tokens_per_query,currency_ndcg,
#                               lexical_ndcg,valid_fact_recall
# snakemake.output.work_dir     where the graph store is built (work_dir/sqlite-graph)

from agentmem.io import write_csv
from agentmem.sweeps.decay import decay_sweep

p = snakemake.params
write_csv(
    snakemake.output.table,
    decay_sweep(
        corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
        snakemake.input.embeddings,
        snakemake.output.work_dir,
        days=range(0, p.max_day + 1, p.step_days),
        k=p.k,
    ),
)
