from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# The HTML report (agentmem.report.html.render_report).
# input.external  scores.csv of each external dataset shown (results/external/<id>/), the
#                 dataset id being the name of its directory
# params.external_units  dataset id -> the LoCoMo unit whose published figures to show
# input.study_cells  results/tables/study_cells.csv when the study's corpus ran (else none)
# input.pareto   the operating points' points, budgets and findings CSVs (results/pareto/)
#                 when any arm has points (else none)
# input.captions  the caption files of Snakemake's report (workflow/report/*.rst), one per
#                 figure stem
from pathlib import Path

from agentmem.report.html import render_report

render_report(
    snakemake.input.capture,
    snakemake.input.capabilities,
    snakemake.output[0],
    figures=list(snakemake.input.figures),
    reference_csv=snakemake.input.vs_reference,
    bootstrap_csv=snakemake.input.bootstrap,
    external_scores={Path(p).parent.name: p for p in snakemake.input.external},
    external_units=snakemake.params.external_units,
    findings_csv=snakemake.input.findings,
    findings_seeds_csv=snakemake.input.findings_seeds,
    seed_spread_csv=snakemake.input.seed_spread,
    captions={Path(p).stem: p for p in snakemake.input.captions},
    study_cells_csv=next(iter(snakemake.input.study_cells), None),
    pareto_dir=next((Path(p).parent for p in snakemake.input.pareto), None),
)
