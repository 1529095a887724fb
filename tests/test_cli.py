"""The agentmem command: argument handling and a real recall on a built store."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentmem import pg
from agentmem.arms.base import Predicate, Query
from agentmem.arms.sqlite import SqliteFtsArm
from agentmem.cli import clip, main, parse_where


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
    assert parse_where(f"created_day<={2**63 - 1}").value == 2**63 - 1
    with pytest.raises(ValueError, match="outside the 64-bit integer range"):
        parse_where(f"created_day<={2**63}")
    with pytest.raises(ValueError, match="outside the 64-bit integer range"):
        parse_where("created_day<=-99999999999999999999999")


def _store(tiny, path, cls=SqliteFtsArm):
    corpus, vectors = tiny
    arm = cls()
    arm.build(corpus, vectors, path)
    arm.close()
    return str(path)


def _lines(text: str) -> list[list[str]]:
    """Table lines split on runs of two or more spaces (cells hold single spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()]


def test_recall_on_a_real_store(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    store = _store(tiny, tmp_path)
    rc = main(["recall", "--arm", "sqlite-fts", "--store", store, "--where",
               "superseded_by is null", "CFG-799"])  # fmt: skip
    assert rc == 0
    out = capsys.readouterr().out
    rows = _lines(out)
    assert rows[0] == ["rank", "id", "day", "session", "kind", "status", "text"]
    assert {r[1] for r in rows[1:]} == {"M3", "M5"}
    m5 = next(r for r in rows[1:] if r[1] == "M5")
    # 100 columns - (4 + 2 + 3 + 7 + 8 + 7 fixed + 2 x 6 gaps) = 57 for the text, "…" included
    assert m5[2:] == ["320", "S3", "semantic", "current",
                      "Correction: CFG-799 now sets the timeout of SVC-5345 to…"]  # fmt: skip
    assert all(len(line) <= 100 for line in out.splitlines())
    rc = main(["recall", "--arm", "sqlite-fts", "--store", str(tmp_path / "nope"), "x"])
    assert rc == 1
    assert "nope" in capsys.readouterr().err


def test_recall_shows_superseded_memories(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    store = _store(tiny, tmp_path)
    assert main(["recall", "--arm", "sqlite-fts", "--store", store, "amber ledger"]) == 0
    rows = _lines(capsys.readouterr().out)
    assert rows[1] == ["1", "M2", "12", "S1", "semantic", "superseded by M5",
                       "The amber ledger gateway waits half a minute per call."]  # fmt: skip
    assert len(rows) == 2


def test_remember_then_recall(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    store = _store(tiny, tmp_path)
    body = "Correction: CFG-799 now sets the timeout of SVC-5345 to 60s."
    rc = main(["remember", "--arm", "sqlite-fts", "--store", store, "--session", "S9",
               "--day", "400", "--kind", "semantic", "--id", "M7", body,
               "--supersedes", "M5"])  # fmt: skip
    assert rc == 0
    assert capsys.readouterr().out == "M7\n"
    # the correction is current; the memory it corrects is hidden from current-only recall
    rc = main(["recall", "--arm", "sqlite-fts", "--store", store, "--json",
               "--where", "superseded_by is null", "CFG-799 timeout"])  # fmt: skip
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["arm"], doc["where"], doc["k"], doc["count"]) == (
        "sqlite-fts", "superseded_by is null", 10, None,
    )  # fmt: skip
    got = {r["memory_id"]: r for r in doc["results"]}
    assert set(got) == {"M7", "M3"}
    assert [r["rank"] for r in doc["results"]] == [1, 2]
    m7 = got["M7"]
    assert (m7["body"], m7["created_day"], m7["session_id"], m7["kind"]) == (
        body, 400, "S9", "semantic",
    )  # fmt: skip
    assert (m7["superseded"], m7["superseded_by"], m7["fetched"]) == (False, None, True)
    assert m7["entity_ids"] == [] and m7["source"] == "agent"
    # without the predicate the old one shows, marked superseded by the new one
    assert main(["recall", "--arm", "sqlite-fts", "--store", store, "CFG-799 timeout"]) == 0
    rows = {r[1]: r for r in _lines(capsys.readouterr().out)[1:]}
    assert rows["M5"][2:6] == ["320", "S3", "semantic", "superseded by M7"]
    assert rows["M7"][2:] == ["400", "S9", "semantic", "current", body]
    # a generated id, defaults for the rest
    assert main(["remember", "--arm", "sqlite-fts", "--store", store, "ZQX-77 rotates keys"]) == 0
    new_id = capsys.readouterr().out.strip()
    assert re.fullmatch(r"cli-[0-9a-f]{12}", new_id)
    assert main(["recall", "--arm", "sqlite-fts", "--store", store, "--json", "ZQX-77"]) == 0
    (hit,) = json.loads(capsys.readouterr().out)["results"]
    assert (hit["memory_id"], hit["created_day"], hit["session_id"], hit["kind"]) == (
        new_id, 0, None, "episodic",
    )  # fmt: skip


def test_remember_and_recall_within_a_scope(tiny, tmp_path, capsys):
    store = _store(tiny, tmp_path)
    for mid, scope in (("U1", "alice"), ("U2", "bob"), ("U3", None)):
        extra = ["--scope", scope] if scope else []
        argv = ["remember", "--arm", "sqlite-fts", "--store", store, "--id", mid, *extra]
        assert main([*argv, f"QPX-515 note of {mid}"]) == 0
    capsys.readouterr()
    ask = ["recall", "--arm", "sqlite-fts", "--store", store, "--json", "--count"]
    assert main([*ask, "--scope", "alice", "QPX-515"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["scope"], doc["count"]) == ("alice", 1)
    assert [(r["memory_id"], r["scope_id"]) for r in doc["results"]] == [("U1", "alice")]
    assert main([*ask, "QPX-515"]) == 0  # no scope: every memory
    assert {r["memory_id"] for r in json.loads(capsys.readouterr().out)["results"]} == {
        "U1", "U2", "U3",
    }  # fmt: skip
    assert main([*ask, "--scope", "carol", "QPX-515"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == []


def test_recall_table_is_one_line_per_memory_whatever_it_holds(tiny, tmp_path, capsys,
                                                               monkeypatch):  # fmt: skip
    monkeypatch.setenv("COLUMNS", "80")
    store = _store(tiny, tmp_path)
    body = "QRX-5 line one\nline two\x1b[2J\tend " + "y" * 200
    session = "S\n\x1b[31m" + "s" * 100
    rc = main(["remember", "--arm", "sqlite-fts", "--store", store, "--session", session,
               "--id", "H1", body])  # fmt: skip
    assert rc == 0
    capsys.readouterr()
    assert main(["recall", "--arm", "sqlite-fts", "--store", store, "QRX-5"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 2 and "\x1b" not in out
    # cells are cut at 40 columns; the text gets what is left, at least 20
    assert _lines(out)[1] == ["1", "H1", "0", "S \ufffd[31m" + "s" * 32 + "…", "episodic",
                              "current", "QRX-5 line one line…"]  # fmt: skip
    arm = SqliteFtsArm()
    arm.open(tmp_path)
    try:  # stored verbatim: only the display is cleaned
        assert arm.fetch(["H1"]).row(0, named=True)["session_id"] == session
    finally:
        arm.close()


def test_remember_embeds_with_the_project_encoder(tiny, tmp_path, capsys):
    """A vector arm gets the encoder's embedding: the same text then ranks it first."""
    from agentmem.arms.sqlite import SqliteHybridArm
    from agentmem.embeddings import encode

    store = _store(tiny, tmp_path, SqliteHybridArm)
    text = "the quartz relay restarts itself whenever the moon is full"
    assert main(["remember", "--arm", "sqlite-hybrid", "--store", store, "--id", "Q1", text]) == 0
    capsys.readouterr()
    arm = SqliteHybridArm()
    arm.open(tmp_path)
    try:
        q = Query("q", "", encode([text])[0])  # no text: only the vector branch can match
        assert arm.query(q, 3).memory_ids[0] == "Q1"
    finally:
        arm.close()


def test_remember_errors(tiny, tmp_path, capsys):
    store = _store(tiny, tmp_path)
    base = ["remember", "--arm", "sqlite-fts", "--store", store]
    assert main([*base, "x", "--supersedes", "NOPE"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("agentmem: sqlite-fts:") and "NOPE" in err
    assert main([*base, "--id", "M1", "again"]) == 1  # already stored
    assert "M1" in capsys.readouterr().err
    assert main([*base, "--scope", "", "x"]) == 1  # refused, like recall --scope ''
    assert "has an empty scope_id" in capsys.readouterr().err
    for flag in ("--scope", "--session", "--id"):  # argv bytes that are not UTF-8
        assert main([*base, flag, "u\udcff", "x"]) == 2, flag
        assert f"{flag} is not valid UTF-8" in capsys.readouterr().err, flag
    assert main([*base, "x \udcff"]) == 2
    assert "the memory text is not valid UTF-8" in capsys.readouterr().err
    assert main([*base[:-1], str(tmp_path / "absent"), "x"]) == 1
    assert "absent" in capsys.readouterr().err
    assert main([*base, "   "]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["remember", "--arm", "no-such", "--store", store, "x"]) == 2
    assert "unknown arm 'no-such'" in capsys.readouterr().err
    for bad_id, why in (
        ("", "empty or blank"),
        ("   ", "empty or blank"),
        (" M9", "white space"),
        ("M\n9", "control characters"),
        ("M\x009", "control characters"),
        ("M" * 201, "at most 200 characters, got 201"),
    ):
        assert main([*base, "--id", bad_id, "x"]) == 2, bad_id
        assert why in capsys.readouterr().err, bad_id
    assert main([*base, "--id", "M" * 200, "long but allowed"]) == 0
    assert capsys.readouterr().out.strip() == "M" * 200
    for bad in (["--day", "-1"], ["--day", "soon"], ["--day", str(2**31)], ["--kind", "opinion"]):
        with pytest.raises(SystemExit) as exc:
            main([*base, *bad, "x"])
        assert exc.value.code == 2
    capsys.readouterr()
    arm = SqliteFtsArm()
    arm.open(tmp_path)
    try:  # nothing was written by the failed calls
        assert arm.fetch(["NOPE", "x", "", "   ", " M9"]).height == 0
        assert arm.query(Query("q", "again", np.zeros(384, np.float32)), 10).memory_ids == []
    finally:
        arm.close()


def test_clip_to_terminal_columns():
    assert clip("x" * 10, 10) == "x" * 10
    assert clip("x" * 11, 10) == "x" * 9 + "…"
    assert clip("a\tb\n\nc", 80) == "a b c"
    assert clip("red \x1b[31malert\x00", 80) == "red \ufffd[31malert\ufffd"
    assert clip("データベース", 5) == "デー…"  # two columns per character
    assert clip("e\u0301" * 4, 4) == "e\u0301" * 4  # combining marks take none


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
    assert [line.split()[1] for line in out.stdout.splitlines()[1:]] == ["M5", "M3", "M1"]
    assert out.stderr == ""


def test_recall_notes_what_the_arm_cannot_do(tiny, tmp_path, capsys):
    from agentmem.arms.files import FileJsonlArm

    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path)
    arm.close()
    args = ["recall", "--arm", "file-jsonl", "--store", str(tmp_path), "--count"]
    assert main([*args, "--where", "superseded_by is null", "CFG-799"]) == 0
    err = capsys.readouterr().err
    assert "file-jsonl cannot apply predicates; --where is ignored" in err
    assert "file-jsonl cannot count; --count is ignored" in err


def test_recall_reopens_a_store_with_the_parameters_it_was_built_with(tiny, tmp_path, capsys):
    """A workflow store (<root>/stores/<size>/<arm>) is reopened with its build record's params."""
    from agentmem.arms.vector import FileVecMetaArm
    from agentmem.cli.common import new_arm, recorded_params

    corpus, vectors = tiny
    store = tmp_path / "stores" / "xs" / "file-vec-meta"
    arm = FileVecMetaArm(overfetch=2, ef_search=60)
    arm.build(corpus, vectors, store)
    arm.close()
    assert recorded_params(store, "file-vec-meta") is None  # no build record yet
    assert new_arm("file-vec-meta", store)[0].overfetch == 4  # so the defaults
    record = tmp_path / "builds" / "xs" / "file-vec-meta.json"
    record.parent.mkdir(parents=True)
    record.write_text(
        json.dumps({"arm": "file-vec-meta", "params": {"overfetch": 2, "ef_search": 60}})
    )
    assert recorded_params(store, "file-vec-meta") == {"overfetch": 2, "ef_search": 60}
    assert recorded_params(store, "file-vec") is None  # another arm's name: not its store
    reopened, code = new_arm("file-vec-meta", store)
    assert code == 0 and (reopened.overfetch, reopened.ef_search) == (2, 60)
    assert main(["recall", "--arm", "file-vec-meta", "--store", str(store), "CFG-799"]) == 0
    assert "M" in capsys.readouterr().out
    record.write_text(json.dumps({"params": {"overfetch": 0}}))
    assert new_arm("file-vec-meta", store) == (None, 1)
    assert "recorded parameters {'overfetch': 0}" in capsys.readouterr().err


def test_a_reader_that_stops_reading_ends_the_command_quietly():
    """``agentmem arms | head -1``: the pipe closes before the table is written; the
    command ends with code 0 and no traceback (the read end is closed before it starts)."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1] / "src"))
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first write
    try:
        out = subprocess.run(
            [sys.executable, "-m", "agentmem.cli", "arms"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        os.close(w)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr == ""
