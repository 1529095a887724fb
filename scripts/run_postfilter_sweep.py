import sys

sys.stderr = open(snakemake.log[0], "w")

# Post-filter overfetch sweep -> results/sweeps/postfilter.csv.
# snakemake.input.memories    corpus memories.parquet (corpus dir = its parent)
# snakemake.input.embeddings  the size's embeddings Parquet
# snakemake.params.stores     dict arm name -> store dir: the post-filtering arms swept and
#                             the reference arms (agentmem.sweeps.postfilter.postfilter_roles)
# snakemake.params.overfetch  list of factors, e.g. [1, 2, 4, ..., 128]
# snakemake.params.k          result slots per query
# snakemake.params.repeats    timed calls per query (median kept, after one warm-up)
# snakemake.params.arm_params optional: dict arm name -> constructor params (config arm_params)
# snakemake.output[0]         the CSV

from pathlib import Path

from agentmem.io import write_csv
from agentmem.sweeps.postfilter import postfilter_sweep

p = snakemake.params
write_csv(
    snakemake.output[0],
    postfilter_sweep(
        Path(snakemake.input.memories).parent,
        snakemake.input.embeddings,
        dict(p.stores),
        overfetch=p.overfetch,
        k=p.k,
        repeats=p.repeats,
        arm_params=getattr(p, "arm_params", None),
    ),
)
