from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# Score every run of one external dataset (agentmem.external.score_dataset) and write our
# rows beside the published figures (agentmem.external.published.write_comparison_md).
#   input.runs          the runner's runs Parquet of each (setting, arm), k = 50
#   params.run_keys     [setting, arm] of each of input.runs, in the same order
#   params.unit         the LoCoMo unit whose published figures to show (None: none)
#   params.n_boot       bootstrap resamples of the intervals
#   params.tuning_scopes  scopes some arm was tuned on: the others are scored as held-out
#   input.memories, queries, qrels, qrels_group, evidence, query_evidence, manifest
#                       the corpus files it reads
#   output.scores       results/external/<dataset>/scores.csv
#   output.ci           the same rows with <metric>_lo/<metric>_hi bootstrap 95 % intervals
#   output.comparison   Markdown: our rows beside the published ones, then each run's fill
#                       (agentmem.report.external_tables.fill_markdown)
from pathlib import Path

from agentmem.external import score_dataset
from agentmem.external.published import write_comparison_md
from agentmem.io import write_text
from agentmem.report.external_tables import fill_markdown

p = snakemake.params
runs = {tuple(key): path for key, path in zip(p.run_keys, snakemake.input.runs, strict=True)}
score_dataset(
    Path(snakemake.input.manifest).parent,
    runs,
    snakemake.output.scores,
    snakemake.output.ci,
    n_boot=p.n_boot,
    tuning_scopes=p.tuning_scopes,
)
text = write_comparison_md(snakemake.output.scores, snakemake.output.comparison, p.unit)
write_text(snakemake.output.comparison, text + "\n" + fill_markdown(snakemake.output.scores))
