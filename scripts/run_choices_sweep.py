from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # untimed (quality only): nice 19, beside the timing jobs

# The study's implementation choices on the headline corpus -> results/tables/choices.csv
# (agentmem.sweeps.choices.choices_sweep).
# snakemake.input.memories, sessions, facts, entities, queries, qrels   the corpus files
# snakemake.input.embeddings  the main size's embeddings Parquet
# snakemake.input.stores      the store directories of params.arms, in that order
# snakemake.params.arms       the arms the configurations change
# snakemake.params.configurations  the configurations (agentmem.choices.CONFIGURATIONS)
# snakemake.params.k, arm_params   cut-off; arm name -> constructor params (config arm_params)

from agentmem.io import write_csv
from agentmem.sweeps.choices import choices_sweep

p = snakemake.params
write_csv(
    snakemake.output[0],
    choices_sweep(
        corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
        snakemake.input.embeddings,
        dict(zip(p.arms, snakemake.input.stores, strict=True)),
        list(p.configurations),
        k=p.k,
        arm_params=p.arm_params,
    ),
)
