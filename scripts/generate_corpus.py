from agentmem.jobs import corpus_dir, start_job

start_job(snakemake, background=False)  # every timing job waits for a corpus: full priority

# One corpus size (agentmem.corpus.write_corpus): output.* are the files it writes.
from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus
from agentmem.corpus.io import FILES

write_corpus(
    corpus_dir(snakemake.output, *FILES, "manifest"),
    SizeConfig(**snakemake.params.size),
    CorpusConfig(**snakemake.params.corpus),
)
