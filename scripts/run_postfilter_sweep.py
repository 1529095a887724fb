from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # untimed (fill and recall only): nice 19, beside the timing jobs

# Post-filter overfetch sweep -> results/sweeps/postfilter.csv.
# snakemake.input.memories, sessions, facts, entities, queries, qrels   the corpus files
# snakemake.input.embeddings  the size's embeddings Parquet
# snakemake.input.stores      the store directories of params.arms, in that order
# snakemake.params.arms       the post-filtering arms swept and the reference arms
#                             (agentmem.sweeps.postfilter.postfilter_roles)
# snakemake.params.overfetch  list of factors, e.g. [1, 2, 4, ..., 128]
# snakemake.params.k          result slots per query
# snakemake.params.arm_params optional: dict arm name -> constructor params (config arm_params)
# snakemake.output[0]         the CSV

from agentmem.io import write_csv
from agentmem.sweeps.postfilter import postfilter_sweep

p = snakemake.params
write_csv(
    snakemake.output[0],
    postfilter_sweep(
        corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
        snakemake.input.embeddings,
        dict(zip(p.arms, snakemake.input.stores, strict=True)),
        overfetch=p.overfetch,
        k=p.k,
        arm_params=getattr(p, "arm_params", None),
    ),
)
