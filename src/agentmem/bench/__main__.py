"""``python -m agentmem.bench``: the bench command line (:func:`agentmem.bench.cli.main`)."""

from agentmem.bench.cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
