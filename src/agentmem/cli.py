r"""``agentmem``: ad-hoc use of the library outside Snakemake.

Examples::

    agentmem arms                                   # registered arms and capabilities
    agentmem recall --arm sqlite-fts --store results/stores/m/sqlite-fts "ADR-297 storage"
    agentmem recall --arm pg-hnsw --store results/stores/m/pg-hnsw \\
        --where "created_day<=160" "timeouts before the spring"
    agentmem schema workflow/schemas/config.schema.yaml
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path

from agentmem.arms.base import PREDICATE_FIELDS, Predicate


def _cmd_arms(args: argparse.Namespace) -> int:
    from agentmem.arms import ARMS

    for name, cls in ARMS.items():
        c = cls.capabilities
        flags = [f for f in ("predicate", "join", "aggregate", "transactions") if getattr(c, f)]
        print(
            f"{name:20s} {cls.family:9s} vector={c.vector_access:15s} "
            f"text={c.text_access:12s} {' '.join(flags)}"
        )
    return 0


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


def _cmd_recall(args: argparse.Namespace) -> int:
    import numpy as np

    from agentmem.arms.base import ArmError, Query
    from agentmem.runner import make_arm

    pred = None
    if args.where:
        try:
            pred = parse_where(args.where)
        except ValueError as exc:
            print(f"agentmem: bad --where: {exc}", file=sys.stderr)
            return 2
    try:
        arm = make_arm(args.arm)
    except KeyError as exc:
        print(f"agentmem: {exc.args[0]}", file=sys.stderr)
        return 2
    caps = arm.capabilities
    if pred is not None and not caps.predicate:
        print(
            f"agentmem: note: {args.arm} cannot apply predicates; --where is ignored",
            file=sys.stderr,
        )
    if caps.vector_access == "none":
        vec = np.zeros(384, dtype=np.float32)  # text-only arm: skip loading the model
    else:
        from agentmem.embeddings import encode

        vec = encode([args.text])[0]
    try:
        arm.open(Path(args.store))
        q = Query("cli", args.text, vec, pred, wants_count=args.count)
        res = arm.query(q, args.k)
    except ArmError as exc:
        print(f"agentmem: {exc}", file=sys.stderr)
        return 1
    finally:
        arm.close()
    for rank, mid in enumerate(res.memory_ids, start=1):
        print(f"{rank:3d}  {mid}")
    if res.count is not None:
        print(f"count: {res.count}")
    if not res.memory_ids:
        print("(no results)", file=sys.stderr)
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from agentmem.config import write_json_schema

    try:
        write_json_schema(args.path)
    except OSError as exc:
        print(f"agentmem: cannot write {args.path}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {args.path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentmem`` command."""
    p = argparse.ArgumentParser(
        prog="agentmem",
        description="Agent-memory storage architectures: inspect arms and query built stores. "
        "The experiments themselves run under Snakemake (`make reproduce`).",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("arms", help="list registered arms and their capabilities").set_defaults(
        func=_cmd_arms
    )
    r = sub.add_parser("recall", help="query a store built by the pipeline")
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
    r.set_defaults(func=_cmd_recall)
    s = sub.add_parser("schema", help="write the config JSON schema generated from the model")
    s.add_argument("path", nargs="?", default="workflow/schemas/config.schema.yaml")
    s.set_defaults(func=_cmd_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agentmem`` command; returns the process exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(format="agentmem: %(levelname)s: %(message)s", level=logging.WARNING)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
