"""``python -m agentmem.trials.fleet agent ...``: one fleet agent process (:mod:`.agent`)."""

import sys

from agentmem.trials.fleet.agent import agent_main

if len(sys.argv) < 2 or sys.argv[1] != "agent":
    sys.exit("usage: python -m agentmem.trials.fleet agent --corpus DIR --embeddings FILE")
agent_main(sys.argv[2:])
