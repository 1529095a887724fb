"""``agentmem check-arm``: run the arm conformance suite on one arm.

Run tests/test_conformance.py (pytest) on one registered arm: build on the smoke corpus,
every query class, hostile input, threads, reopen, remember, corrections, fetch. Needs
the repository's tests/ (install agentmem from a clone).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from agentmem.cli.common import EXIT_USAGE, add_command, fail, new_arm


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
        dirs = [Path(__file__).resolve().parents[3] / "tests", Path.cwd() / "tests"]
    return next(
        (d / "test_conformance.py" for d in dirs if (d / "test_conformance.py").is_file()), None
    )


def _pytest_command(suite: Path, arm: str, pytest_args: list[str]) -> list[str]:
    """The command running ``suite`` on ``arm`` with this interpreter's pytest.

    ``-P`` keeps the working directory off ``sys.path``: run from a plug-in's source tree,
    a folder named like the plug-in's module would otherwise shadow the installed package
    that the entry point names. The suite's own helpers (``tests/support``) are found
    through its ``conftest.py`` as with any pytest run, and relative paths in
    ``pytest_args`` still resolve against the working directory.
    """
    return [sys.executable, "-P", "-m", "pytest", str(suite), "--arm", arm, *pytest_args]


def _cmd_check_arm(args: argparse.Namespace) -> int:
    arm, code = new_arm(args.name)
    if arm is None:
        return code
    arm.close()
    suite = conformance_tests(args.tests)
    if suite is None:
        where = args.tests or "the source tree agentmem was installed from, or ./tests"
        return fail(
            f"no test_conformance.py in {where}; the suite ships with the repository: "
            "install agentmem from a clone (make install) or pass --tests CLONE/tests",
            EXIT_USAGE,
        )
    extra = list(getattr(args, "pytest_args", []))
    cmd = _pytest_command(suite, args.name, extra)
    print("agentmem: running " + " ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd)


_CHECK_EXAMPLE = """\
example:
  agentmem check-arm example-bag               # the whole suite on one arm
  agentmem check-arm sqlite-fts -- -k remember # pytest's options after --
exit code: pytest's (0 when every test passed)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``agentmem check-arm`` on the subparsers ``sub``."""
    c = add_command(
        sub,
        "check-arm",
        __doc__,
        usage="agentmem check-arm [-h] [--tests DIR] NAME [-- PYTEST_ARGS ...]",
        epilog=_CHECK_EXAMPLE,
    )
    c.add_argument("name", help="arm name (see `agentmem arms`)")
    c.add_argument("--tests", metavar="DIR", help="the repository's tests/ directory")
    c.set_defaults(func=_cmd_check_arm)
