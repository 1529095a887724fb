"""The ``agentmem`` argument parser and :func:`main`, the console entry point."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from agentmem.cli import arms, check_arm, recall, remember, schema


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentmem`` command."""
    p = argparse.ArgumentParser(
        prog="agentmem",
        description="Agent-memory storage architectures: inspect arms, write to and query "
        "built stores, check an arm against the contract. The experiments themselves run "
        "under Snakemake (`make reproduce`).",
    )
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", required=True)
    arms.add_parser(sub)
    remember.add_parser(sub)
    recall.add_parser(sub)
    check_arm.add_parser(sub)
    schema.add_parser(sub)
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse the ``agentmem`` arguments ``argv`` (without the program name).

    After ``check-arm ... --`` the rest is pytest's, verbatim (``pytest_args``). Bad
    arguments exit with code 2 and argparse's message, as on the command line.
    """
    argv = list(argv)
    passed: list[str] = []
    if argv[:1] == ["check-arm"] and "--" in argv:  # pytest's own options, verbatim
        cut = argv.index("--")
        argv, passed = argv[:cut], argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    args.pytest_args = passed
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agentmem`` command; returns the process exit code.

    A reader that stops reading (``agentmem recall ... | head -3``) ends the command
    quietly with code 0, as the Python documentation's note on ``SIGPIPE`` advises: the
    rest of the output goes to ``os.devnull``.
    """
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(format="agentmem: %(levelname)s: %(message)s", level=logging.WARNING)
    try:
        code = int(args.func(args))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code
