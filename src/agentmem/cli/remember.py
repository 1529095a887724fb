"""``agentmem remember``: write one memory into a store through the arm's remember().

Append one memory to a store built by the pipeline, through the arm's own write path;
the text is embedded with the project's encoder (arms that read vectors).
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from agentmem.cli import common
from agentmem.text import is_utf8

#: Largest ``created_day`` a memory can hold (the column is a 32-bit integer).
_MAX_DAY = 2**31 - 1


def _day(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer day") from None
    if not 0 <= v <= _MAX_DAY:
        raise argparse.ArgumentTypeError(f"must be in 0..{_MAX_DAY}, got {v}")
    return v


#: Longest memory id ``remember --id`` accepts (characters).
MAX_ID_CHARS = 200


def _id_problem(mid: str) -> str | None:
    """What is wrong with a memory id given on the command line, or ``None`` if nothing."""
    if not mid.strip():
        return "a memory id must not be empty or blank"
    if mid != mid.strip():
        return "a memory id must not start or end with white space"
    if any(not ch.isprintable() for ch in mid):
        return "a memory id must not hold control characters (newlines, tabs, NUL)"
    if len(mid) > MAX_ID_CHARS:
        return f"a memory id has at most {MAX_ID_CHARS} characters, got {len(mid)}"
    return None


def _cmd_remember(args: argparse.Namespace) -> int:
    import polars as pl

    from agentmem.arms.base import SUPERSEDES, ArmError, Embeddings

    if not args.text.strip():
        return common.fail("the memory text is empty", common.EXIT_USAGE)
    given = [("the memory text", args.text), ("--id", args.id), ("--session", args.session)]
    given += [("--scope", args.scope), *(("--supersedes", v) for v in args.supersedes or ())]
    for what, value in given:
        if value is not None and not is_utf8(value):  # bytes that are not UTF-8 in argv
            return common.fail(f"{what} is not valid UTF-8", common.EXIT_USAGE)
    if args.id is not None and (problem := _id_problem(args.id)):
        return common.fail(f"--id {args.id[:40]!r}: {problem}", common.EXIT_USAGE)
    arm, code = common.new_arm(args.arm, args.store)
    if arm is None:
        return code
    mid = args.id or f"cli-{uuid.uuid4().hex[:12]}"
    frame = pl.DataFrame(
        {
            "memory_id": [mid],
            "body": [args.text],
            "created_day": [args.day],
            "session_id": [args.session],
            "kind": [args.kind],
            "scope_id": [args.scope],
            SUPERSEDES: [args.supersedes or None],
        },
        schema={
            "memory_id": pl.String,
            "body": pl.String,
            "created_day": pl.Int32,
            "session_id": pl.String,
            "kind": pl.String,
            "scope_id": pl.String,
            SUPERSEDES: pl.List(pl.String),
        },
    )
    try:
        arm.open(Path(args.store))
        vec = common.text_embedding(arm, args.text)
        arm.remember(frame, Embeddings([mid], vec.reshape(1, -1)))
    except ArmError as exc:
        return common.fail(str(exc), common.EXIT_ARM)
    except ValueError as exc:
        return common.fail(str(exc), common.EXIT_USAGE)
    finally:
        arm.close()
    print(mid)
    return 0


_REMEMBER_EXAMPLE = """\
example:
  agentmem remember --arm sqlite-fts --store results/stores/m/sqlite-fts \\
      --session S00293 --day 321 --kind semantic \\
      "CFG-3973 now sets the request timeout of search-daemon to 45s" --supersedes M006979
prints the new memory's id (generated unless --id is given)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``agentmem remember`` on the subparsers ``sub``."""
    from agentmem.schema import SCHEMA

    kinds = SCHEMA.table("memories").specialization[1]  # type: ignore[index]
    m = common.add_command(sub, "remember", __doc__, epilog=_REMEMBER_EXAMPLE)
    m.add_argument("text", help="the memory's text (stored verbatim)")
    common.add_arm_and_store(m)
    m.add_argument("--session", metavar="ID", help="session id (default: none)")
    m.add_argument("--day", type=_day, default=0, help="created_day, >= 0 (default 0)")
    m.add_argument("--kind", choices=kinds, default=kinds[0], help=f"default {kinds[0]}")
    m.add_argument(
        "--scope",
        metavar="ID",
        help="whose memory this is (a user, a conversation); recall --scope ID finds it "
        "(default: none, outside every scope)",
    )
    m.add_argument(
        "--supersedes",
        metavar="ID",
        nargs="+",
        action="extend",
        help="ids of earlier memories this one corrects (they become superseded); "
        "put the text before this option",
    )
    m.add_argument("--id", help="memory id (default: cli-<random hex>)")
    m.set_defaults(func=_cmd_remember)
