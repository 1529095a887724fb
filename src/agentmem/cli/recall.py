"""``agentmem recall``: query a store and show the memories found.

Ask a store built by the pipeline one question, as an agent's memory tool would (text,
its embedding, an optional predicate), and show the answer.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentmem.arms.base import PREDICATE_FIELDS, Predicate
from agentmem.cli import common

_WHERE = re.compile(
    r"^\s*(?P<field>[a-z_]+)\s*(?:(?P<op><=|=)\s*(?P<value>.+?)|\s+(?P<null>is\s+null))\s*$",
    re.IGNORECASE,
)


def parse_where(text: str) -> Predicate:
    """Parse ``--where``: ``created_day<=160``, ``session_id=S00012``, ``superseded_by is null``.

    Raises:
        ValueError: naming the accepted forms, or from :class:`Predicate` (unknown field,
            wrong value type).
    """
    m = _WHERE.match(text or "")
    if not m:
        raise ValueError(
            f"cannot parse {text!r}; use FIELD<=DAY, FIELD=VALUE or 'FIELD is null' "
            f"with FIELD one of {sorted(PREDICATE_FIELDS)}"
        )
    if m["null"]:
        return Predicate(m["field"], "is_null", None)
    return Predicate.parse(m["field"], m["op"], m["value"].strip())


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _char_width(ch: str) -> int:
    """Terminal columns ``ch`` takes: 0 for combining marks, 2 for wide East Asian forms."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def clip(text: str, width: int) -> str:
    """Make ``text`` one terminal line at most ``width`` columns wide.

    Whitespace runs become one space, other unprintable characters (control codes,
    terminal escapes) become U+FFFD, and a longer line is cut with a trailing ``…``.

    Args:
        text: any string (memory bodies are untrusted).
        width: the columns available, >= 1.

    Returns:
        The line, at most ``width`` columns wide.
    """
    line = "".join(ch if ch.isprintable() else "\ufffd" for ch in " ".join(text.split()))
    if sum(map(_char_width, line)) <= width:
        return line
    out, used = [], 0
    for ch in line:
        w = _char_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out).rstrip() + "…"


def _status(row: dict[str, Any]) -> str:
    if row.get("memory_id") is None:
        return "not fetched"
    sup = row.get("superseded_by")
    return "current" if sup is None else f"superseded by {sup}"


#: widest id, session, kind or status cell in the recall table (longer ones are cut)
_CELL = 40


def _print_table(ranked: list[dict[str, Any]]) -> None:
    """Rank, id, day, session, kind, status and the text, one line per memory."""
    cells = [("rank", "id", "day", "session", "kind", "status")]
    for r in ranked:
        day = r.get("created_day")
        values = (r["id"], r.get("session_id") or "-", r.get("kind") or "-", _status(r))
        mid, session, kind, status = (clip(str(v), _CELL) for v in values)  # untrusted too
        cells.append((str(r["rank"]), mid, "-" if day is None else str(day), session, kind, status))
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    fixed = sum(widths) + 2 * len(widths)
    avail = max(shutil.get_terminal_size().columns - fixed, 20)
    for c, r in zip(cells, [None, *ranked], strict=True):
        lead = "  ".join(
            v.rjust(w) if i in (0, 2) else v.ljust(w)
            for i, (v, w) in enumerate(zip(c, widths, strict=True))
        )
        text = "text" if r is None else clip(r.get("body") or "", avail)
        print(f"{lead}  {text}")


def _cmd_recall(args: argparse.Namespace) -> int:
    from agentmem.arms.base import ArmError, Query

    pred = None
    if args.where:
        try:
            pred = parse_where(args.where)
        except ValueError as exc:
            return common.fail(f"bad --where: {exc}", common.EXIT_USAGE)
    arm, code = common.new_arm(args.arm, args.store)
    if arm is None:
        return code
    if pred is not None and not arm.capabilities.predicate:
        print(
            f"agentmem: note: {args.arm} cannot apply predicates; --where is ignored",
            file=sys.stderr,
        )
    if args.count and not arm.capabilities.aggregate:
        print(f"agentmem: note: {args.arm} cannot count; --count is ignored", file=sys.stderr)
    # the encoder loads and embeds on a thread while the store opens (an embedded
    # PostgreSQL server starts as a child process): the two waits overlap
    pool = ThreadPoolExecutor(max_workers=1)
    embedding = pool.submit(common.text_embedding, arm, args.text)
    try:
        arm.open(Path(args.store))
        vec = embedding.result()
        q = Query("cli", args.text, vec, pred, wants_count=args.count, scope=args.scope)
        res = arm.query(q, args.k)
        rows = {r["memory_id"]: r for r in arm.fetch(res.memory_ids).iter_rows(named=True)}
    except ArmError as exc:
        return common.fail(str(exc), common.EXIT_ARM)
    except ValueError as exc:
        return common.fail(str(exc), common.EXIT_USAGE)
    finally:
        arm.close()
        pool.shutdown(wait=False, cancel_futures=True)
    ranked = [
        {"rank": n, "id": mid, **rows.get(mid, {})} for n, mid in enumerate(res.memory_ids, start=1)
    ]
    if args.json:
        results = [
            {
                "rank": r.pop("rank"),
                "memory_id": r.pop("id"),
                "fetched": r.pop("memory_id", None) is not None,
                "superseded": r.get("superseded_by") is not None,
                **r,
            }
            for r in ranked
        ]
        doc = {
            "arm": args.arm,
            "store": str(args.store),
            "query": args.text,
            "k": args.k,
            "where": args.where,
            "scope": args.scope,
            "count": res.count,
            "results": results,
        }
        print(json.dumps(doc, ensure_ascii=False, indent=2))
        return 0
    if ranked:
        _print_table(ranked)
    else:
        print("(no results)", file=sys.stderr)
    if res.count is not None:
        print(f"count: {res.count}")
    return 0


_RECALL_EXAMPLE = """\
example:
  agentmem recall --arm sqlite-fts --store results/stores/m/sqlite-fts \\
      --where "superseded_by is null" "request timeout of CFG-3973"
prints rank, id, day, session, kind, current or superseded, and the text (cut to the
terminal's width); --json prints one JSON document with every stored column instead."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``agentmem recall`` on the subparsers ``sub``."""
    r = common.add_command(sub, "recall", __doc__, epilog=_RECALL_EXAMPLE)
    r.add_argument("text", help="free-text query (quotes, *, NEAR, SQL are all safe)")
    common.add_arm_and_store(r)
    r.add_argument("--k", type=_positive_int, default=10, help="results to return (default 10)")
    r.add_argument(
        "--where",
        metavar="PREDICATE",
        help="structured filter: 'created_day<=160', 'session_id=S00012', 'fact_id=F000042' "
        "or 'superseded_by is null'",
    )
    r.add_argument(
        "--scope",
        metavar="ID",
        help="whose memory to search (a user, a conversation): only memories remembered "
        "with this --scope are returned and counted (default: every memory)",
    )
    r.add_argument("--count", action="store_true", help="also ask for an exact count")
    r.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")
    r.set_defaults(func=_cmd_recall)
