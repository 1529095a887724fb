r"""``agentmem``: ad-hoc use of the library outside Snakemake, one module per subcommand.

Examples::

    agentmem arms                                   # registered arms (built-in and plug-in)
    agentmem check-arm example-bag                  # the conformance suite on one arm
    agentmem remember --arm sqlite-fts --store results/stores/m/sqlite-fts \\
        --session S00293 --day 321 "ADR-1267 now keeps the logs in object storage for 90 days" \\
        --supersedes M007188
    agentmem recall --arm sqlite-fts --store results/stores/m/sqlite-fts "ADR-1267 storage"
    agentmem recall --arm pg-hnsw --store results/stores/m/pg-hnsw \\
        --where "created_day<=160" --json "request timeout of search-daemon"
    agentmem schema workflow/schemas/config.schema.yaml

The identifiers are those of the main corpus (``results/corpus/m/``).
Exit codes: 0 success, 1 the arm or store failed (``agentmem: <message>``), 2 bad arguments.
"""

from agentmem.cli.check_arm import conformance_tests
from agentmem.cli.common import EXIT_ARM, EXIT_USAGE
from agentmem.cli.parser import build_parser, main, parse_args
from agentmem.cli.recall import clip, parse_where

__all__ = [
    "EXIT_ARM",
    "EXIT_USAGE",
    "build_parser",
    "clip",
    "conformance_tests",
    "main",
    "parse_args",
    "parse_where",
]
