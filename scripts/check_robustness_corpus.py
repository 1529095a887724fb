from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake)  # untimed (quality only): nice 19, beside the timing jobs

# The robustness arms and probes on one further corpus (agentmem.robustness.check_corpus):
# every arm built from scratch, one untimed pass (batch search), scored, tabulated by class;
# then the update-anomaly probe and the post-filter sweep on the stores built.
# params: arms, arm_params (arm -> constructor parameters), k, anomaly, postfilter
# input: the corpus files (memories, sessions, facts, entities, queries, qrels), embeddings
# output: stores (one store per arm inside), runs, builds, plans, metrics (one per arm, in
#         params.arms order), by_class_csv, by_class_md, choices, anomaly, postfilter
from agentmem.robustness import check_corpus

p, out = snakemake.params, snakemake.output
check_corpus(
    list(p.arms),
    dict(p.arm_params),
    corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
    snakemake.input.embeddings,
    out.stores,
    {
        "runs": list(out.runs),
        "builds": list(out.builds),
        "plans": list(out.plans),
        "metrics": list(out.metrics),
        "by_class_csv": out.by_class_csv,
        "by_class_md": out.by_class_md,
        "choices": out.choices,
        "anomaly": out.anomaly,
        "postfilter": out.postfilter,
    },
    k=p.k,
    choices=list(p.choices),
    anomaly=dict(p.anomaly) if p.anomaly["arms"] else None,
    postfilter=dict(p.postfilter) if p.postfilter["arms"] else None,
)
