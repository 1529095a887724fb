from agentmem.jobs import CORPUS_TABLES, corpus_dir, start_job

start_job(snakemake, background=False)  # a timing job (holds bench_slot): full priority

# Long-conversation sweep: the append baseline and the configured arms, each driven turn by
# turn through remember and query (or assemble_context).
# snakemake.input.memories, sessions, facts, entities, queries, qrels   the corpus files
# snakemake.input.embeddings    that corpus's embeddings Parquet
# snakemake.params.conversations, turns, memories_per_turn, probes_every, min_gap,
#                  l1_max_tokens, k, seed, sampling, summariser
#                               config seed_systems.conversation (run_conversations;
#                               every one is required, the defaults are the config model's)
# snakemake.params.arms         arm names (config seed_systems.conversation.arms that are
#                               in arms:); params.arm_params: their constructor parameters
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
    tiers_path=getattr(out, "tiers", None),
    probes_path=getattr(out, "probes", None),
    conversations=int(p.conversations),
    turns=int(p.turns),
    memories_per_turn=int(p.memories_per_turn),
    probes_every=int(p.probes_every),
    min_gap=int(p.min_gap),
    l1_max_tokens=int(p.l1_max_tokens),
    k=int(p.k),
    seed=int(p.seed),
    sampling=str(p.sampling),
    summariser=str(p.summariser),
    arms=list(p.arms),
    arm_params=dict(p.arm_params),
)
