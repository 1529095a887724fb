"""``python -m agentmem.trials.fleet agent|zygote ...``: a fleet agent process or the zygote.

An agent (:mod:`.agent`) started cold, or the zygote that forks agents (:mod:`.zygote`).
"""

import sys

USAGE = (
    "usage: python -m agentmem.trials.fleet agent --corpus DIR --embeddings FILE\n"
    "       python -m agentmem.trials.fleet zygote --control-fd FD"
)

if len(sys.argv) < 2 or sys.argv[1] not in ("agent", "zygote"):
    sys.exit(USAGE)
if sys.argv[1] == "agent":
    from agentmem.trials.fleet.agent import agent_main

    agent_main(sys.argv[2:])
else:
    from agentmem.trials.fleet.zygote import zygote_main

    zygote_main(sys.argv[2:])
