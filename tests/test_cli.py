"""The agentmem command: argument handling and a real recall on a built store."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem import pg
from agentmem.arms.base import Predicate
from agentmem.arms.sqlite import SqliteFtsArm
from agentmem.cli import main, parse_where


def test_parse_where_forms():
    assert parse_where("created_day<=160") == Predicate("created_day", "<=", 160)
    assert parse_where(" session_id = S00012 ") == Predicate("session_id", "=", "S00012")
    assert parse_where("superseded_by is null") == Predicate("superseded_by", "is_null")
    with pytest.raises(ValueError, match="cannot parse"):
        parse_where("created_day")
    with pytest.raises(ValueError, match="not one of"):
        parse_where("colour=red")
    with pytest.raises(ValueError, match="not an integer"):
        parse_where("created_day<=soon")


def test_recall_on_a_real_store(tiny, tmp_path, capsys):
    corpus, vectors = tiny
    arm = SqliteFtsArm()
    arm.build(corpus, vectors, tmp_path)
    arm.close()
    rc = main(
        [
            "recall",
            "--arm",
            "sqlite-fts",
            "--store",
            str(tmp_path),
            "--where",
            "superseded_by is null",
            "CFG-799",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out.split()
    assert out[1::2] == ["M3", "M5"] or out[1::2] == ["M5", "M3"]
    rc = main(["recall", "--arm", "sqlite-fts", "--store", str(tmp_path / "nope"), "x"])
    assert rc == 1
    assert "nope" in capsys.readouterr().err


def test_recall_rejects_bad_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["recall", "--arm", "sqlite-fts", "--store", str(tmp_path), "--k", "0", "x"])
    assert "must be >= 1" in capsys.readouterr().err
    assert main(["recall", "--arm", "no-such", "--store", str(tmp_path), "x"]) == 2
    assert (
        main(["recall", "--arm", "sqlite-fts", "--store", str(tmp_path), "--where", "bogus", "x"])
        == 2
    )


def test_arms_lists_every_arm(capsys):
    from agentmem.arms import ARMS

    assert main(["arms"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ARMS)


def test_recall_on_a_pg_store_prints_no_noise(tiny, tmp_path):
    """``agentmem recall`` on a PostgreSQL store, without XDG_RUNTIME_DIR: stderr stays empty."""
    from agentmem.arms.postgres import PgBtreeArm

    corpus, vectors = tiny
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", pg.ENV_DSN)}
    arm = PgBtreeArm()
    arm.build(corpus, vectors, tmp_path / "pg")
    arm.close()
    exe = Path(sys.executable).with_name("agentmem")
    out = subprocess.run(
        [str(exe), "recall", "--arm", "pg-btree", "--store", str(tmp_path / "pg"), "CFG-799"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1::2] == ["M5", "M3", "M1"]
    assert out.stderr == ""
