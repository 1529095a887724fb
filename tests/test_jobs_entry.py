"""``agentmem.jobs.run_entry``: the one script that runs an experiment's job function."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from agentmem.jobs import run_entry


class Named(dict):
    """A stand-in for Snakemake's named lists: items by name, as attributes too."""

    __getattr__ = dict.__getitem__


def job(tmp_path, **params):
    return SimpleNamespace(
        input=Named(a="in.csv"),
        output=Named(table=str(tmp_path / "out.csv")),
        params=Named(**params),
        log=[str(tmp_path / "job.log")],
    )


def echo_job(input, output, params):
    """A job function: returns what it was handed."""
    return input.a, output.table, params.settings


def test_run_entry_calls_the_named_function_with_the_jobs_files(tmp_path, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "stderr", sys.stderr)  # run_entry points stderr at the log
    snake = job(tmp_path, entry=f"{__name__}:echo_job", settings={"k": 3}, timed=True)
    assert run_entry(snake) == ("in.csv", str(tmp_path / "out.csv"), {"k": 3})
    assert (tmp_path / "job.log").is_file()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (None, "params.entry must be 'package.module:function', not None"),
        ("agentmem.jobs", "params.entry must be 'package.module:function'"),
        ("agentmem.jobs:no_such_job", "agentmem.jobs has no function 'no_such_job'"),
        ("agentmem.jobs:CORPUS_TABLES", "agentmem.jobs has no function 'CORPUS_TABLES'"),
    ],
)
def test_run_entry_refuses_an_entry_that_names_no_function(tmp_path, monkeypatch, entry, message):
    import sys

    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(ValueError, match=re.escape(message)):
        run_entry(job(tmp_path, entry=entry, timed=True))
