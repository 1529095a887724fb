from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.report.capture import write_capture

write_capture(
    snakemake.input.by_class,
    list(snakemake.input.builds),
    snakemake.input.manifest,
    snakemake.output[0],
    config=snakemake.params.config,
    main_size=snakemake.params.main_size,
    trials={
        "crash": snakemake.input.crash,
        "lost_update": snakemake.input.lost_update,
        "fleet": snakemake.input.fleet,
        "anomaly": snakemake.input.anomaly,
    },
    restatements=snakemake.input.restatements,
    extra_tables={
        name: snakemake.input[name]
        for name in (
            "fill_rate",
            "postfilter",
            "budget",
            "scaling",
            "scaling_exponents",
            "validation",
            "dense_probe",
            "conversation_summary",
            "conversation_tiers",
            "decay",
        )
    },
    extra_json={"hnsw_recall": snakemake.input.hnsw_recall},
)
