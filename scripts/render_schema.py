from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

from agentmem.io import write_text
from agentmem.schema import dot_er, mermaid_er, postgres_ddl, sqlite_ddl

TABLES = ("agents", "sessions", "entities", "facts", "memories", "memory_entities")
write_text(snakemake.output.mermaid, mermaid_er())
write_text(snakemake.output.dot, dot_er())
sq, si = sqlite_ddl(TABLES, foreign_keys=True)
pg, pi = postgres_ddl(TABLES, foreign_keys=True)
write_text(snakemake.output.sqlite, ";\n\n".join(sq + si) + ";\n")
write_text(snakemake.output.postgres, ";\n\n".join(pg + pi) + ";\n")
