import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

# sqlite-graph decay over simulated days (issue 8).
# snakemake.input.memories      corpus memories.parquet (corpus dir = its parent)
# snakemake.input.embeddings    that corpus's embeddings Parquet
# snakemake.params.work_dir     scratch dir for the graph store (work_dir/sqlite-graph)
# snakemake.params.step_days    one decay pass + evaluation every step_days days
# optional params: max_day (365: days 0, step, ... <= max_day), k (10)
# snakemake.output[0]           results/sweeps/decay.csv
#                               day,pruned_fraction,context_tokens_per_query,currency_ndcg,
#                               lexical_ndcg,valid_fact_recall

from pathlib import Path

from agentmem.io import write_csv
from agentmem.sweeps.decay import decay_sweep

p = snakemake.params
write_csv(
    snakemake.output[0],
    decay_sweep(
        Path(snakemake.input.memories).parent,
        snakemake.input.embeddings,
        p.work_dir,
        days=range(0, int(getattr(p, "max_day", 365)) + 1, int(p.step_days)),
        k=int(getattr(p, "k", 10)),
    ),
)
