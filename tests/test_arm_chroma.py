"""Tests for the Chroma product arm ``chroma`` (arms/chroma), on the tiny corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from support.hostile import HOSTILE_TEXTS
from support.timing import build_timed
from support.tiny import fake_query as q, fake_vector

from agentmem.arms import base
from agentmem.arms.chroma import COLLECTION, ChromaArm, query_where, where_filter

ALL_IDS = {"M1", "M2", "M3", "M4", "M5", "M6"}
DISK = "INC-2356: SVC-5345 outage caused by a full disk."
SRC = str(Path(__file__).resolve().parents[1] / "src")
TESTS = str(Path(__file__).resolve().parent)


def sims(tiny, text: str) -> dict[str, float]:
    """Exact cosine of every tiny memory to fake_vector(text)."""
    _, vectors = tiny
    return dict(zip(vectors.ids, (vectors.matrix @ fake_vector(text)).tolist(), strict=True))


def assert_cosine_ranked(tiny, ids: list[str], text: str, pool: set[str], k: int) -> None:
    """``ids`` are the top-``k`` of ``pool`` by exact cosine (ties in either order)."""
    sim = sims(tiny, text)
    want = sorted((sim[m] for m in pool), reverse=True)[:k]
    assert len(ids) == len(want) and set(ids) <= pool
    np.testing.assert_allclose([sim[m] for m in ids], want, atol=1e-6)


def _batch(*rows: dict) -> tuple[pl.DataFrame, base.Embeddings]:
    """A remember batch: each memory's vector is the fake vector of its body."""
    frame = pl.DataFrame(list(rows))
    ids = frame["memory_id"].to_list()
    mat = np.stack([fake_vector(b) for b in frame["body"].to_list()])
    return frame, base.Embeddings(ids, mat)


@pytest.fixture
def arm(tiny, tmp_path):
    corpus, vectors = tiny
    a = ChromaArm()
    stats, wall_ms = build_timed(a, corpus, vectors, tmp_path / "chroma-store")
    assert stats.ingest_ms > 0 and stats.index_ms == 0.0
    assert stats.ingest_ms <= wall_ms
    yield a
    a.close()


def random_corpus(n: int, seed: int = 5) -> tuple[base.Corpus, base.Embeddings, np.ndarray]:
    """``n`` random unit vectors; memory i is in session ``S{i % 250}``, day ``i``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ids = [f"R{i}" for i in range(n)]
    memories = pl.DataFrame(
        {
            "memory_id": ids,
            "session_id": [f"S{i % 250}" for i in range(n)],
            "seq": list(range(n)),
            "body": ["b"] * n,
            "fact_id": [None] * n,
            "created_day": list(range(n)),
            "superseded_by": [None] * n,
        },
        schema_overrides={"fact_id": pl.String, "superseded_by": pl.String},
    )
    return base.Corpus(memories=memories), base.Embeddings(ids=ids, matrix=x), x


def test_protocol_capabilities_and_lazy_import():
    a = ChromaArm()
    assert isinstance(a, base.Arm)
    assert (a.name, a.family, a.products) == ("chroma", "product", ("chromadb",))
    c = a.capabilities
    assert (c.predicate, c.join, c.aggregate, c.transactions) == (True, False, True, False)
    assert (c.vector_access, c.text_access, c.filter_stage) == (
        "hnsw-filtered",
        "none",
        "in-search",
    )
    assert a.prefix_stable is False
    assert (a.candidate_param, a.candidate_unit) == ("ef_search", "list")
    assert (a.ef_search, a.ef_construction, a.max_neighbors) == (100, 100, 16)
    assert ChromaArm.product_versions()["chromadb"] == "1.5.9"
    with pytest.raises(ValueError, match="ef_search >= 1"):
        ChromaArm(ef_search=0)
    code = "import sys; import agentmem.arms; print('chromadb' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    assert out.stdout.strip() == "False"  # listing the arms does not import chromadb


def test_where_filter_translation():
    assert where_filter(None) is None
    assert where_filter(base.Predicate("created_day", "<=", 15)) == {"created_day": {"$lte": 15}}
    assert where_filter(base.Predicate("session_id", "=", "S1")) == {"session_id": {"$eq": "S1"}}
    assert where_filter(base.Predicate("superseded_by", "is_null")) == {
        "superseded_by": {"$eq": ""}
    }


def test_query_where_puts_the_scope_beside_the_predicate():
    vec = fake_vector("x")
    assert query_where(base.Query("q", "x", vec)) is None
    assert query_where(base.Query("q", "x", vec, scope="u1")) == {"scope_id": {"$eq": "u1"}}
    both = base.Query("q", "x", vec, base.Predicate("created_day", "<=", 15), scope='{"$ne": ""}')
    assert query_where(both) == {
        "$and": [{"scope_id": {"$eq": '{"$ne": ""}'}}, {"created_day": {"$lte": 15}}]
    }


SCOPED = [  # (memory_id, scope_id, created_day): bodies and vectors as DISK
    ("A1", "alpha", 700),
    ("A2", "alpha", 701),
    ("H1", "al'pha\" OR 1=1; $ne", 702),
]


def test_scope_filters_search_and_count_and_survives_reopen(arm, tmp_path):
    rows = [{"memory_id": m, "body": DISK, "created_day": d, "scope_id": s} for m, s, d in SCOPED]
    frame = pl.DataFrame(rows)
    vecs = base.Embeddings(frame["memory_id"].to_list(), np.tile(fake_vector(DISK), (3, 1)))
    arm.remember(frame, vecs)
    assert arm.fetch(["A1", "H1", "M4"])["scope_id"].to_list() == ["alpha", SCOPED[2][1], None]
    early = base.Predicate("created_day", "<=", 700)

    def check(a: ChromaArm) -> None:
        def scoped(scope, pred=None):
            res = a.query(base.Query("s", "", fake_vector(DISK), pred, True, scope=scope), 10)
            return sorted(res.memory_ids), res.count

        assert scoped("alpha") == (["A1", "A2"], 2)
        assert scoped("alpha", early) == (["A1"], 1)
        assert scoped(SCOPED[2][1]) == (["H1"], 1)  # compared verbatim, not parsed
        assert scoped("alp") == ([], 0) and scoped("\ud800") == ([], 0)
        everything = a.query(base.Query("u", "", fake_vector(DISK), wants_count=True), 20)
        assert (len(everything.memory_ids), everything.count) == (9, 9)

    check(arm)
    plan = arm.explain(base.Query("s", "", fake_vector(DISK), early, scope="alpha"), 5)
    want = '{"$and": [{"scope_id": {"$eq": "alpha"}}, {"created_day": {"$lte": 700}}]}'
    assert f"where={want}" in plan
    arm.close()
    again = ChromaArm()
    again.open(tmp_path / "chroma-store")
    check(again)
    again.close()


def test_ranks_by_cosine(arm, tiny):
    res = arm.query(q("ignored text", vec_of=DISK), 3)
    assert res.memory_ids[0] == "M4" and res.count is None
    assert_cosine_ranked(tiny, res.memory_ids, DISK, ALL_IDS, 3)
    full = arm.query(q(vec_of="CFG-799 timeout"), 100).memory_ids
    assert full[:3] == ["M1", "M5", "M3"]  # 0.5, 0.447, 0.25; then ties at 0
    assert set(full) == ALL_IDS
    assert arm.query(q(vec_of=DISK), 0).memory_ids == []
    assert arm.query(q(vec_of=DISK), -2).memory_ids == []


@pytest.mark.parametrize(
    ("pred", "allowed"),
    [
        (base.Predicate("session_id", "=", "S1"), {"M1", "M2", "M3"}),
        (base.Predicate("created_day", "<=", 15), {"M1", "M2", "M3"}),
        (base.Predicate("created_day", "<=", 200), {"M1", "M2", "M3", "M4"}),
        (base.Predicate("fact_id", "=", "F1"), {"M1", "M2", "M5"}),
        (base.Predicate("superseded_by", "is_null"), {"M3", "M4", "M5", "M6"}),
        (base.Predicate("superseded_by", "=", "M5"), {"M1", "M2"}),
        (base.Predicate("fact_id", "is_null"), {"M3"}),
        (base.Predicate("session_id", "=", "nope"), set()),
        (base.Predicate("session_id", "=", ""), set()),  # "" is the null marker, no memory's id
        (base.Predicate("fact_id", "=", "\ud800"), set()),  # not UTF-8: Chroma refuses it
        (base.Predicate("created_day", "<=", 2**40), {"M1", "M2", "M3", "M4", "M5", "M6"}),
    ],
)
def test_predicates_filter_and_count(arm, tiny, pred, allowed):
    res = arm.query(q(vec_of=DISK, predicate=pred, wants_count=True), 10)
    assert set(res.memory_ids) == allowed
    assert_cosine_ranked(tiny, res.memory_ids, DISK, allowed, 10)
    assert res.count == len(allowed)
    assert arm.query(q(vec_of=DISK, predicate=pred), 10).count is None


def test_count_without_predicate_and_with_a_bad_vector(arm):
    assert arm.query(q(vec_of=DISK, wants_count=True), 2).count == 6
    nan = base.Query(
        "n", "x", np.full(384, np.nan, np.float32), base.Predicate("fact_id", "=", "F1"), True
    )
    assert arm.query(nan, 5) == base.Result(memory_ids=[], count=3)  # no search with nan
    with pytest.raises(base.ArmError, match="384"):
        arm.query(base.Query("s", "x", np.ones(5, np.float32)), 3)
    with pytest.raises(base.ArmError, match="no embedding"):
        arm.query(base.Query("s", "x", None), 3)  # type: ignore[arg-type]


def test_hostile_texts_are_ignored(arm):
    pred = base.Predicate("superseded_by", "is_null")
    want = arm.query(q(vec_of=DISK, predicate=pred), 10).memory_ids
    for text in HOSTILE_TEXTS:
        res = arm.query(q(text, vec_of=DISK, predicate=pred, wants_count=True), 10)
        assert res == base.Result(memory_ids=want, count=4)
        assert "IGNORED" in arm.explain(q(text, vec_of=DISK, predicate=pred), 10)


def test_explain_names_the_call(arm, tmp_path):
    plan = arm.explain(q(vec_of=DISK, predicate=base.Predicate("created_day", "<=", 15),
                         wants_count=True), 7)  # fmt: skip
    assert 'where={"created_day": {"$lte": 15}}' in plan and "n_results=7" in plan
    assert "space=cosine" in plan and "ef_search=100" in plan
    assert "collection.get(where=..., include=[])" in plan
    assert str(tmp_path / "chroma-store" / "chroma") in plan


def test_storage_is_the_directory(arm, tmp_path):
    root = tmp_path / "chroma-store" / "chroma"
    st = arm.storage()
    assert "chroma.sqlite3" in st.objects
    assert st.objects["chroma.sqlite3"] == (root / "chroma.sqlite3").stat().st_size > 0
    assert st.total_bytes == sum(st.objects.values())
    files = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    assert st.total_bytes == files
    assert "directory size" in st.source and st.counts == {"memories": 6}


def test_fetch_order_columns_and_values(arm):
    got = arm.fetch(["M4", "nope", "M1", "M4"])
    assert got.columns == list(base.MEMORY_SCHEMA) and dict(got.schema) == base.MEMORY_SCHEMA
    assert got["memory_id"].to_list() == ["M4", "M1"]  # Chroma itself returns M1, M4
    m4, m1 = got.rows(named=True)
    assert (m4["body"], m4["session_id"], m4["turn_no"], m4["created_day"]) == (DISK, "S2", 0, 200)
    assert (m4["fact_id"], m4["superseded_by"], m4["kind"]) == ("F2", None, "episodic")
    assert m4["form"] is None  # the tiny corpus has no form column
    assert (m4["confidence"], m4["source"], m4["seq"], m4["tokens"]) == (0.9, "user_message", 3, 8)
    assert m4["entity_ids"] is None  # not kept by the product arms
    assert (m1["superseded_by"], m1["fact_id"]) == ("M5", "F1")
    assert arm.fetch([]).height == 0


NEW_BODY = "ZQX-4242 rotates the vault keys every ninety minutes"


def test_remember_then_query_and_fetch(arm):
    arm.remember(*_batch({"memory_id": "N1", "body": NEW_BODY, "created_day": 700,
                          "session_id": "S9"}))  # fmt: skip
    assert arm.query(q(vec_of=NEW_BODY), 1).memory_ids == ["N1"]
    s9 = base.Predicate("session_id", "=", "S9")
    assert arm.query(q(vec_of=DISK, predicate=s9, wants_count=True), 5) == base.Result(["N1"], 1)
    n1 = arm.fetch(["N1"]).row(0, named=True)
    assert (n1["body"], n1["created_day"], n1["session_id"], n1["kind"]) == (
        NEW_BODY, 700, "S9", "episodic",
    )  # fmt: skip
    assert (n1["superseded_by"], n1["fact_id"], n1["turn_no"]) == (None, None, None)
    assert arm.storage().counts == {"memories": 7}


def test_remember_refuses_duplicates_and_unknown_ids_writing_nothing(arm):
    bad = [
        ({"memory_id": "M2", "body": "again", "created_day": 1}, "'M2' is already stored"),
        ({"memory_id": "N1", "body": "x", "created_day": 1, "supersedes": ["gone"]}, "'gone'"),
    ]
    for row, match in bad:
        with pytest.raises(base.ArmError, match=match):
            arm.remember(*_batch(row))
        assert arm.storage().counts == {"memories": 6} and arm.fetch(["N1"]).height == 0
    assert (
        arm.fetch(["M2"])["body"].item() == "The amber ledger gateway waits half a minute per call."
    )


def test_chroma_add_of_a_stored_id_is_silently_ignored(arm):
    """The product finding behind remember's look-up: add neither raises nor replaces."""
    arm._col.add(ids=["M2"], embeddings=[fake_vector("replaced")], documents=["replaced"])
    assert arm.fetch(["M2"])["body"].item().startswith("The amber ledger")
    arm._col.update(ids=["not-stored"], metadatas=[{"superseded_by": "x"}])  # no error either
    assert arm.storage().counts == {"memories": 6}


def test_corrections_hide_the_old_memory_and_survive_reopen(arm, tmp_path):
    current = base.Predicate("superseded_by", "is_null")
    assert "M4" in arm.query(q(vec_of=DISK, predicate=current), 10).memory_ids
    fix = "INC-2356: SVC-5345 outage caused by a failed fan."
    arm.remember(*_batch({"memory_id": "N1", "body": fix, "created_day": 700,
                          "supersedes": ["M4"]},
                         {"memory_id": "N2", "body": "first", "created_day": 701},
                         {"memory_id": "N3", "body": "second", "created_day": 702,
                          "supersedes": ["N2"]}))  # fmt: skip
    ids = arm.query(q(vec_of=DISK, predicate=current), 10).memory_ids
    assert "M4" not in ids and "N2" not in ids and {"N1", "N3"} <= set(ids)
    by_n1 = base.Predicate("superseded_by", "=", "N1")
    assert arm.query(q(vec_of=DISK, predicate=by_n1, wants_count=True), 10) == base.Result(
        ["M4"], 1
    )
    assert arm.fetch(["M4", "N1", "N2"])["superseded_by"].to_list() == ["N1", None, "N3"]
    # the update merged superseded_by into M4's metadata: the other keys are intact
    m4 = arm.fetch(["M4"]).row(0, named=True)
    assert (m4["session_id"], m4["fact_id"], m4["created_day"]) == ("S2", "F2", 200)
    arm.close()
    arm.close()
    with pytest.raises(base.ArmError, match="not open"):
        arm.query(q(vec_of=DISK), 3)
    again = ChromaArm()
    again.open(tmp_path / "chroma-store")
    assert again.query(q(vec_of=DISK, predicate=by_n1), 10).memory_ids == ["M4"]
    again.remember(*_batch({"memory_id": "N4", "body": "after reopen", "created_day": 703}))
    assert again.query(q(vec_of="after reopen"), 1).memory_ids == ["N4"]
    assert again.storage().counts == {"memories": 10}
    again.close()


def test_hostile_bodies_are_stored_verbatim(arm):
    rows = [
        {"memory_id": f"h{i}", "body": body, "created_day": 1, "session_id": "'; DROP --"}
        for i, body in enumerate(HOSTILE_TEXTS)
    ]
    frame = pl.DataFrame(rows)
    arm.remember(frame, base.Embeddings(frame["memory_id"].to_list(),
                                   np.tile(fake_vector("x"), (len(rows), 1))))  # fmt: skip
    got = arm.fetch(frame["memory_id"].to_list())
    assert got["body"].to_list() == HOSTILE_TEXTS  # NUL, emoji, 10,000 characters included
    assert set(got["session_id"].to_list()) == {"'; DROP --"}


def test_build_replaces_an_earlier_store_and_open_errors(tiny, tmp_path):
    corpus, vectors = tiny
    a = ChromaArm()
    a.build(corpus, vectors, tmp_path / "s")
    a.build(corpus, vectors, tmp_path / "s")  # the collection is dropped and made again
    assert a.storage().counts == {"memories": 6}
    a.close()
    with pytest.raises(base.ArmError, match="nope-store"):
        ChromaArm().open(tmp_path / "nope-store")
    assert not (tmp_path / "nope-store").exists()  # open created nothing
    with pytest.raises(base.ArmError, match="embedding"):
        ChromaArm().build(corpus, base.Embeddings(["M1"], vectors.matrix[:1]), tmp_path / "t")


def test_open_in_another_process_and_its_writes_are_not_in_this_index(arm, tmp_path):
    """Another process sees the store; its remembered rows reach this process's SQLite
    reads at once but its HNSW index only after a reopen."""
    store = tmp_path / "chroma-store"
    expected = arm.query(q(vec_of=DISK), 6).memory_ids
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {TESTS!r})
        import numpy as np, polars as pl
        from support.tiny import fake_vector
        from agentmem.arms.base import Embeddings, Query
        from agentmem.arms.chroma import ChromaArm
        a = ChromaArm(); a.open({str(store)!r})
        got = a.query(Query("q", "", fake_vector({DISK!r})), 6).memory_ids
        a.remember(pl.DataFrame([{{"memory_id": "P1", "body": "other", "created_day": 9,
                                   "session_id": "SP"}}]),
                   Embeddings(["P1"], fake_vector({NEW_BODY!r})[None, :]))
        a.close()
        print(json.dumps(got))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    assert json.loads(out.stdout.strip().splitlines()[-1]) == expected
    assert arm.fetch(["P1"])["memory_id"].to_list() == ["P1"]  # SQLite: seen
    assert arm.query(q(vec_of=DISK, wants_count=True), 1).count == 7
    assert "P1" not in arm.query(q(vec_of=NEW_BODY), 7).memory_ids  # HNSW index: not seen
    with pytest.raises(base.ArmError, match="Error finding id"):  # a filter matching the row
        arm.query(q(vec_of=NEW_BODY, predicate=base.Predicate("session_id", "=", "SP")), 3)
    arm.open(store)
    assert arm.query(q(vec_of=NEW_BODY), 1).memory_ids == ["P1"]


def test_nothing_is_written_outside_the_store(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        from support.tiny import make_tiny, fake_vector
        from agentmem.arms.base import Query
        from agentmem.arms.chroma import ChromaArm
        corpus, vectors = make_tiny()
        a = ChromaArm(); a.build(corpus, vectors, {str(tmp_path / "store")!r})
        print(a.query(Query("q", "x", fake_vector("x")), 2).memory_ids)
        a.close()
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "ANONYMIZED_TELEMETRY"}
    env.update(HOME=str(home), PYTHONPATH=SRC, XDG_CACHE_HOME=str(home / ".cache"))
    subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, env=env, check=True, timeout=120,
        capture_output=True,
    )  # fmt: skip
    assert list(home.iterdir()) == [] and list(cwd.iterdir()) == []
    assert (tmp_path / "store" / "chroma" / "chroma.sqlite3").is_file()


@pytest.fixture(scope="module")
def random_store(tmp_path_factory):
    """3,000 random memories built once; their vectors."""
    corpus, vectors, x = random_corpus(3000)
    store = tmp_path_factory.mktemp("chroma_random") / "store"
    a = ChromaArm()
    a.build(corpus, vectors, store)
    a.close()
    return store, x


def _recall(a: ChromaArm, x: np.ndarray, qs: np.ndarray, k: int) -> float:
    hits = 0
    for i, v in enumerate(qs):
        got = a.query(base.Query(f"r{i}", "", v), k).memory_ids
        want = {f"R{j}" for j in np.argsort(-(x @ v))[:k]}
        hits += len(want & set(got))
    return hits / (k * len(qs))


def test_selective_filter_fills_k_inside_the_search(random_store):
    store, x = random_store
    a = ChromaArm()
    a.open(store)
    rng = np.random.default_rng(11)
    qs = rng.standard_normal((20, 384)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    members = np.arange(7, 3000, 250)  # session S7: 12 of 3,000 memories
    for v in qs:
        pred = base.Predicate("session_id", "=", "S7")
        res = a.query(base.Query("f", "", v, pred, wants_count=True), 10)
        exact = [f"R{j}" for j in members[np.argsort(-(x[members] @ v))][:10]]
        assert res == base.Result(exact, 12)  # k filled, the exact top 10 of the 12
        early = a.query(base.Query("d", "", v, base.Predicate("created_day", "<=", 4)), 10)
        assert sorted(early.memory_ids) == [f"R{j}" for j in range(5)]  # 5 match: all 5
    a.close()


def test_ef_search_is_set_at_open_and_changes_recall(random_store):
    store, x = random_store
    rng = np.random.default_rng(13)
    qs = rng.standard_normal((40, 384)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    recall = {}
    for ef in (10, 400, 100):
        a = ChromaArm(ef_search=ef)
        a.open(store)
        assert a._col.configuration_json["hnsw"]["ef_search"] == ef
        assert f"ef_search={ef} " in a.explain(base.Query("e", "", qs[0]), 10)
        recall[ef] = _recall(a, x, qs, 10)
        a.close()
    assert recall[10] + 0.2 < recall[100] < recall[400]
    again = ChromaArm()  # the default reads back Chroma's default: nothing to modify
    again.open(store)
    assert again._col.configuration_json["hnsw"]["ef_search"] == 100
    assert again._col.name == COLLECTION
    again.close()
