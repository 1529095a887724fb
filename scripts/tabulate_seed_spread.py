from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# nDCG@10 per arm and class across corpus seeds beside the headline run's bootstrap
# (agentmem.report.headline.write_by_class_seeds).
# input.by_class  one by-class CSV per seed, in params.labels order; input.bootstrap
# params.labels   the seed labels; params.arms the arms kept; output[0] the CSV
from agentmem.report.headline import write_by_class_seeds

p = snakemake.params
write_by_class_seeds(
    dict(zip(p.labels, snakemake.input.by_class, strict=True)),
    list(p.arms),
    snakemake.input.bootstrap,
    snakemake.output[0],
)
