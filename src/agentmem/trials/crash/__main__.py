"""``python -m agentmem.trials.crash --child FAMILY ...``: the crash trial's writer child."""

from agentmem.trials.crash.writer import child_main

child_main()
