"""`make bench`: benchmark the harness itself; see agentmem.bench.

Usage: python scripts/bench.py [--size s] [--out results/bench] [--pipeline]
       [--pipeline-cores 16] [--config-file config/config.yaml] [--arms a,b]
       [--rounds 5] [--ingest-rounds 5] [--remember 200] [--embed-rounds 1]
       [--embed-texts 2000] [--skip-embedding] [--no-progress]
"""

import sys

from agentmem.bench import main

if __name__ == "__main__":
    sys.exit(main())
