from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# The study's twelve headline findings on the headline run and every further corpus
# (agentmem.report.headline.write_findings).
# input: every file the findings read (listed so that a change reruns this job)
# params.corpora  further corpus id -> [kind, size, results directory], in column order
# params.main_size; output: csv, md, seeds (the across-seed summary)
from agentmem.report.headline import trees_from, write_findings

p = snakemake.params
write_findings(
    trees_from({c: tuple(v) for c, v in p.corpora.items()}, "results", p.main_size),
    "results",
    p.main_size,
    snakemake.output.csv,
    snakemake.output.md,
    snakemake.output.seeds,
)
