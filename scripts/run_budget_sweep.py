from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# Token-budget sweep of ONE arm (rule combine_budget_sweeps concatenates the per-arm CSVs).
# snakemake.params.arm         arm name
# snakemake.params.arm_params  its constructor params (dict or None)
# snakemake.params.ks          cut-offs, e.g. [1, 3, 5, 10, 20, 50]
# snakemake.input.store        the store built by run_arm (results/stores/{size}/{arm})
# snakemake.input.memories, sessions, facts, entities, queries, qrels   the corpus files
# snakemake.input.embeddings   the size's embeddings Parquet
# snakemake.output[0]          CSV: arm,k,ndcg,recall,mean_tokens,ndcg_per_100_tokens,
#                              fill_at_k,short_at_k

from agentmem.io import write_csv
from agentmem.sweeps.budget import budget_sweep

p = snakemake.params
write_csv(
    snakemake.output[0],
    budget_sweep(
        p.arm,
        p.arm_params,
        snakemake.input.store,
        corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
        snakemake.input.embeddings,
        ks=p.ks,
    ),
)
