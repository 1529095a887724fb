import sys

sys.stderr = open(snakemake.log[0], "w")

# Our results beside the published study (REFERENCE.md §1-4).
# params.results_dir: the results directory ("results"); params.main_size: headline size
# input: dependencies only (the files compare() reads; missing ones become "not measured")
# output.md: results/tables/vs_reference.md; output.csv: results/tables/vs_reference.csv

from agentmem.report.reference import write_vs_reference

write_vs_reference(
    snakemake.params.results_dir,
    snakemake.output.md,
    snakemake.output.csv,
    main_size=snakemake.params.main_size,
)
