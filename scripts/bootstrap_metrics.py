from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# Bootstrap CIs of the headline metrics and paired differences between arms.
# input.metrics: per-query score Parquet files, in the same order as params.arms
# params.arms: arm names; params.pairs: list of [arm_a, arm_b] (config report.paired_tests,
#   pairs of configured arms only; empty: no paired rows); params.n_boot; params.seed
# output.ci: results/tables/bootstrap_ci.csv; output.paired: results/tables/paired_bootstrap.csv

from agentmem.report.stats import write_bootstrap

write_bootstrap(
    dict(zip(snakemake.params.arms, snakemake.input.metrics, strict=True)),
    snakemake.output.ci,
    snakemake.output.paired,
    pairs=snakemake.params.pairs,
    n_boot=snakemake.params.n_boot,
    seed=snakemake.params.seed,
)
