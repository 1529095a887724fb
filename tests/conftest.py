"""Fixtures and hooks only; the helpers they use live in tests/support/.

Arm unit tests use ``tiny`` (fast, no model); the conformance and end-to-end tests use the
real smoke corpus and the real embedding model.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.conformance import SELECTED_ARMS
from support.corpora import CACHE_ENV
from support.tiny import make_tiny
from support.workflow import copy_workflow_config, run_snakemake

from agentmem.arms.base import Corpus, Embeddings

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--arm",
        action="append",
        default=[],
        metavar="NAME",
        help="run the arm conformance suite (tests/test_conformance.py) on this registered "
        "arm only; repeat for several (default: every registered arm)",
    )


def pytest_configure(config: pytest.Config) -> None:
    from agentmem.arms import ARMS, plugin_problem

    for name in config.getoption("--arm"):
        if name in ARMS:
            continue
        broken = plugin_problem(name)
        if broken is not None:
            raise pytest.UsageError(broken.message())
        raise pytest.UsageError(f"--arm {name}: unknown arm; registered arms: {sorted(ARMS)}")
    SELECTED_ARMS[:] = list(dict.fromkeys(config.getoption("--arm")))


@pytest.fixture(scope="session", autouse=True)
def embedding_cache_for_the_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``$AGENTMEM_TEST_EMBEDDINGS``: kept when set (``make test`` shares one directory
    between its test processes), else a directory under this session's base temp."""
    default = tmp_path_factory.getbasetemp() / "embedding-cache"
    return Path(os.environ.setdefault(CACHE_ENV, str(default)))


@pytest.fixture
def tiny() -> tuple[Corpus, Embeddings]:
    """The six-memory corpus with fake vectors (``support.tiny.TINY_ROWS``)."""
    return make_tiny()


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole workflow on config/smoke.yaml, run once per session; its working directory."""
    wd = copy_workflow_config(tmp_path_factory.mktemp("e2e"), encoder=True)
    # the default profile's slots, as a user's `snakemake` gets them
    proc = run_snakemake(wd)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return wd
