"""Tests for the file-jsonl arm (arms/files.py): hand-computed and against a Python oracle.

Hand-computed expectations on the ``tiny`` corpus: the protocol and capabilities, the
stored columns, scoring by distinct terms then newest, reopening, storage and errors.

``reference_query`` below is the oracle, kept here (not in the library): ``json.loads``
of every line, Python scoring ``score = |{t in query_terms(text) : t in body.lower()}|``,
drop 0, stable sort by score, created_day, seq descending, take k. The arm must return
exactly its ids.

Also covered: torn and unreadable lines (skipped, counted, reported once per open), the bare
driver call ``raw_query_call`` being the very read-and-scan ``query`` makes, re-reading on every
call (an append by another process is seen), Unicode lower-casing (polars vs Python),
literal (never regex) matching, hostile texts and hyphenated identifiers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from support.hostile import HOSTILE_TEXTS
from support.timing import build_timed
from support.tiny import fake_query as q

from agentmem.arms import base
from agentmem.arms.files import JSONL_NAME, FileJsonlArm
from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus
from agentmem.corpus.io import load_corpus
from agentmem.text import query_terms

DIM = 384
ALL_IDS = {"M1", "M2", "M3", "M4", "M5", "M6"}


def reference_query(path: Path, text: str, k: int, rows: list[dict] | None = None) -> list[str]:
    """The original file-jsonl recall, line by line in Python (the oracle).

    ``rows`` may pass the already parsed lines of ``path`` (to compare many queries).
    """
    if rows is None:
        lines = path.read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    terms = query_terms(text or "")
    if not terms or k <= 0:
        return []
    scored = []
    for row in rows:
        body = str(row["body"] or "").lower()
        score = sum(1 for t in terms if t in body)
        if score:
            scored.append((score, int(row["created_day"]), int(row["seq"]), str(row["memory_id"])))
    scored.sort(key=lambda s: (-s[0], -s[1], -s[2]))
    return [s[3] for s in scored[:k]]


def memories(rows: list[tuple[str, str, int]]) -> base.Corpus:
    """A corpus of (memory_id, body, created_day) rows; seq = row position."""
    n = len(rows)
    return base.Corpus(
        memories=pl.DataFrame(
            {
                "memory_id": [r[0] for r in rows],
                "session_id": ["S1"] * n,
                "turn_no": list(range(n)),
                "seq": list(range(n)),
                "kind": ["semantic"] * n,
                "body": [r[1] for r in rows],
                "fact_id": [None] * n,
                "created_day": [r[2] for r in rows],
                "source": ["user_message"] * n,
                "confidence": [1.0] * n,
                "superseded_by": [None] * n,
                "tokens": [len(r[1].split()) for r in rows],
                "entity_ids": [[] for _ in rows],
            },
            schema_overrides={
                "turn_no": pl.Int32,
                "created_day": pl.Int32,
                "fact_id": pl.Utf8,
                "superseded_by": pl.Utf8,
                "tokens": pl.Int32,
                "entity_ids": pl.List(pl.Utf8),
            },
        )
    )


def probe_texts(bodies: list[str], extra: list[str]) -> list[str]:
    """Query texts: every hostile text, ``extra``, and words/pairs/fragments of bodies."""
    texts = list(HOSTILE_TEXTS) + list(extra)
    for i, body in enumerate(bodies):
        words = body.split()
        texts.append(body)
        texts.append(" ".join(words[:2]))
        texts.append(words[-1] if words else "")
        texts.append(body[len(body) // 3 : len(body) // 3 + 4])  # mid-word fragment
        if i % 3 == 0 and len(words) > 2:
            texts.append(f"What about {words[1].upper()} and {words[-2]}?")
    return texts


def assert_same_as_reference(arm: FileJsonlArm, path: Path, texts: list[str], ks) -> int:
    """Every (text, k) gives the reference ids; returns how many non-empty results."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    nonempty = 0
    for text in dict.fromkeys(texts):
        for k in ks:
            want = reference_query(path, text, k, rows)
            got = arm.query(q(text), k)
            assert isinstance(got, base.Result) and got.count is None
            assert got.memory_ids == want, (text, k)
            nonempty += bool(want)
    return nonempty


# ---------------------------------------------------------------- the tiny corpus by hand


@pytest.fixture
def jsonl(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    stats, wall_ms = build_timed(arm, corpus, vectors, tmp_path / "jsonl")
    assert 0 < stats.ingest_ms <= wall_ms and stats.index_ms == 0  # no index
    yield arm
    arm.close()


def test_jsonl_protocol_and_capabilities():
    arm = FileJsonlArm()
    assert isinstance(arm, base.Arm)
    assert arm.name == "file-jsonl" and arm.family == "file"
    c = arm.capabilities
    assert (c.predicate, c.join, c.aggregate, c.transactions) == (False, False, False, False)
    assert (c.vector_access, c.text_access) == ("none", "scan")


def test_jsonl_file_holds_every_column(jsonl, tiny, tmp_path):
    corpus, _ = tiny
    lines = (tmp_path / "jsonl" / JSONL_NAME).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6
    rows = [json.loads(line) for line in lines]
    assert rows == corpus.memories.rows(named=True)
    assert rows[0]["entity_ids"] == ["CFG-799", "SVC-5345"]
    assert rows[2]["superseded_by"] is None and rows[2]["fact_id"] is None


def test_jsonl_identifier_alone_and_in_question(jsonl):
    # M1, M3, M5 mention CFG-799; newest first on the tie: M5 (day 320), M3 (15), M1 (10).
    assert jsonl.query(q("CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]
    res = jsonl.query(q("What did we decide about CFG-799 last month?"), 10)
    # terms: decide, cfg-799, last, month -> M3 has "decide" (in "decided") and cfg-799.
    assert res.memory_ids == ["M3", "M5", "M1"]


def test_jsonl_scores_by_distinct_terms_then_newest(jsonl):
    # terms [timeout, cfg-799, svc-5345]: M1=3, M5=3, M4=1, M3=1.
    res = jsonl.query(q("What is the timeout of CFG-799 for SVC-5345?"), 10)
    assert res.memory_ids == ["M5", "M1", "M4", "M3"]
    # repeated terms count once; the cut to k keeps the best.
    assert jsonl.query(q("timeout timeout TIMEOUT"), 1).memory_ids == ["M5"]


def test_jsonl_substring_case_insensitive_and_seq_tiebreak(jsonl):
    assert jsonl.query(q("AMBER"), 10).memory_ids == ["M2"]
    # "svc" is a substring of SVC-5345 and SVC-77; M5 and M6 share day 320 -> seq decides.
    assert jsonl.query(q("svc"), 10).memory_ids == ["M6", "M5", "M4", "M1"]
    assert jsonl.query(q("nonexistentword"), 10).memory_ids == []


def test_jsonl_ignores_predicate_and_count(jsonl):
    res = jsonl.query(
        q("CFG-799", predicate=base.Predicate("session_id", "=", "S1"), wants_count=True), 10
    )
    assert res.memory_ids == ["M5", "M3", "M1"]  # M5 is in S3: predicate not applied
    assert res.count is None
    assert jsonl.query(q("CFG-799"), 0).memory_ids == []


def test_jsonl_rereads_file_on_every_query(jsonl, tmp_path):
    path = tmp_path / "jsonl" / JSONL_NAME
    row = {"memory_id": "M7", "body": "late amber note", "created_day": 400, "seq": 6}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
    assert jsonl.query(q("amber"), 10).memory_ids == ["M7", "M2"]


def test_jsonl_reopen_storage_and_errors(jsonl, tmp_path):
    store = tmp_path / "jsonl"
    other = FileJsonlArm()
    other.open(store)
    assert other.query(q("CFG-799"), 2).memory_ids == ["M5", "M3"]
    st = other.storage()
    size = (store / JSONL_NAME).stat().st_size
    assert st.total_bytes == size and st.objects == {JSONL_NAME: size}
    assert st.source == "file sizes"
    assert "FULL SCAN" in other.explain(q("CFG-799")) and "cfg-799" in other.explain(q("CFG-799"))
    other.close()
    other.close()  # idempotent
    with pytest.raises(base.ArmError, match="not open"):
        other.query(q("x"), 1)
    with pytest.raises(base.ArmError, match="missing"):
        FileJsonlArm().open(tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / JSONL_NAME).write_text('{"memory_id": "M1"\n', encoding="utf-8")
    torn = FileJsonlArm()
    torn.open(bad)  # a torn line is skipped, not fatal
    assert torn.query(q("M1"), 5).memory_ids == []
    assert torn.storage().counts == {"memories": 0, "unreadable_lines": 1}
    torn.close()


# ---------------------------------------------------------------- equivalence


def test_equivalent_to_reference_on_tiny(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "s")
    path = tmp_path / "s" / JSONL_NAME
    bodies = corpus.memories["body"].to_list()
    texts = probe_texts(bodies, ["svc", "CFG-799", "SVC-5345 timeout", "amber", "the of a"])
    n = assert_same_as_reference(arm, path, texts, (0, 1, 2, 3, 6, 10))
    assert n > 100  # the comparison is not vacuous
    arm.close()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated corpus (~1,000 memories) and its file-jsonl store."""
    d = tmp_path_factory.mktemp("gen")
    write_corpus(d / "corpus", SizeConfig(facts=300, queries_per_class=4), CorpusConfig())
    corpus = load_corpus(d / "corpus")
    arm = FileJsonlArm()
    arm.build(corpus, None, d / "store")
    queries = pl.read_parquet(d / "corpus" / "queries.parquet")["text"].to_list()
    yield arm, d / "store" / JSONL_NAME, corpus, queries
    arm.close()


def test_equivalent_to_reference_on_generated_corpus(generated):
    arm, path, corpus, queries = generated
    assert corpus.memories.height > 500
    bodies = corpus.memories["body"].to_list()[::7]
    texts = probe_texts(bodies, queries)
    n = assert_same_as_reference(arm, path, texts, (1, 10, 100_000))
    assert n > 500


def test_generated_queries_find_memories(generated):
    arm, path, _, queries = generated
    hits = [arm.query(q(t), 10).memory_ids for t in queries]
    assert sum(bool(h) for h in hits) >= len(queries) // 2
    assert all(len(h) <= 10 for h in hits)


def test_ties_keep_file_order_like_the_stable_sort(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "t")
    path = tmp_path / "t" / JSONL_NAME
    # rows equal on (score, created_day, seq): the earlier line wins, as in a stable sort
    with path.open("a", encoding="utf-8") as fh:
        for mid in ("T9", "T1", "T5", "T3"):
            row = {"memory_id": mid, "body": "tie amber", "created_day": 50, "seq": 7}
            fh.write(json.dumps(row) + "\n")
    assert arm.query(q("tie"), 10).memory_ids == ["T9", "T1", "T5", "T3"]
    assert arm.query(q("amber tie"), 3).memory_ids == ["T9", "T1", "T5"]
    assert arm.query(q("amber"), 10).memory_ids == ["T9", "T1", "T5", "T3", "M2"]
    for text in ("tie", "amber tie", "amber", "ledger tie", "CFG-799 tie"):
        for k in (1, 2, 4, 10):
            assert arm.query(q(text), k).memory_ids == reference_query(path, text, k)


NON_ASCII = [
    ("U1", "Die Straße nach İstanbul ist lang.", 5),
    ("U2", "ÆØÅ are Danish letters; æøå in lower case.", 6),
    ("U3", "STRASSE is the capitalised spelling.", 7),
    ("U4", "ΟΔΟΣ ΣΑΣ: final sigma at word ends.", 8),
    ("U5", "Temperature 300 \u212a (Kelvin sign) and 5 \u212b (Angstrom sign).", 9),
    ("U6", "İİ double dotted capital I, then istanbul in plain letters.", 10),
    ("U7", "ǅemal and ẞ capital sharp s; ﬁne ligature.", 11),
    ("U8", "データベースのタイムアウト and тайм-аут БАЗЫ данных.", 12),
    ("U9", "Reading: 300\u212a exactly.", 13),
]


def test_non_ascii_bodies_match_python_lowercasing(tmp_path):
    arm = FileJsonlArm()
    arm.build(memories(NON_ASCII), None, tmp_path / "u")
    path = tmp_path / "u" / JSONL_NAME
    texts = [
        "Straße",
        "STRASSE",
        "strasse",
        "İstanbul",
        "istanbul",
        "i̇stanbul",
        "ÆØÅ",
        "æøå",
        "ΟΔΟΣ",
        "οδος",
        "οδοσ",
        "σας",
        "K kelvin",
        "k",
        "å",
        "ǆemal",
        "ß",
        "ﬁne",
        "fine",
        "БАЗЫ",
        "базы",
        "データベース",
    ] + [b for _, b, _ in NON_ASCII]
    assert_same_as_reference(arm, path, texts, (1, 3, 10))
    # spot checks worked out by hand (Python lower(): 'İ' -> 'i' + U+0307, 'K' -> 'k')
    assert arm.query(q("Straße"), 10).memory_ids == ["U1"]
    assert arm.query(q("istanbul"), 10).memory_ids == ["U6"]
    assert arm.query(q("ÆØÅ"), 10).memory_ids == ["U2"]
    assert arm.query(q("k"), 10).memory_ids == ["U9", "U5"]  # U9 only via the Kelvin sign
    assert arm.query(q("БАЗЫ"), 10).memory_ids == ["U8"]
    arm.close()


def test_polars_lowercase_equals_python_on_assigned_code_points():
    # every code point assigned in this Python's Unicode database, alone and after 'AΣ'
    # (the final-sigma context); code points unassigned here are left out because newer
    # Unicode versions (in the Rust standard library) give some of them case mappings.
    chars = [
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) != "Cn"
    ]
    assert len(chars) > 100_000
    for texts in (chars, ["AΣ" + c for c in chars]):
        got = pl.Series(texts, dtype=pl.String).str.to_lowercase().to_list()
        bad = [t for t, g in zip(texts, got, strict=True) if t.lower() != g]
        assert bad == []


def test_terms_are_literal_substrings_never_patterns(tmp_path):
    rows = [
        ("R1", r"regex .* (group) [class] back\slash ^caret$ a+b? {2} | pipe", 1),
        ("R2", "plain words only: star group class", 2),
        ("R3", "100% of_the_rows use LIKE wildcards", 3),
    ]
    arm = FileJsonlArm()
    arm.build(memories(rows), None, tmp_path / "r")
    path = tmp_path / "r" / JSONL_NAME
    texts = list(HOSTILE_TEXTS) + [b for _, b, _ in rows] + ["(group)", "[class]", "%", "_"]
    assert_same_as_reference(arm, path, texts, (1, 10))
    assert arm.query(q("(group)"), 10).memory_ids == ["R2", "R1"]
    assert arm.query(q("[class]"), 10).memory_ids == ["R2", "R1"]
    assert arm.query(q("a+b?"), 10).memory_ids == ["R1"]  # 'a' is a stopword; term b
    assert arm.query(q("of_the_rows"), 10).memory_ids == ["R3"]
    arm.close()


# ---------------------------------------------------------------- the bare call


def test_raw_query_call_is_the_scan_query_makes(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "b")
    path = tmp_path / "b" / JSONL_NAME
    call = arm.raw_query_call(q("CFG-799"), 10)
    assert call() == arm.query(q("CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]
    assert call() == reference_query(path, "CFG-799", 10)
    # no caching: an appended line shows up in the next call, in query() as well
    with path.open("a", encoding="utf-8") as fh:
        fh.write(
            json.dumps({"memory_id": "M7", "body": "cfg-799", "created_day": 999, "seq": 9}) + "\n"
        )
    assert call() == arm.query(q("CFG-799"), 10).memory_ids == ["M7", "M5", "M3", "M1"]
    arm.close()
    with pytest.raises(base.ArmError, match="not open"):
        arm.raw_query_call(q("x"), 1)


def test_append_by_another_process_is_seen(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "p")
    path = tmp_path / "p" / JSONL_NAME
    assert arm.query(q("amber"), 10).memory_ids == ["M2"]
    script = textwrap.dedent(
        f"""
        import json
        with open({str(path)!r}, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({{"memory_id": "M8", "body": "Amber again", "created_day": 500,
                                 "seq": 8, "session_id": "S9"}}) + "\\n")
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert arm.query(q("amber"), 10).memory_ids == ["M8", "M2"]
    arm.close()


def test_predicate_and_count_ignored_and_k_bounds(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "k")
    pred = base.Predicate("session_id", "=", "S1")
    res = arm.query(q("CFG-799", pred, wants_count=True), 10)
    assert res.memory_ids == ["M5", "M3", "M1"] and res.count is None
    assert arm.query(q("CFG-799"), 0).memory_ids == []
    assert arm.query(q("CFG-799"), -3).memory_ids == []
    assert arm.query(q("CFG-799"), 2).memory_ids == ["M5", "M3"]
    arm.close()


# ---------------------------------------------------------------- corrupt files


def _good_line(mid: str = "G1", body: str = "amber text", day: int = 1, seq: int = 0) -> str:
    return json.dumps({"memory_id": mid, "body": body, "created_day": day, "seq": seq}) + "\n"


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("torn-tail", _good_line() + '{"memory_id": "G2", "bo', 2),
        ("not-json", _good_line() + "hello world\n", 2),
        ("array", _good_line() + "[1, 2]\n", 2),
        ("scalar", _good_line() + "42\n", 2),
        ("null", _good_line() + "null\n", 2),
        ("missing-body", _good_line() + '{"memory_id": "X", "created_day": 1, "seq": 1}\n', 2),
        (
            "null-day",
            _good_line() + '{"memory_id": "X", "body": "amber", "created_day": null, "seq": 1}\n',
            2,
        ),  # fmt: skip
        ("missing-id", '{"body": "amber", "created_day": 1, "seq": 1}\n' + _good_line(), 1),
        (
            "day-as-text",
            _good_line() + '{"memory_id": "X", "body": "amber", '
            '"created_day": "yesterday", "seq": 1}\n',
            2,
        ),  # fmt: skip
        (
            "bool-seq",
            _good_line() + '{"memory_id": "X", "body": "amber", "created_day": 1, "seq": true}\n',
            2,
        ),  # fmt: skip
    ],
)
def test_unreadable_line_is_skipped_counted_and_reported(tiny, tmp_path, caplog, name, text, line):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / name)
    path = tmp_path / name / JSONL_NAME
    path.write_text(text, encoding="utf-8")  # broken after the arm opened it
    with caplog.at_level("WARNING", logger="agentmem.arms.files"):
        assert arm.query(q("amber"), 10).memory_ids == ["G1"]
        assert arm.query(q(""), 10).memory_ids == []
        assert arm.raw_query_call(q("amber"), 10)() == ["G1"]
        st = arm.storage()
        assert st.counts == {"memories": 1, "unreadable_lines": 1}
        assert st.total_bytes == path.stat().st_size == sum(st.objects.values())
        assert st.objects[JSONL_NAME] == len(_good_line())
        other = FileJsonlArm()
        other.open(path.parent)
        assert other.query(q("amber"), 10).memory_ids == ["G1"]
    warned = [r.getMessage() for r in caplog.records]
    # once when the arm's query first met the line, once for the other arm's open()
    assert len(warned) == 2, warned
    assert all(f"{path}: skipped 1 unreadable line(s) (first: line {line})" in w for w in warned)
    arm.close()


def _ten_memories(store: Path) -> Path:
    rows = [
        {
            "memory_id": f"T{i}",
            "body": f"note {i} about the amber gateway",
            "created_day": i,
            "seq": i,
        }  # fmt: skip
        for i in range(10)
    ]
    store.mkdir(parents=True)
    path = store / JSONL_NAME
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


NEWEST_FIRST = [f"T{i}" for i in range(9, -1, -1)]


def test_line_cut_in_half_mid_file(tmp_path):
    """A line in the middle cut short: with its newline only that memory is lost; without
    it the fragment glues onto the next line, whose memory is recovered."""
    for keep_newline in (True, False):
        path = _ten_memories(tmp_path / f"cut-{keep_newline}")
        lines = path.read_bytes().split(b"\n")
        lines[4] = lines[4][: len(lines[4]) // 2]
        data = b"\n".join(lines)
        if not keep_newline:
            data = data.replace(lines[4] + b"\n", lines[4], 1)
        path.write_bytes(data)
        arm = FileJsonlArm()
        arm.open(path.parent)
        assert arm.query(q("amber gateway"), 20).memory_ids == [
            m for m in NEWEST_FIRST if m != "T4"
        ]
        assert arm.storage().counts["unreadable_lines"] == 1
        arm.close()


def test_torn_tail_then_next_append(tmp_path):
    """Half a line with no newline at the end (a crash mid-append), then a later append."""
    path = _ten_memories(tmp_path / "tail")
    half = json.dumps({"memory_id": "T10", "body": "never finished", "created_day": 10, "seq": 10})
    with path.open("a", encoding="utf-8") as fh:
        fh.write(half[: len(half) // 2])
    arm = FileJsonlArm()
    arm.open(path.parent)
    assert arm.query(q("amber gateway"), 20).memory_ids == NEWEST_FIRST
    assert arm.query(q("finished"), 20).memory_ids == []
    st = arm.storage()
    assert st.counts == {"memories": 10, "unreadable_lines": 1}
    assert st.objects["unreadable lines"] == len(half) // 2  # the fragment, no line end
    with path.open("a", encoding="utf-8") as fh:  # a writer unaware of the torn tail
        fh.write(json.dumps({"memory_id": "T11", "body": "amber again", "created_day": 11,
                             "seq": 11}) + "\n")  # fmt: skip
    assert arm.query(q("amber"), 20).memory_ids == ["T11", *NEWEST_FIRST]
    assert arm.storage().counts == {"memories": 11, "unreadable_lines": 1}
    arm.close()


def test_recall_cli_answers_from_a_torn_store(tmp_path):
    """``agentmem recall`` on a store with a torn tail exits 0, prints the hits and warns."""
    path = _ten_memories(tmp_path / "cli")
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"memory_id": "T10", "bo')
    exe = Path(sys.executable).with_name("agentmem")
    out = subprocess.run(
        [str(exe), "recall", "--arm", "file-jsonl", "--store", str(path.parent), "--k", "3",
         "note 9 amber"],  # fmt: skip
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "T9" in out.stdout
    assert "skipped 1 unreadable line(s) (first: line 11)" in out.stderr


def test_invalid_utf8_is_skipped_and_vanished_file_raises(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "v")
    path = tmp_path / "v" / JSONL_NAME
    bad = b'{"memory_id":"B","body":"caf\xe9","created_day":1,"seq":1}\n'
    path.write_bytes(_good_line().encode() + bad)
    assert arm.query(q("amber"), 10).memory_ids == ["G1"]
    assert arm.storage().counts["unreadable_lines"] == 1
    path.unlink()
    with pytest.raises(base.ArmError, match=re.escape(str(path))):
        arm.query(q("amber"), 10)
    with pytest.raises(base.ArmError, match="does not exist"):
        FileJsonlArm().open(tmp_path / "v")
    arm.close()


def test_empty_file_and_blank_lines(tmp_path):
    store = tmp_path / "e"
    store.mkdir()
    path = store / JSONL_NAME
    path.write_text("", encoding="utf-8")
    arm = FileJsonlArm()
    arm.open(store)
    assert arm.query(q("amber"), 10).memory_ids == []
    assert arm.raw_query_call(q("amber"), 10)() == []
    path.write_text("\n" + _good_line() + "\n  \n" + _good_line("G2", seq=1), encoding="utf-8")
    arm.open(store)
    assert arm.query(q("amber"), 10).memory_ids == ["G2", "G1"]
    assert arm.query(q("amber"), 10).memory_ids == reference_query(path, "amber", 10)
    arm.close()


# ---------------------------------------------------------------- hostile / identifiers


def test_hostile_texts_and_identifiers(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "h")
    for text in HOSTILE_TEXTS:
        res = arm.query(q(text), 10)
        assert isinstance(res, base.Result) and res.count is None
        assert len(res.memory_ids) <= 10 and len(set(res.memory_ids)) == len(res.memory_ids)
        assert set(res.memory_ids) <= ALL_IDS
        assert isinstance(arm.explain(q(text)), str)
    assert arm.query(q(""), 10).memory_ids == []
    assert arm.query(q("{}[]<>|&!~@#$"), 10).memory_ids == []
    assert arm.query(q("CFG-799 " * 1500), 10).memory_ids == ["M5", "M3", "M1"]
    assert arm.query(q("memories:CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]
    assert arm.query(q("CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]
    assert arm.query(q("Tell me about CFG-799, please"), 10).memory_ids == ["M5", "M3", "M1"]
    # terms select, memories, 1: only M6 holds one of them (the digit 1 of RUN-481)
    assert arm.query(q("SELECT * FROM memories WHERE 1=1"), 10).memory_ids == ["M6"]
    assert "read_ndjson" in arm.explain(q("CFG-799"))
    arm.close()


def test_store_path_with_glob_characters(tiny, tmp_path):
    # polars expands glob patterns in paths; the arm hands it the file's bytes instead
    corpus, vectors = tiny
    store = tmp_path / "we[ir]d*dir?"
    arm = FileJsonlArm()
    arm.build(corpus, vectors, store)
    assert arm.query(q("CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]
    assert arm.raw_query_call(q("CFG-799"), 10)() == ["M5", "M3", "M1"]
    other = FileJsonlArm()
    other.open(store)
    assert other.query(q("amber"), 10).memory_ids == ["M2"]
    arm.close()
    other.close()


# ---------------------------------------------------------------- remember / fetch


def _rows(*rows: dict) -> tuple[pl.DataFrame, base.Embeddings]:
    """A remember batch of ``rows`` with zero vectors (the file keeps none)."""
    frame = pl.DataFrame(list(rows))
    ids = frame["memory_id"].to_list()
    return frame, base.Embeddings(ids, np.zeros((len(ids), DIM), dtype=np.float32))


def test_remember_appends_one_line_per_memory_and_fetch_reads_it(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "rem")
    path = tmp_path / "rem" / JSONL_NAME
    before = path.read_bytes()
    frame, vecs = _rows(
        {"memory_id": "N1", "body": "Vault keys rotate hourly.", "created_day": 400, "seq": 7,
         "session_id": "S9", "entity_ids": ["VAULT"]},
        {"memory_id": "N2", "body": 'A "quoted" line\nwith a newline', "created_day": 401,
         "seq": 8},
    )  # fmt: skip
    arm.remember(frame, vecs)
    data = path.read_bytes()
    assert data.startswith(before)  # append-only
    added = [json.loads(line) for line in data[len(before) :].decode().splitlines()]
    assert [a["memory_id"] for a in added] == ["N1", "N2"]
    assert added[0] == {
        "memory_id": "N1", "session_id": "S9", "turn_no": None, "seq": 7, "kind": "episodic",
        "body": "Vault keys rotate hourly.", "fact_id": None, "created_day": 400,
        "source": "agent", "confidence": 1.0, "superseded_by": None, "tokens": 5,
        "entity_ids": ["VAULT"], "form": "turn", "scope_id": None,
    }  # fmt: skip
    assert added[1]["body"] == 'A "quoted" line\nwith a newline'
    assert arm.query(q("vault keys"), 3).memory_ids == ["N1", "M6"]  # 2 terms, then "keys"
    assert arm.query(q("quoted newline"), 3).memory_ids == ["N2"]
    got = arm.fetch(["N2", "nope", "M4", "N1", "N2"])
    assert got.columns == list(base.MEMORY_SCHEMA)
    assert dict(got.schema) == base.MEMORY_SCHEMA
    assert got["memory_id"].to_list() == ["N2", "M4", "N1"]
    assert got.row(1, named=True)["body"] == "INC-2356: SVC-5345 outage caused by a full disk."
    assert got.row(1, named=True)["entity_ids"] == ["INC-2356", "SVC-5345"]
    assert got.row(2, named=True)["session_id"] == "S9"
    assert arm.fetch([]).height == 0
    arm.close()


def test_correction_is_an_appended_line_and_fetch_resolves_it(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "corr")
    path = tmp_path / "corr" / JSONL_NAME
    before = path.read_bytes()
    arm.remember(*_rows({"memory_id": "N1", "body": "RUN-481 now drains nothing.",
                         "created_day": 500, "supersedes": ["M6", "M4"]}))  # fmt: skip
    data = path.read_bytes()
    assert data.startswith(before)  # the old lines are never rewritten
    line = json.loads(data[len(before) :])
    assert line["supersedes"] == ["M6", "M4"] and line["superseded_by"] is None
    rows = {r["memory_id"]: r for r in arm.fetch(["M6", "M4", "N1", "M1"]).iter_rows(named=True)}
    assert rows["M6"]["superseded_by"] == "N1" and rows["M4"]["superseded_by"] == "N1"
    assert rows["N1"]["superseded_by"] is None
    assert rows["M1"]["superseded_by"] == "M5"  # the build's value stays
    # a later correction of the same memory wins
    arm.remember(*_rows({"memory_id": "N2", "body": "RUN-481 final.", "created_day": 501,
                         "supersedes": ["M6"]}))  # fmt: skip
    assert arm.fetch(["M6", "M4"])["superseded_by"].to_list() == ["N2", "N1"]
    # reopened, the file says the same
    other = FileJsonlArm()
    other.open(path.parent)
    assert other.fetch(["M6", "M4"])["superseded_by"].to_list() == ["N2", "N1"]
    arm.close()


def test_remember_refuses_duplicates_and_unknown_supersessions_writing_nothing(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "dup")
    path = tmp_path / "dup" / JSONL_NAME
    before = path.read_bytes()
    bad = [
        ({"memory_id": "M3", "body": "again", "created_day": 1}, "'M3' is already stored"),
        ({"memory_id": "N1", "body": "x", "created_day": 1, "supersedes": ["gone"]}, "'gone'"),
        ({"memory_id": "N1", "body": "x", "created_day": 1, "confidence": float("nan")}, "JSON"),
        ({"memory_id": "N1", "body": "x"}, "created_day"),
    ]
    for row, match in bad:
        with pytest.raises(base.ArmError, match=match):
            arm.remember(*_rows(row))
        assert path.read_bytes() == before
    with pytest.raises(base.ArmError, match="'M1'"):  # the second row's duplicate refuses the batch
        arm.remember(*_rows({"memory_id": "N1", "body": "a", "created_day": 1},
                            {"memory_id": "M1", "body": "b", "created_day": 1}))  # fmt: skip
    assert path.read_bytes() == before
    # an id appended by another writer since the last look is seen as stored
    arm.remember(*_rows({"memory_id": "N1", "body": "a", "created_day": 1}))
    with path.open("a", encoding="utf-8") as fh:
        fh.write(_good_line("OTHER", "written elsewhere", 2, 99))
    with pytest.raises(base.ArmError, match="'OTHER' is already stored"):
        arm.remember(*_rows({"memory_id": "OTHER", "body": "mine", "created_day": 3}))
    arm.close()
    with pytest.raises(base.ArmError, match="not open"):
        arm.remember(*_rows({"memory_id": "N9", "body": "a", "created_day": 1}))
    with pytest.raises(base.ArmError, match="not open"):
        arm.fetch(["M1"])


def test_remember_after_a_torn_tail_keeps_the_new_memory_readable(tiny, tmp_path, caplog):
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "torn")
    path = tmp_path / "torn" / JSONL_NAME
    with path.open("a", encoding="utf-8") as fh:  # a crash mid-append: no newline
        fh.write('{"memory_id": "T1", "body": "amber torn')
    torn = path.read_bytes()
    with caplog.at_level("WARNING", logger="agentmem.arms.files"):
        arm.remember(*_rows({"memory_id": "N1", "body": "amber gateway restarted",
                             "created_day": 600}))  # fmt: skip
    data = path.read_bytes()
    assert data.startswith(torn + b"\n{")  # the fragment was ended before the new line
    assert data.endswith(b"\n")
    assert arm.query(q("amber"), 5).memory_ids == ["N1", "M2"]
    assert arm.fetch(["N1", "T1"])["memory_id"].to_list() == ["N1"]
    st = arm.storage()
    assert st.counts == {"memories": 7, "unreadable_lines": 1}
    assert st.objects["unreadable lines"] == len(b'{"memory_id": "T1", "body": "amber torn\n')
    # a second remember needs no separator
    arm.remember(*_rows({"memory_id": "N2", "body": "amber again", "created_day": 601}))
    assert path.read_bytes().count(b"\n") == data.count(b"\n") + 1
    assert arm.query(q("amber"), 5).memory_ids == ["N2", "N1", "M2"]
    arm.close()


def test_remember_into_an_empty_store(tmp_path):
    arm = FileJsonlArm()
    arm.build(memories([]), None, tmp_path / "empty")
    arm.remember(*_rows({"memory_id": "N1", "body": "first words", "created_day": 0}))
    assert (tmp_path / "empty" / JSONL_NAME).read_text(encoding="utf-8").count("\n") == 1
    assert arm.query(q("first"), 3).memory_ids == ["N1"]
    raw = arm.raw_query_call(q("first"), 3)()
    assert arm.raw_ids(raw, 3) == ["N1"] and arm.raw_ids(raw, 0) == []
    arm.close()


def test_scope_is_applied_in_the_scan_and_survives_reopen(tiny, tmp_path):
    """A scoped query returns only its scope's lines, ranked as usual; null scope: in none."""
    corpus, vectors = tiny
    arm = FileJsonlArm()
    arm.build(corpus, vectors, tmp_path / "scope")  # tiny lines carry no scope_id key
    arm.remember(*_rows(
        {"memory_id": "A1", "body": "vault keys rotate", "created_day": 400, "scope_id": "u1"},
        {"memory_id": "A2", "body": "vault keys rotate daily", "created_day": 401,
         "scope_id": "u2"},
        {"memory_id": "A3", "body": "vault opened", "created_day": 402, "scope_id": "u1"},
        {"memory_id": "A4", "body": "vault keys lost", "created_day": 403},  # scope_id null
    ))  # fmt: skip
    lines = (tmp_path / "scope" / JSONL_NAME).read_text(encoding="utf-8").splitlines()
    assert "scope_id" not in json.loads(lines[0]) and json.loads(lines[-1])["scope_id"] is None
    # unscoped, terms [vault, keys]: A4 A2 A1 score 2 (days 403, 401, 400), A3 M6 score 1
    assert arm.query(q("vault keys"), 10).memory_ids == ["A4", "A2", "A1", "A3", "M6"]

    def scoped(scope: str) -> base.Query:
        return base.Query("qs", "vault keys", np.zeros(DIM, np.float32), scope=scope)

    # u1: A1 (2 terms) before A3 (1 term, newer); M6 ("keys", no scope) and A4 (null) are out
    assert arm.query(scoped("u1"), 10).memory_ids == ["A1", "A3"]
    assert arm.query(scoped("u1"), 1).memory_ids == ["A1"]
    assert arm.query(scoped("u2"), 10).memory_ids == ["A2"]
    for other in ("U1", "u", "gamma", "u1' OR '1'='1", ".*", "u1\x00"):
        assert arm.query(scoped(other), 10).memory_ids == [], other  # exact match only
    for scope in ("u1", "gamma"):
        raw = arm.raw_query_call(scoped(scope), 10)()
        assert arm.raw_ids(raw, 10) == arm.query(scoped(scope), 10).memory_ids
    assert "scope_id = 'u1'" in arm.explain(scoped("u1")) and "no scope" in arm.explain(q("x"))
    assert arm.fetch(["A3", "A4", "M1"])["scope_id"].to_list() == ["u1", None, None]
    arm.close()
    again = FileJsonlArm()
    again.open(tmp_path / "scope")
    assert again.query(scoped("u1"), 10).memory_ids == ["A1", "A3"]
    again.close()
