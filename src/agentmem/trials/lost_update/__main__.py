"""``python -m agentmem.trials.lost_update --writer STORE ...``: one lost-update writer process."""

from agentmem.trials.lost_update.writers import writer_main

writer_main()
