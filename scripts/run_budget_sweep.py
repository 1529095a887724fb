import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# Token-budget sweep of ONE arm (the lead's rule concatenates the per-arm CSVs).
# snakemake.params.arm         arm name
# snakemake.params.arm_params  its constructor params (dict or None)
# snakemake.params.store_dir   the store built by run_arm (results/stores/{size}/{arm})
# snakemake.params.ks          cut-offs, e.g. [1, 3, 5, 10, 20, 50]
# snakemake.input.memories     corpus memories.parquet (corpus dir = its parent)
# snakemake.input.embeddings   the size's embeddings Parquet
# snakemake.output[0]          CSV: arm,k,ndcg,recall,mean_tokens,ndcg_per_100_tokens

from pathlib import Path

from agentmem.io import write_csv
from agentmem.sweeps.budget import budget_sweep

p = snakemake.params
write_csv(
    snakemake.output[0],
    budget_sweep(
        p.arm,
        p.arm_params,
        p.store_dir,
        Path(snakemake.input.memories).parent,
        snakemake.input.embeddings,
        ks=p.ks,
    ),
)
