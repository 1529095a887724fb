r"""``agentmem``: ad-hoc use of the library outside Snakemake.

Examples::

    agentmem arms                                   # registered arms (built-in and plug-in)
    agentmem check-arm example-bag                  # the conformance suite on one arm
    agentmem remember --arm sqlite-fts --store results/stores/m/sqlite-fts \\
        --session S00012 --day 321 "CFG-799 now sets the timeout to 60s" --supersedes M004711
    agentmem recall --arm sqlite-fts --store results/stores/m/sqlite-fts "ADR-297 storage"
    agentmem recall --arm pg-hnsw --store results/stores/m/pg-hnsw \\
        --where "created_day<=160" --json "timeouts before the spring"
    agentmem schema workflow/schemas/config.schema.yaml

Exit codes: 0 success, 1 the arm or store failed (``agentmem: <message>``), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import subprocess
import sys
import textwrap
import unicodedata
import uuid
from pathlib import Path
from typing import Any

from agentmem.arms.base import PREDICATE_FIELDS, Predicate

#: Exit codes: the arm or its store failed; the arguments were bad.
EXIT_ARM, EXIT_USAGE = 1, 2


def _fail(message: str, code: int) -> int:
    print(f"agentmem: {message}", file=sys.stderr)
    return code


def _cmd_arms(args: argparse.Namespace) -> int:
    from agentmem.arms import ARMS, PLUGIN_PACKAGES, PLUGIN_PROBLEMS

    rows = [("arm", "family", "vector", "text", "filter", "also", "package")]
    for name, cls in ARMS.items():
        c = cls.capabilities
        flags = [f for f in ("join", "aggregate", "transactions") if getattr(c, f)]
        rows.append(
            (
                name,
                cls.family,
                c.vector_access,
                c.text_access,
                c.filter_stage if c.predicate else "none",
                ",".join(flags) or "-",
                PLUGIN_PACKAGES.get(name, "built-in"),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)) + "  " + r[-1])
    for problem in PLUGIN_PROBLEMS:
        print(f"agentmem: not registered: {problem.message()}", file=sys.stderr)
    return EXIT_ARM if PLUGIN_PROBLEMS else 0


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


def _make_arm(name: str) -> tuple[Any, int]:
    """Instantiate arm ``name``: ``(arm, 0)``, or ``(None, exit code)`` after a message."""
    from agentmem.arms import ARMS, plugin_problem

    broken = plugin_problem(name)
    if broken is not None:
        return None, _fail(broken.message(), EXIT_ARM)
    if name not in ARMS:
        return None, _fail(
            f"unknown arm {name!r}; registered arms: {', '.join(sorted(ARMS))}", EXIT_USAGE
        )
    from agentmem.arms.base import ArmError

    try:
        return ARMS[name](), 0
    except ArmError as exc:
        return None, _fail(str(exc), EXIT_ARM)


def _embedding(arm: Any, text: str) -> Any:
    """The text's embedding with the project's encoder; zeros for arms that read no vectors."""
    import numpy as np

    from agentmem.arms.base import VECTOR_DIM

    if arm.capabilities.vector_access == "none":  # text-only arm: skip loading the model
        return np.zeros(VECTOR_DIM, dtype=np.float32)
    from transformers.utils import logging as hf_logging

    from agentmem.embeddings import encode

    hf_logging.disable_progress_bar()  # no "Loading weights" bar on a command's stderr
    return encode([text])[0]


def _cmd_remember(args: argparse.Namespace) -> int:
    import polars as pl

    from agentmem.arms.base import SUPERSEDES, ArmError, Embeddings

    if not args.text.strip():
        return _fail("the memory text is empty", EXIT_USAGE)
    arm, code = _make_arm(args.arm)
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
            SUPERSEDES: [args.supersedes or None],
        },
        schema={
            "memory_id": pl.String,
            "body": pl.String,
            "created_day": pl.Int32,
            "session_id": pl.String,
            "kind": pl.String,
            SUPERSEDES: pl.List(pl.String),
        },
    )
    try:
        arm.open(Path(args.store))
        vec = _embedding(arm, args.text)
        arm.remember(frame, Embeddings([mid], vec.reshape(1, -1)))
    except ArmError as exc:
        return _fail(str(exc), EXIT_ARM)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    finally:
        arm.close()
    print(mid)
    return 0


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
            return _fail(f"bad --where: {exc}", EXIT_USAGE)
    arm, code = _make_arm(args.arm)
    if arm is None:
        return code
    if pred is not None and not arm.capabilities.predicate:
        print(
            f"agentmem: note: {args.arm} cannot apply predicates; --where is ignored",
            file=sys.stderr,
        )
    if args.count and not arm.capabilities.aggregate:
        print(f"agentmem: note: {args.arm} cannot count; --count is ignored", file=sys.stderr)
    try:
        arm.open(Path(args.store))
        q = Query("cli", args.text, _embedding(arm, args.text), pred, wants_count=args.count)
        res = arm.query(q, args.k)
        rows = {r["memory_id"]: r for r in arm.fetch(res.memory_ids).iter_rows(named=True)}
    except ArmError as exc:
        return _fail(str(exc), EXIT_ARM)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    finally:
        arm.close()
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


def conformance_tests(tests_dir: str | None = None) -> Path | None:
    """Find ``test_conformance.py``: in ``tests_dir``, else the clone agentmem runs from.

    Searched when ``tests_dir`` is ``None``: ``tests/`` of the source tree this package was
    installed from (``pip install -e .``, ``make install``), then ``./tests``.

    Returns:
        The file, or ``None`` when none exists.
    """
    if tests_dir is not None:
        dirs = [Path(tests_dir)]
    else:
        dirs = [Path(__file__).resolve().parents[2] / "tests", Path.cwd() / "tests"]
    return next(
        (d / "test_conformance.py" for d in dirs if (d / "test_conformance.py").is_file()), None
    )


def _cmd_check_arm(args: argparse.Namespace) -> int:
    arm, code = _make_arm(args.name)
    if arm is None:
        return code
    arm.close()
    suite = conformance_tests(args.tests)
    if suite is None:
        where = args.tests or "the source tree agentmem was installed from, or ./tests"
        return _fail(
            f"no test_conformance.py in {where}; the suite ships with the repository: "
            "install agentmem from a clone (make install) or pass --tests CLONE/tests",
            EXIT_USAGE,
        )
    extra = list(getattr(args, "pytest_args", []))
    cmd = [sys.executable, "-m", "pytest", str(suite), "--arm", args.name, *extra]
    print("agentmem: running " + " ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd)


def _cmd_schema(args: argparse.Namespace) -> int:
    from agentmem.config import write_json_schema

    try:
        write_json_schema(args.path)
    except OSError as exc:
        print(f"agentmem: cannot write {args.path}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {args.path}")
    return 0


_REMEMBER_EXAMPLE = """\
example:
  agentmem remember --arm sqlite-fts --store results/stores/m/sqlite-fts \\
      --session S00012 --day 321 --kind semantic \\
      "CFG-799 now sets the timeout of SVC-5345 to 60s" --supersedes M004711
prints the new memory's id (generated unless --id is given)."""

_RECALL_EXAMPLE = """\
example:
  agentmem recall --arm sqlite-fts --store results/stores/m/sqlite-fts \\
      --where "superseded_by is null" "timeout of SVC-5345"
prints rank, id, day, session, kind, current or superseded, and the text (cut to the
terminal's width); --json prints one JSON document with every stored column instead."""

_CHECK_EXAMPLE = """\
example:
  agentmem check-arm example-bag               # the whole suite on one arm
  agentmem check-arm sqlite-fts -- -k remember # pytest's options after --
exit code: pytest's (0 when every test passed)."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentmem`` command."""
    from agentmem.schema import SCHEMA

    kinds = SCHEMA.table("memories").specialization[1]  # type: ignore[index]
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(
        prog="agentmem",
        description="Agent-memory storage architectures: inspect arms, write to and query "
        "built stores, check an arm against the contract. The experiments themselves run "
        "under Snakemake (`make reproduce`).",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser(
        "arms",
        help="list registered arms (built-in and plug-in) and their capabilities",
        description="List every registered arm: family, capabilities and the package that "
        "provides it ('built-in' or a plug-in's distribution). Plug-ins that could not be "
        "registered are named on stderr (exit code 1).",
    )
    a.set_defaults(func=_cmd_arms)

    m = sub.add_parser(
        "remember",
        help="write one memory into a store through the arm's remember()",
        description=textwrap.fill(
            "Append one memory to a store built by the pipeline, through the arm's "
            "own write path; the text is embedded with the project's encoder (arms that read "
            "vectors)."
        ),
        epilog=_REMEMBER_EXAMPLE,
        formatter_class=fmt,
    )
    m.add_argument("text", help="the memory's text (stored verbatim)")
    m.add_argument("--arm", required=True, help="arm name (see `agentmem arms`)")
    m.add_argument("--store", required=True, help="store directory, e.g. results/stores/m/ARM")
    m.add_argument("--session", metavar="ID", help="session id (default: none)")
    m.add_argument("--day", type=_day, default=0, help="created_day, >= 0 (default 0)")
    m.add_argument("--kind", choices=kinds, default=kinds[0], help=f"default {kinds[0]}")
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

    r = sub.add_parser(
        "recall",
        help="query a store and show the memories found",
        description=textwrap.fill(
            "Ask a store built by the pipeline one question, as an agent's memory "
            "tool would (text, its embedding, an optional predicate), and show the answer."
        ),
        epilog=_RECALL_EXAMPLE,
        formatter_class=fmt,
    )
    r.add_argument("text", help="free-text query (quotes, *, NEAR, SQL are all safe)")
    r.add_argument("--arm", required=True, help="arm name (see `agentmem arms`)")
    r.add_argument("--store", required=True, help="store directory, e.g. results/stores/m/ARM")
    r.add_argument("--k", type=_positive_int, default=10, help="results to return (default 10)")
    r.add_argument(
        "--where",
        metavar="PREDICATE",
        help="structured filter: 'created_day<=160', 'session_id=S00012', 'fact_id=F000042' "
        "or 'superseded_by is null'",
    )
    r.add_argument("--count", action="store_true", help="also ask for an exact count")
    r.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")
    r.set_defaults(func=_cmd_recall)

    c = sub.add_parser(
        "check-arm",
        help="run the arm conformance suite on one arm",
        description=textwrap.fill(
            "Run tests/test_conformance.py (pytest) on one registered arm: build "
            "on the smoke corpus, every query class, hostile input, threads, reopen, remember, "
            "corrections, fetch. Needs the repository's tests/ (install agentmem from a clone)."
        ),
        usage="agentmem check-arm [-h] [--tests DIR] NAME [-- PYTEST_ARGS ...]",
        epilog=_CHECK_EXAMPLE,
        formatter_class=fmt,
    )
    c.add_argument("name", help="arm name (see `agentmem arms`)")
    c.add_argument("--tests", metavar="DIR", help="the repository's tests/ directory")
    c.set_defaults(func=_cmd_check_arm)

    s = sub.add_parser("schema", help="write the config JSON schema generated from the model")
    s.add_argument("path", nargs="?", default="workflow/schemas/config.schema.yaml")
    s.set_defaults(func=_cmd_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agentmem`` command; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    passed: list[str] = []
    if argv[:1] == ["check-arm"] and "--" in argv:  # pytest's own options, verbatim
        cut = argv.index("--")
        argv, passed = argv[:cut], argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    args.pytest_args = passed
    logging.basicConfig(format="agentmem: %(levelname)s: %(message)s", level=logging.WARNING)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
