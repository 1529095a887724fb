"""``python -m agentmem.cli``: the ``agentmem`` command (:func:`agentmem.cli.parser.main`)."""

import sys

from agentmem.cli.parser import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
