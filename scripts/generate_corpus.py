import sys

sys.stderr = open(snakemake.log[0], "w")

from pathlib import Path

from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus

write_corpus(
    Path(snakemake.output.manifest).parent,
    SizeConfig(**snakemake.params.size),
    CorpusConfig(**snakemake.params.corpus),
)
