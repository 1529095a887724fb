"""``agentmem schema``: write the config JSON schema generated from the model.

Write the JSON schema of the config (generated from the pydantic model in
agentmem.config) that the workflow validates every config against. Run it from the
repository root after changing the model (make schema does).
"""

from __future__ import annotations

import argparse
import sys

from agentmem.cli.common import add_command


def _cmd_schema(args: argparse.Namespace) -> int:
    from agentmem.config import write_json_schema

    try:
        write_json_schema(args.path)
    except OSError as exc:
        print(f"agentmem: cannot write {args.path}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {args.path}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``agentmem schema`` on the subparsers ``sub``."""
    s = add_command(sub, "schema", __doc__)
    s.add_argument(
        "path",
        nargs="?",
        default="workflow/schemas/config.schema.yaml",
        help="where to write it, relative to the working directory (default: %(default)s)",
    )
    s.set_defaults(func=_cmd_schema)
