"""``agentmem arms``: list registered arms (built-in and plug-in) and their capabilities.

List every registered arm: family, capabilities and the package that provides it
('built-in' or a plug-in's distribution; for a product arm, the installed versions of
the product it drives). Plug-ins that could not be registered are named on stderr (exit
code 1). With --knobs: each arm's knobs instead, the parameters the operating points vary
(stage, default, default grid; docs/OPERATING_POINTS.md).
"""

from __future__ import annotations

import argparse
import sys

from agentmem.cli.common import EXIT_ARM, add_command


def _drives(cls: type) -> str:
    """``" (chromadb 1.5.9)"``: the product distributions a product arm drives, installed."""
    versions = getattr(cls, "product_versions", None)
    if versions is None:
        return ""
    return " (" + ", ".join(f"{d} {v or 'not installed'}" for d, v in versions().items()) + ")"


def _knob_rows() -> list[tuple[str, ...]]:
    """One row per arm and knob: arm, knob, stage, default, default grid, what it does."""
    import inspect

    from agentmem.arms import ARMS

    rows = [("arm", "knob", "stage", "default", "grid", "what")]
    for name, cls in ARMS.items():
        params = inspect.signature(cls).parameters
        for k in getattr(cls, "knobs", ()):
            grid = ", ".join(str(v) for v in k.grid) or "(config only)"
            rows.append((name, k.param, k.stage, str(params[k.param].default), grid, k.what))
    return rows


def _print_rows(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)) + "  " + r[-1])


def _cmd_arms(args: argparse.Namespace) -> int:
    from agentmem.arms import ARMS, PLUGIN_PACKAGES, PLUGIN_PROBLEMS

    if args.knobs:
        _print_rows(_knob_rows())
        return EXIT_ARM if PLUGIN_PROBLEMS else 0
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
                PLUGIN_PACKAGES.get(name, "built-in") + _drives(cls),
            )
        )
    _print_rows(rows)
    for problem in PLUGIN_PROBLEMS:
        print(f"agentmem: not registered: {problem.message()}", file=sys.stderr)
    return EXIT_ARM if PLUGIN_PROBLEMS else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``agentmem arms`` on the subparsers ``sub``."""
    a = add_command(sub, "arms", __doc__)
    a.add_argument(
        "--knobs",
        action="store_true",
        help="list each arm's knobs (the parameters the operating points vary) instead",
    )
    a.set_defaults(func=_cmd_arms)
