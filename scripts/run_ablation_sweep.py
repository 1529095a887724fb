from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # untimed (quality only): nice 19, beside the timing jobs

# Ablation sweep -> results/sweeps/ablation.csv and .md (the main corpus), or
# results/external/<dataset>/ablation.csv and .md (a dataset's scoped stores).
# snakemake.input.memories, sessions, facts, entities, queries, qrels   the corpus files
# snakemake.input.embeddings  the corpus's embeddings Parquet
# snakemake.input.stores      the store directories of params.arms, in that order
# snakemake.input.runs        the configured arms' runs on those stores (same order), made
#                             with k = params.run_k: the configured rows are scored from them
# snakemake.params.arms       the configured arms that declare ablations
# snakemake.params.k          the cut-off of nDCG and recall
# snakemake.params.arm_params dict arm name -> constructor params (config arm_params)
# snakemake.output.csv / md   the table and its Markdown

from pathlib import Path

from agentmem.io import write_csv
from agentmem.sweeps.ablation import ablation_markdown, ablation_sweep

p = snakemake.params
table = ablation_sweep(
    corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
    snakemake.input.embeddings,
    dict(zip(p.arms, snakemake.input.stores, strict=True)),
    k=p.k,
    arm_params=p.arm_params,
    runs=dict(zip(p.arms, snakemake.input.runs, strict=True)),
    run_k=p.run_k,
)
write_csv(snakemake.output.csv, table)
Path(snakemake.output.md).write_text(ablation_markdown(table))
