from agentmem.jobs import corpus_dir, start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (DESIGN §5)

# One corpus size (agentmem.corpus.write_corpus): output.* are the files it writes.
from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus
from agentmem.corpus.io import FILES

write_corpus(
    corpus_dir(snakemake.output, *FILES, "manifest"),
    SizeConfig(**snakemake.params.size),
    CorpusConfig(**snakemake.params.corpus),
)
