"""The ``agentmem`` examples work as written on the corpus ``make reproduce`` builds.

Every ``agentmem`` command of the README (its bash blocks and inline examples) and of the
command's help (epilogs, the ``agentmem.cli`` docstring) parses with the command's own
parser. The entities, services, sessions and memories the examples name exist in the
main-size corpus of config/config.yaml (generated here, seeded: the same bytes as
``results/corpus/{main_size}/``) with the properties the examples rely on. The README
blocks holding ``recall``/``remember`` examples then run in order, as written, in a
working directory laid out like a clone after ``make reproduce``, with the stores of the
text-only arms built from that corpus; an example on an arm that reads vectors is parsed
and checked but not run (its store needs the encoder over every memory: minutes).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from support.paths import REPO

from agentmem.arms import ARMS
from agentmem.arms.base import Corpus, Embeddings, Predicate
from agentmem.cli import build_parser, parse_args, parse_where
from agentmem.config import load_config
from agentmem.corpus.generate import generate

README = REPO / "README.md"
CONFIG = load_config(REPO / "config" / "config.yaml")
AGENTMEM = ".venv/bin/agentmem"
#: an entity id as the corpus writes them (ADR-1267, CFG-3973, SVC-4304)
IDENTIFIER = re.compile(r"\b[A-Z]{2,4}-\d+\b")
#: a service name as the corpus writes them (search-daemon, loyalty-api)
SERVICE = re.compile(r"\b[a-z]+-[a-z]+\b")
CURRENT = Predicate("superseded_by", "is_null")


def bash_blocks(markdown: str) -> list[list[list[str]]]:
    """The fenced ``bash`` blocks of ``markdown``: each a list of commands, one argv each.

    Backslash continuations are joined and ``#`` comments dropped, as the shell does.
    """
    blocks = re.findall(r"^ *```bash\n(.*?)^ *```", markdown, re.MULTILINE | re.DOTALL)
    return [
        [
            argv
            for line in block.replace("\\\n", " ").splitlines()
            if (argv := shlex.split(line, comments=True))
        ]
        for block in blocks
    ]


def _subcommands() -> set[str]:
    (sub,) = [a for a in build_parser()._actions if a.dest == "cmd"]
    return set(sub.choices)


def agentmem_commands(markdown: str) -> list[list[str]]:
    """The ``agentmem`` arguments of every example: bash blocks, then inline code spans.

    An inline span counts when it starts ``agentmem SUBCOMMAND``.
    """
    fenced = [argv[1:] for block in bash_blocks(markdown) for argv in block if argv[0] == AGENTMEM]
    subcommands = _subcommands()
    inline = [
        shlex.split(span)[1:]
        for span in re.findall(r"`(?:\.venv/bin/)?(agentmem [^`]+)`", markdown)
        if shlex.split(span)[1] in subcommands
    ]
    return fenced + inline


def help_examples() -> list[list[str]]:
    """The ``agentmem`` examples of ``agentmem --help`` and each subcommand's ``--help``.

    The lines starting ``agentmem`` in the epilogs and the package docstring of
    ``agentmem.cli``, continuations joined.
    """
    import agentmem.cli

    (sub,) = [a for a in build_parser()._actions if a.dest == "cmd"]
    texts = [agentmem.cli.__doc__ or "", *(p.epilog or "" for p in sub.choices.values())]
    joined = (t.replace("\\\\\n", " ").replace("\\\n", " ") for t in texts)  # raw docstring too
    lines = (line.strip() for t in joined for line in t.splitlines())
    return [shlex.split(line, comments=True)[1:] for line in lines if line.startswith("agentmem ")]


def _on_a_store(args) -> bool:
    return args.cmd in ("recall", "remember")


#: the README's examples, then those of the command's help
EXAMPLES = agentmem_commands(README.read_text()) + help_examples()


def test_the_readme_has_recall_and_remember_examples():
    cmds = {argv[0] for argv in EXAMPLES}
    assert {"arms", "recall", "remember", "check-arm"} <= cmds, cmds


@pytest.mark.parametrize("argv", EXAMPLES, ids=" ".join)
def test_readme_command_parses(argv):
    args = parse_args(argv)  # argparse exits (code 2) on bad arguments
    if not _on_a_store(args):
        return
    assert args.arm in ARMS
    if args.cmd == "recall" and args.where is not None:
        parse_where(args.where)
    store = Path(args.store).parts
    if store[:2] == ("results", "stores"):  # a store the workflow builds: its layout
        assert len(store) == 4 and store[3] == args.arm, args.store
        size = store[2]
        built = CONFIG.arms if size == CONFIG.main_size else CONFIG.scaling_arms
        assert size in CONFIG.sizes and args.arm in built, f"make reproduce builds no {args.store}"


# --------------------------------------------------------------- the main corpus
@pytest.fixture(scope="module")
def main_corpus():
    """The main-size corpus of config/config.yaml (memories, facts, entities, sessions)."""
    return generate(CONFIG.sizes[CONFIG.main_size], CONFIG.corpus)


def _memories_of(memories: pl.DataFrame, entity_id: str) -> pl.DataFrame:
    return memories.filter(pl.col("entity_ids").list.contains(entity_id))


def test_readme_examples_name_what_the_main_corpus_holds(main_corpus):
    mem, ent, ses = main_corpus.memories, main_corpus.entities, main_corpus.sessions
    services = dict(ent.filter(pl.col("type") == "service").select("name", "entity_id").iter_rows())
    for argv in EXAMPLES:
        args = parse_args(argv)
        if not _on_a_store(args):
            continue
        named = IDENTIFIER.findall(args.text)
        for ident in named:
            assert not _memories_of(mem, ident).is_empty(), f"{ident}: no memory in {argv}"
        about = [_memories_of(mem, i) for i in named]
        for name in SERVICE.findall(args.text):
            assert name in services, f"{name}: no such service in {argv}"
            about.append(mem.filter(pl.col("body").str.contains(name, literal=True)))
        assert about, f"the example names nothing the corpus holds: {argv}"
        if args.cmd == "recall" and args.where is not None:
            pred = parse_where(args.where)
            if pred.field == "created_day":  # the memories it is about reach back that far
                assert any((m["created_day"] <= pred.value).any() for m in about), argv
        if args.cmd != "remember":
            continue
        if args.session is not None:
            (row,) = ses.filter(pl.col("session_id") == args.session).iter_rows(named=True)
            assert row["start_day"] <= args.day <= row["end_day"], argv
        for old in args.supersedes or []:
            (row,) = mem.filter(pl.col("memory_id") == old).iter_rows(named=True)
            assert row["superseded_by"] is None, f"{old} is already superseded: {argv}"
            assert set(row["entity_ids"]) & set(named), f"{old} is about none of {named}"


# ------------------------------------------------------------ running the examples
def _text_only(arm: str) -> bool:
    return ARMS[arm].capabilities.vector_access == "none"


@pytest.fixture(scope="module")
def clone(main_corpus, tmp_path_factory) -> Path:
    """A working directory like a clone after ``make reproduce``: ``.venv`` and the stores
    of the README's text-only arms, built from the main corpus."""
    root = tmp_path_factory.mktemp("clone")
    (root / ".venv").symlink_to(sys.prefix)  # this environment, with its console scripts
    g = main_corpus
    corpus = Corpus(memories=g.memories, sessions=g.sessions, facts=g.facts, entities=g.entities)
    ids = g.memories["memory_id"].to_list()
    vectors = Embeddings(ids, np.zeros((len(ids), 384), np.float32))  # never read
    for argv in EXAMPLES:
        args = parse_args(argv)
        store = root / args.store if _on_a_store(args) else None
        if store is None or Path(args.store).parts[:2] != ("results", "stores"):
            continue
        if _text_only(args.arm) and not store.exists():
            arm = ARMS[args.arm](**CONFIG.arm_params.get(args.arm, {}))
            arm.build(corpus, vectors, store)
            arm.close()
    return root


def test_readme_recall_and_remember_examples_run_as_written(clone):
    env = {**os.environ, "COLUMNS": "200"}
    blocks = [
        b for b in bash_blocks(README.read_text())
        if any(argv[:2] in ([AGENTMEM, "recall"], [AGENTMEM, "remember"]) for argv in b)
    ]  # fmt: skip
    ran, written, tables = [], [], []
    for argv in (argv for block in blocks for argv in block):
        if argv[0] == "cp":
            subprocess.run(argv, cwd=clone, check=True, timeout=60)
            continue
        assert argv[0] == AGENTMEM, f"the test runs agentmem and cp only: {shlex.join(argv)}"
        args = parse_args(argv[1:])
        if not _on_a_store(args) or not _text_only(args.arm):
            continue  # `arms` is tested in test_cli.py; vector arms need the encoder
        out = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True,
                             timeout=120)  # fmt: skip
        assert (out.returncode, out.stderr) == (0, ""), shlex.join(argv)
        ran.append(args.cmd)
        if args.cmd == "remember":
            assert re.fullmatch(r"\S+\n", out.stdout), out.stdout
            written.append((args.store, out.stdout.strip(), args.supersedes or []))
        elif args.json:
            found = [r["memory_id"] for r in json.loads(out.stdout)["results"]]
            assert found, shlex.join(argv)
            if args.where and parse_where(args.where) == CURRENT:  # corrections replace
                for store, new, old in written:
                    if store == args.store:
                        assert new in found and not set(old) & set(found), found
        else:
            tables.append(out.stdout)
            assert len(out.stdout.splitlines()) > 1, shlex.join(argv)  # a header and rows
    assert "recall" in ran and "remember" in ran, ran
    # the demonstration the README describes: current and superseded memories side by side
    assert any("superseded by" in t and "current" in t for t in tables), tables
