"""Tests for the Milvus Lite product arm ``milvus-lite`` (arms/milvus/) on the tiny corpus."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
import pytest
from support.hostile import HOSTILE_TEXTS
from support.paths import REPO
from support.tiny import fake_query as q, fake_vector, make_tiny

from agentmem.arms import ARMS
from agentmem.arms.base import MEMORY_SCHEMA, ArmError, Embeddings, Predicate, Query
from agentmem.arms.milvus import (
    DB_NAME,
    MAX_TOPK,
    MilvusLiteArm,
    ids_expr,
    predicate_expr,
    query_expr,
    string_literal,
)

CURRENT = Predicate("superseded_by", "is_null")


def sims(text: str) -> dict[str, float]:
    """Exact cosine of every tiny memory to fake_vector(text)."""
    _, vectors = make_tiny()
    return dict(zip(vectors.ids, (vectors.matrix @ fake_vector(text)).tolist(), strict=True))


def assert_ranked(ids: list[str], text: str, pool: set[str], k: int) -> None:
    """``ids`` are the top-``k`` of ``pool`` by exact cosine (ties in either order)."""
    sim = sims(text)
    want = sorted((sim[m] for m in pool), reverse=True)[:k]
    assert len(ids) == len(want) and set(ids) <= pool
    np.testing.assert_allclose([sim[m] for m in ids], want, atol=1e-5)


def batch(*rows: dict) -> tuple[pl.DataFrame, Embeddings]:
    """A remember batch: each memory's vector is the fake vector of its body."""
    frame = pl.DataFrame(list(rows))
    mat = np.stack([fake_vector(b) for b in frame["body"].to_list()])
    return frame, Embeddings(frame["memory_id"].to_list(), mat)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One read-only tiny store for the query tests."""
    corpus, vectors = make_tiny()
    arm = MilvusLiteArm()
    arm.build(corpus, vectors, tmp_path_factory.mktemp("milvus_ro"))
    yield arm
    arm.close()


@pytest.fixture
def arm(tmp_path):
    """A fresh tiny store per test (for writes)."""
    corpus, vectors = make_tiny()
    a = MilvusLiteArm()
    a.build(corpus, vectors, tmp_path / "store")
    yield a
    a.close()


# ---------------------------------------------------------------- expressions


def test_expressions_escape_untrusted_values():
    assert string_literal("a\"b\\c\nd\te'f") == '"a\\"b\\\\c\\nd\\te\'f"'
    assert predicate_expr(None) == ""
    assert predicate_expr(Predicate("created_day", "<=", 11)) == "created_day <= 11"
    assert predicate_expr(Predicate("created_day", "=", 11)) == "created_day == 11"
    assert predicate_expr(Predicate("session_id", "=", "x")) == 'session_id == "x"'
    assert predicate_expr(CURRENT) == 'superseded_by == ""'
    assert predicate_expr(Predicate("created_day", "is_null")) == "created_day is null"
    # "" is the stored null marker and a lone surrogate no stored string: both match nothing
    assert predicate_expr(Predicate("fact_id", "=", "")) == "created_day is null"
    assert predicate_expr(Predicate("session_id", "=", "\ud800")) == "created_day is null"
    assert ids_expr("memory_id", ["a", "it's"]) == 'memory_id in ["a", "it\'s"]'


def test_scope_and_predicate_are_one_escaped_expression():
    vec = fake_vector("x")
    assert query_expr(Query("q", "x", vec)) == ""
    assert query_expr(Query("q", "x", vec, scope='u"1')) == 'scope_id == "u\\"1"'
    both = Query("q", "x", vec, CURRENT, scope="u1")
    assert query_expr(both) == '(scope_id == "u1") and (superseded_by == "")'
    never = Query("q", "x", vec, Predicate("fact_id", "=", ""), scope="u1")
    assert query_expr(never) == "created_day is null"
    assert query_expr(Query("q", "x", vec, scope="\ud800")) == "created_day is null"


#: a scope that widens a filter pasted between double quotes unescaped
HOSTILE_SCOPE = 'al"pha" or scope_id != "'


def test_scope_filters_search_and_count_and_survives_reopen(arm, tmp_path):
    body = "INC-2356: SVC-5345 outage caused by a full disk."
    rows = [
        {"memory_id": "A1", "body": body, "created_day": 700, "scope_id": "alpha"},
        {"memory_id": "A2", "body": body, "created_day": 701, "scope_id": "alpha"},
        {"memory_id": "H1", "body": body, "created_day": 702, "scope_id": HOSTILE_SCOPE},
    ]
    arm.remember(*batch(*rows))
    assert arm.fetch(["A1", "H1", "M1"])["scope_id"].to_list() == ["alpha", HOSTILE_SCOPE, None]

    def scoped(a: MilvusLiteArm, scope: str, pred=None) -> tuple[list[str], int]:
        res = a.query(Query("s", "", fake_vector(body), pred, True, scope=scope), 10)
        return sorted(res.memory_ids), res.count

    early = Predicate("created_day", "<=", 700)
    for a in (arm, MilvusLiteArm()):
        if a is not arm:  # the scope column is in the flushed segment after the reopen
            arm.close()
            a.open(tmp_path / "store")
        assert scoped(a, "alpha") == (["A1", "A2"], 2)
        assert scoped(a, "alpha", early) == (["A1"], 1)
        assert scoped(a, HOSTILE_SCOPE) == (["H1"], 1)  # one literal, not an or
        assert scoped(a, "al") == ([], 0) and scoped(a, 'al"pha') == ([], 0)
        assert a.query(Query("u", "", fake_vector(body), wants_count=True), 20).count == 9
    plan = a.explain(Query("s", "", fake_vector(body), early, scope="alpha"), 3)
    assert 'EXPR = (scope_id == "alpha") and (created_day <= 700)' in plan
    a.close()


def test_constructor_refuses_bad_parameters():
    for kw in ({"ef": 0}, {"M": 1}, {"ef_construction": 0}, {"batch_size": 0}):
        with pytest.raises(ValueError, match="milvus-lite"):
            MilvusLiteArm(**kw)
    assert ARMS["milvus-lite"] is MilvusLiteArm
    assert MilvusLiteArm.products == ("pymilvus", "milvus-lite")
    caps = MilvusLiteArm.capabilities
    assert (caps.predicate, caps.aggregate, caps.filter_stage) == (True, True, "in-search")
    assert (MilvusLiteArm.candidate_param, MilvusLiteArm.candidate_unit) == ("ef", "list")


# ---------------------------------------------------------------- queries


def test_plain_search_ranks_by_cosine(built):
    for text, k in (("CFG-799 timeout", 6), ("amber ledger", 2), ("drain traffic first", 3)):
        res = built.query(q(text), k)
        assert res.count is None
        assert_ranked(res.memory_ids, text, {"M1", "M2", "M3", "M4", "M5", "M6"}, k)
    assert built.query(
        q("RUN-481: to rotate keys on SVC-77, drain traffic first."), 1
    ).memory_ids == ["M6"]


@pytest.mark.parametrize(
    ("pred", "pool"),
    [
        (Predicate("session_id", "=", "S1"), {"M1", "M2", "M3"}),
        (Predicate("created_day", "<=", 15), {"M1", "M2", "M3"}),
        (Predicate("created_day", "=", 320), {"M5", "M6"}),
        (Predicate("fact_id", "=", "F1"), {"M1", "M2", "M5"}),
        (Predicate("fact_id", "is_null"), {"M3"}),
        (CURRENT, {"M3", "M4", "M5", "M6"}),
        (Predicate("superseded_by", "=", "M5"), {"M1", "M2"}),
        (Predicate("created_day", "is_null"), set()),
        (Predicate("session_id", "=", "nobody"), set()),
        (Predicate("fact_id", "=", ""), set()),  # not the memories without a fact
        (Predicate("superseded_by", "=", "\ud800"), set()),  # not UTF-8: no stored value
    ],
)
def test_predicates_filter_in_search_and_count_exactly(built, pred, pool):
    text = "CFG-799 sets the timeout"
    res = built.query(q(text, predicate=pred, wants_count=True), 10)
    assert_ranked(res.memory_ids, text, pool, 10)
    assert res.count == len(pool)
    # k is filled from the matches (the filter runs inside the search)
    assert len(built.query(q(text, predicate=pred), 2).memory_ids) == min(2, len(pool))


def test_count_without_predicate_is_the_collection_size(built):
    assert built.query(q("x", wants_count=True), 0).count == 6
    assert built.query(q("x", wants_count=True), 0).memory_ids == []


def test_bad_calls(built):
    with pytest.raises(ArmError, match="milvus-lite.*384"):
        built.query(Query("b", "t", fake_vector("t")[:17]), 3)
    with pytest.raises(ArmError, match="no embedding"):
        built.query(Query("b", "t", None), 3)  # type: ignore[arg-type]
    assert built.query(Query("b", "t", np.full(384, np.nan, np.float32)), 3).memory_ids == []
    assert built.query(q("x"), -1).memory_ids == []
    assert len(built.query(q("x", predicate=CURRENT), 10**6).memory_ids) == 4
    for text in HOSTILE_TEXTS:  # the text is never used: no expression, no parse
        assert len(built.query(q(text, predicate=CURRENT, wants_count=True), 3).memory_ids) == 3


def test_explain_names_the_call_index_and_filter(built):
    plan = built.explain(q("x", predicate=Predicate("session_id", "=", 'S"1'), wants_count=True), 7)
    assert "MilvusClient.search(collection_name='memories'" in plan
    assert "limit=7" in plan and "'ef': 64" in plan and "'metric_type': 'COSINE'" in plan
    assert "'index_type': 'HNSW'" in plan and "over 6 rows" in plan
    assert 'session_id == "S\\"1"' in plan and "count(*)" in plan
    assert f"limit={MAX_TOPK}" in built.explain(q("x"), 10**6)


def test_storage_is_the_data_directory(built):
    st = built.storage()
    assert st.total_bytes == sum(st.objects.values()) > 0
    assert st.objects["collections/"] == st.total_bytes  # segments, index, WAL, manifest
    assert st.counts == {"memories": 6}
    assert "directory size" in st.source


def test_fetch_returns_rows_in_order_with_the_memory_schema(built):
    got = built.fetch(["M4", "nope", "M1", "M4"])
    assert got.columns == list(MEMORY_SCHEMA) and dict(got.schema) == MEMORY_SCHEMA
    assert got["memory_id"].to_list() == ["M4", "M1"]
    m4, m1 = got.rows(named=True)
    assert (m4["session_id"], m4["turn_no"], m4["created_day"], m4["fact_id"]) == (
        "S2",
        0,
        200,
        "F2",
    )
    assert (m4["superseded_by"], m4["form"], m4["entity_ids"]) == (None, None, None)
    assert m4["body"] == "INC-2356: SVC-5345 outage caused by a full disk."
    assert (m1["superseded_by"], m1["kind"], m1["source"], m1["confidence"]) == (
        "M5", "semantic", "user_message", 0.9,
    )  # fmt: skip
    assert built.fetch([]).height == 0


# ---------------------------------------------------------------- writes


def test_remember_is_visible_and_corrects_through_upsert(arm):
    body = "INC-2356: SVC-5345 outage caused by a full disk."
    assert "M4" in arm.query(q(body, predicate=CURRENT), 10).memory_ids
    fix = "INC-2356: SVC-5345 outage caused by a failed fan."
    arm.remember(*batch({"memory_id": "N1", "body": fix, "created_day": 700,
                         "session_id": "S9", "supersedes": ["M4"]}))  # fmt: skip
    ids = arm.query(q(body, predicate=CURRENT, wants_count=True), 10)
    assert "M4" not in ids.memory_ids and "N1" in ids.memory_ids and ids.count == 4
    assert arm.query(q(body, predicate=Predicate("superseded_by", "=", "N1")), 10).memory_ids == [
        "M4"
    ]
    rows = {r["memory_id"]: r for r in arm.fetch(["M4", "N1"]).iter_rows(named=True)}
    assert rows["M4"]["superseded_by"] == "N1" and rows["M4"]["body"] == body
    assert (rows["M4"]["session_id"], rows["M4"]["created_day"]) == ("S2", 200)  # kept whole
    assert (rows["N1"]["session_id"], rows["N1"]["kind"], rows["N1"]["superseded_by"]) == (
        "S9", "episodic", None,
    )  # fmt: skip
    # the rewritten M4 kept its vector: it is still its own body's nearest memory
    assert arm.query(q(body), 1).memory_ids == ["M4"]
    assert arm.storage().counts == {"memories": 7}  # the upsert replaced M4, no copy


def test_remember_refuses_stored_and_unknown_ids_writing_nothing(arm):
    bad = [
        ({"memory_id": "M2", "body": "again", "created_day": 1}, "'M2' is already stored"),
        ({"memory_id": "N1", "body": "x", "created_day": 1, "supersedes": ["gone"]}, "'gone'"),
    ]
    for row, match in bad:
        with pytest.raises(ArmError, match=match):
            arm.remember(*batch(row))
        assert arm.fetch(["N1"]).height == 0
        assert arm.fetch(["M2"])["body"].to_list() == [
            "The amber ledger gateway waits half a minute per call."
        ]
    # a correction may name a memory of its own batch
    arm.remember(*batch({"memory_id": "N1", "body": "first", "created_day": 1},
                        {"memory_id": "N2", "body": "second", "created_day": 2,
                         "supersedes": ["N1"]}))  # fmt: skip
    assert arm.fetch(["N1", "N2"])["superseded_by"].to_list() == ["N2", None]


_REFUSING_PROCESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import polars as pl
    from support.tiny import make_tiny

    from agentmem.arms.base import ArmError, Corpus, Embeddings
    from agentmem.arms.milvus import MilvusLiteArm

    root, too_long = Path(sys.argv[1]), "x" * 65536
    corpus, vectors = make_tiny()
    arm = MilvusLiteArm()
    arm.build(corpus, vectors, root / "ok")
    row = {**corpus.memories.row(0, named=True), "memory_id": "N1", "body": too_long}
    try:
        arm.remember(pl.DataFrame([row]), Embeddings(["N1"], vectors.get(["M1"])))
    except ArmError as exc:
        print("REFUSED", exc)
    arm.close()
    long_m1 = pl.when(pl.col("memory_id") == "M1").then(pl.lit(too_long)).otherwise("body")
    other = MilvusLiteArm()
    try:
        other.build(Corpus(corpus.memories.with_columns(body=long_m1)), vectors, root / "long")
    except ArmError as exc:
        print("REFUSED", exc)
    other.close()
    """
)


def test_a_refused_value_is_an_arm_error_and_nothing_is_printed(tmp_path):
    """A body over the VARCHAR limit, in remember and in build, in a process of its own:
    Milvus Lite refuses it, the ArmError carries its message (field and limit), and the
    process's stderr (a terminal, a workflow log) stays empty of the product's error log."""
    proc = subprocess.run(
        [sys.executable, "-c", _REFUSING_PROCESS, str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "tests")},
    )  # fmt: skip
    refused = [line for line in proc.stdout.splitlines() if line.startswith("REFUSED")]
    assert len(refused) == 2, proc.stdout + proc.stderr
    for line in refused:
        assert line.startswith("REFUSED milvus-lite: ")
        assert "VARCHAR field 'body' value length 65536 exceeds max_length=65535" in line
    assert "ERROR" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_hostile_values_are_stored_and_filtered_verbatim(arm):
    sess = "'; DROP TABLE x; --\"\\\n\x00😀"
    body = "it's O'Brien's \"quoted\" \\ text\x00 NEAR(a b)"
    arm.remember(*batch({"memory_id": "it's \"odd\"", "body": body, "created_day": 9,
                         "session_id": sess}))  # fmt: skip
    got = arm.fetch(['it\'s "odd"']).row(0, named=True)
    assert (got["body"], got["session_id"]) == (body, sess)
    res = arm.query(q("x", predicate=Predicate("session_id", "=", sess), wants_count=True), 5)
    assert res.memory_ids == ['it\'s "odd"'] and res.count == 1


def test_reopen_in_process_and_remember_after_it(arm, tmp_path):
    store = tmp_path / "store"
    arm.remember(*batch({"memory_id": "N1", "body": "before the reopen", "created_day": 700}))
    before = arm.query(q("CFG-799 timeout"), 7).memory_ids
    arm.close()
    arm.close()  # idempotent
    with pytest.raises(ArmError, match="not open"):
        arm.query(q("x"), 3)
    again = MilvusLiteArm()
    again.open(store)  # the memtable was flushed into a segment by the close
    assert again.query(q("CFG-799 timeout"), 7).memory_ids == before
    again.remember(*batch({"memory_id": "N2", "body": "after the reopen", "created_day": 701}))
    assert again.query(q("after the reopen"), 1).memory_ids == ["N2"]
    # a second instance on the same store shares the server; closing it keeps the first
    other = MilvusLiteArm()
    other.open(store)
    assert other.fetch(["N1", "N2"])["memory_id"].to_list() == ["N1", "N2"]
    other.close()
    assert again.query(q("before the reopen"), 1).memory_ids == ["N1"]
    again.close()
    arm.open(store)  # leave the fixture closable


def test_open_refuses_a_collection_without_the_stored_fields(arm, tmp_path):
    client = arm._client
    client.drop_collection("memories")
    client.create_collection("memories", dimension=384, primary_field_name="memory_id",
                             id_type="string", max_length=64)  # fmt: skip
    arm.close()
    with pytest.raises(ArmError, match="lacks the fields .*'scope_id'"):
        MilvusLiteArm().open(tmp_path / "store")


def test_open_missing_store_names_the_path(tmp_path):
    with pytest.raises(ArmError, match="nope"):
        MilvusLiteArm().open(tmp_path / "nope")
    (tmp_path / "empty" / DB_NAME).mkdir(parents=True)  # a data directory, no collection
    with pytest.raises(ArmError, match="has no collection memories"):
        MilvusLiteArm().open(tmp_path / "empty")


_OTHER_PROCESS = textwrap.dedent(
    """
    import sys
    from agentmem.arms.base import ArmError, Query
    from agentmem.arms.milvus import MilvusLiteArm
    arm = MilvusLiteArm()
    try:
        arm.open(sys.argv[1])
    except ArmError as exc:
        print("REFUSED", exc)
        raise SystemExit(0)
    print("OPENED", arm.storage().counts["memories"])
    arm.close()
    """
)


def _open_elsewhere(store) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, str(store)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return proc.stdout + proc.stderr


def test_one_process_per_store_and_close_releases_it(arm, tmp_path):
    store = tmp_path / "store"
    out = _open_elsewhere(store)
    assert "REFUSED" in out and "Open local milvus failed" in out and str(store) in out
    # Milvus Lite logs the cause, pymilvus reports only "Open local milvus failed": the
    # arm puts the logged cause into its ArmError and keeps the log off stderr
    refused = next(line for line in out.splitlines() if line.startswith("REFUSED"))
    assert "Milvus Lite: Failed to start MilvusLite server for" in refused
    assert "DataDirLockedError: another process holds the lock on" in refused
    assert "Traceback" not in out and out.count("DataDirLockedError") == 1
    arm.close()  # stops the in-process server and releases the lock
    assert "OPENED 6" in _open_elsewhere(store)
    arm.open(store)
    assert arm.storage().counts == {"memories": 6}


_READER_PROCESS = """
import sys
from agentmem.runner import opened
with opened("milvus-lite", {}, sys.argv[1]) as a:
    print("READ", a.storage().counts["memories"])
"""


def test_readers_open_a_private_copy_while_the_store_is_held(arm, tmp_path):
    """Sweeps and probes read through runner.opened: a held store does not refuse them."""
    from agentmem.runner import opened

    store = tmp_path / "store"
    assert MilvusLiteArm.exclusive_store is True
    assert "REFUSED" in _open_elsewhere(store)  # the plain open meets the lock
    proc = subprocess.run(
        [sys.executable, "-c", _READER_PROCESS, str(store)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "READ 6" in proc.stdout, proc.stderr[-2000:]
    with opened("milvus-lite", {}, store) as reader:  # in this process too, beside `arm`
        assert reader.storage().counts == {"memories": 6}
        assert reader is not arm
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]  # copies removed
