from agentmem.jobs import corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (DESIGN §5)

# Score LoCoMo runs at turn and session level (agentmem.external.locomo.score_locomo).
#   params.arms         arm names, in table order
#   input.runs          the runner's runs Parquet of each arm (same order as params.arms)
#   input.memories, queries, qrels, qrels_session   the LoCoMo corpus files it reads
#   output.scores       results/external/locomo/scores.csv
#                       (arm,level,category,n_queries,recall_at_1,recall_at_5,recall_at_10,
#                       ndcg_at_10,mrr,hit_at_1,ndcg_at_5)
#   output.ci           the same rows with <metric>_lo/<metric>_hi bootstrap 95 % CIs
#   output.comparison   Markdown: our session-level all-category rows beside the
#                       published anchors (REFERENCE §6)
from agentmem.external.locomo import score_locomo

score_locomo(
    corpus_dir(snakemake.input, "memories", "queries", "qrels", "qrels_session"),
    dict(zip(snakemake.params.arms, snakemake.input.runs, strict=True)),
    snakemake.output.scores,
    ci_csv=snakemake.output.ci,
    comparison_md=snakemake.output.comparison,
)
