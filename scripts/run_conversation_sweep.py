from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake, background=False)  # a timing job (holds bench_slot): full priority

# Long-conversation sweep: the append baseline and the configured arms, each driven turn by
# turn through remember and query (or assemble_context).
# snakemake.input.memories, sessions, facts, entities, queries, qrels   the corpus files
# snakemake.input.embeddings    that corpus's embeddings Parquet
# snakemake.params.settings     config seed_systems.conversation (ConversationConfig,
#                               validated by the library), its arms narrowed to those in
#                               arms:; params.arm_params: their constructor parameters
# snakemake.output.work_dir     one store per arm (embedded PostgreSQL servers
#                               are stopped before the job ends)
# snakemake.output.table        results/sweeps/conversation.csv
#                               strategy,conversation,turn,context_tokens,cumulative_tokens,
#                               probe,probe_hit,latency_ms,remember_ms
# snakemake.output.summary      results/sweeps/conversation_summary.csv (one row per strategy)
# optional outputs: tiers (per-tier latency of the assembling arms), probes (one row per probe)

from agentmem.sweeps.conversation import write_conversation_sweep

p, out = snakemake.params, snakemake.output
write_conversation_sweep(
    out.table,
    out.summary,
    corpus_dir(snakemake.input, *CORPUS_TABLES, "queries", "qrels"),
    snakemake.input.embeddings,
    out.work_dir,
    settings=p.settings,
    arm_params=p.arm_params,
    tiers_path=getattr(out, "tiers", None),
    probes_path=getattr(out, "probes", None),
)
