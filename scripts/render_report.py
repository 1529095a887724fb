from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (DESIGN §5)

from agentmem.report.html import render_report

render_report(
    snakemake.input.capture,
    snakemake.input.capabilities,
    snakemake.output[0],
    figures=list(snakemake.input.figures),
    reference_csv=snakemake.input.vs_reference,
    bootstrap_csv=snakemake.input.bootstrap,
    locomo_scores=next(iter(snakemake.input.locomo), None),
)
