from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# Our results beside the published study (docs/STUDY.md §1-4).
# input.capture: results/capture.json; its folder is the results directory compare() reads
#   from, and the rule declares every file it reads there (input.*; a missing one becomes
#   "not measured")
# input.study_cells: results/tables/study_cells.csv when the study's corpus ran (else none)
# params.main_size: headline size
# output.md: results/tables/vs_reference.md; output.csv: results/tables/vs_reference.csv

from pathlib import Path

from agentmem.report.reference import write_vs_reference

write_vs_reference(
    Path(snakemake.input.capture).parent,
    snakemake.output.md,
    snakemake.output.csv,
    main_size=snakemake.params.main_size,
    study_cells_csv=next(iter(snakemake.input.study_cells), None),
)
