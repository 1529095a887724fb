"""``agentmem schema``: write the config JSON schema generated from the model."""

from __future__ import annotations

import argparse
import sys


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
    s = sub.add_parser("schema", help="write the config JSON schema generated from the model")
    s.add_argument("path", nargs="?", default="workflow/schemas/config.schema.yaml")
    s.set_defaults(func=_cmd_schema)
