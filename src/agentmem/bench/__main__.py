"""``python -m agentmem.bench``: the bench command line (:func:`agentmem.bench.cli.main`).

``python -m agentmem.bench timeline``: where a workflow run's time went
(:func:`agentmem.bench.cli.timeline_main`).
"""

from agentmem.bench.cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
