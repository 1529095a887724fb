import sys

sys.stderr = open(snakemake.log[0], "w")

from agentmem.io import run_in_background

run_in_background()  # not a timing job: yield the CPU to those (DESIGN §5)

from pathlib import Path

from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus

write_corpus(
    Path(snakemake.output.manifest).parent,
    SizeConfig(**snakemake.params.size),
    CorpusConfig(**snakemake.params.corpus),
)
