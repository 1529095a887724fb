from agentmem.jobs import corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# Corpus validation (agentmem.corpus.validation.write_validation).
# input: the corpus files it reads (memories, queries, qrels, manifest), embeddings
# params: random_pairs, seed; output: table, probe, spec
from agentmem.corpus.validation import write_validation

write_validation(
    corpus_dir(snakemake.input, "memories", "queries", "qrels", "manifest"),
    snakemake.input.embeddings,
    snakemake.output.table,
    snakemake.output.probe,
    random_pairs=snakemake.params.random_pairs,
    seed=snakemake.params.seed,
    spec_csv=snakemake.output.spec,
)
