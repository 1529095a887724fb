"""Tests for the vector file arms file-vec and file-vec-meta (arms/vector.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from support.hostile import HOSTILE_TEXTS
from support.timing import build_timed
from support.tiny import TINY_ROWS, fake_query as q, fake_vector

from agentmem.arms import base
from agentmem.arms.vector import (
    DEFAULT_EF_SEARCH,
    INDEX_NAME,
    MANIFEST_NAME,
    META_NAME,
    FileVecArm,
    FileVecMetaArm,
    exact_topk,
    recall_by_ef,
    recall_vs_exact,
)

ALL_IDS = {"M1", "M2", "M3", "M4", "M5", "M6"}


def exact_ranking(tiny, text: str) -> list[str]:
    """All tiny memory ids ranked by exact cosine to fake_vector(text) (ties: row order)."""
    corpus, vectors = tiny
    sims = vectors.matrix @ fake_vector(text)
    order = np.argsort(-sims, kind="stable")
    return [vectors.ids[i] for i in order]


def assert_cosine_ranked(tiny, ids: list[str], text: str, pool: set[str], k: int) -> None:
    """``ids`` are the top-``k`` of ``pool`` by exact cosine to fake_vector(text).

    Compared through similarity values, so exact ties may come back in either order.
    """
    _, vectors = tiny
    sim = dict(zip(vectors.ids, (vectors.matrix @ fake_vector(text)).tolist(), strict=True))
    want = sorted((sim[m] for m in pool), reverse=True)[:k]
    assert len(ids) == len(want)
    assert set(ids) <= pool
    np.testing.assert_allclose([sim[m] for m in ids], want, atol=1e-6)


def check_well_formed(res: base.Result, k: int) -> None:
    assert isinstance(res, base.Result)
    assert isinstance(res.memory_ids, list)
    assert len(res.memory_ids) <= k
    assert len(set(res.memory_ids)) == len(res.memory_ids)
    assert set(res.memory_ids) <= ALL_IDS
    assert res.count is None


# ---------------------------------------------------------------- file-vec


@pytest.fixture
def vec(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileVecArm()
    stats, wall_ms = build_timed(arm, corpus, vectors, tmp_path / "vec")
    assert stats.ingest_ms > 0 and stats.index_ms > 0
    assert stats.ingest_ms + stats.index_ms <= wall_ms
    yield arm
    arm.close()


def test_vec_protocol_and_capabilities():
    for cls, pred in ((FileVecArm, False), (FileVecMetaArm, True)):
        arm = cls()
        assert isinstance(arm, base.Arm)
        assert arm.family == "vector"
        c = arm.capabilities
        assert (c.predicate, c.join, c.aggregate) == (pred, False, False)
        assert (c.vector_access, c.text_access) == ("hnsw", "none")
    assert FileVecArm.name == "file-vec" and FileVecMetaArm.name == "file-vec-meta"
    assert FileVecArm().ef_search == DEFAULT_EF_SEARCH >= 10


def test_vec_ranks_by_cosine(vec, tiny):
    body = "INC-2356: SVC-5345 outage caused by a full disk."
    res = vec.query(q("ignored text", vec_of=body), 3)
    assert res.memory_ids[0] == "M4"
    assert res.memory_ids == exact_ranking(tiny, body)[:3]
    # k beyond the corpus returns the whole corpus, ranked; k=0 returns nothing.
    full = vec.query(q(vec_of="CFG-799 timeout"), 100)
    assert_cosine_ranked(tiny, full.memory_ids, "CFG-799 timeout", ALL_IDS, 6)
    assert full.memory_ids[:3] == ["M1", "M5", "M3"]  # 0.5, 0.447, 0.25; then ties at 0
    assert vec.query(q(vec_of=body), 0).memory_ids == []


def test_vec_ignores_predicate_and_count(vec, tiny):
    body = "INC-2356: SVC-5345 outage caused by a full disk."
    res = vec.query(
        q(vec_of=body, predicate=base.Predicate("session_id", "=", "S1"), wants_count=True), 2
    )
    assert res.memory_ids[0] == "M4" and res.count is None  # M4 is S2: no filter


def test_vec_store_files_storage_and_explain(vec, tmp_path):
    store = tmp_path / "vec"
    st = vec.storage()
    assert set(st.objects) == {INDEX_NAME, META_NAME, MANIFEST_NAME}
    for name, size in st.objects.items():
        assert size == (store / name).stat().st_size > 0
    assert st.total_bytes == sum(st.objects.values()) and st.source == "file sizes"
    # layer 0 alone holds 6 vectors of 384 float32
    assert st.objects[INDEX_NAME] > 6 * 384 * 4
    manifest = json.loads((store / MANIFEST_NAME).read_text())
    assert manifest["dim"] == 384 and manifest["count"] == 6 and manifest["M"] == 16
    assert "HNSW" in vec.explain(q(vec_of="x"))


def test_vec_reopen_in_another_process(vec, tiny, tmp_path):
    store = tmp_path / "vec"
    body = "RUN-481: to rotate keys on SVC-77, drain traffic first."
    expected = vec.query(q(vec_of=body), 6).memory_ids
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from support.tiny import TINY_ROWS, fake_vector
        from agentmem.arms.base import Query, Predicate
        from agentmem.arms.vector import FileVecArm, FileVecMetaArm
        a = FileVecArm(); a.open({str(store)!r})
        b = FileVecMetaArm(); b.open({str(store)!r})
        v = fake_vector({body!r})
        p = Predicate("session_id", "=", "S1")
        print(json.dumps([a.query(Query("q", "", v), 6).memory_ids,
                          b.query(Query("q", "", v, p), 6).memory_ids]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    got_vec, got_meta = json.loads(out.stdout)
    assert got_vec == expected
    assert got_meta == [m for m in expected if m in {"M1", "M2", "M3"}]


def test_vec_build_is_deterministic(tiny, tmp_path):
    corpus, vectors = tiny
    for d in ("a", "b"):
        arm = FileVecArm()
        arm.build(corpus, vectors, tmp_path / d)
        arm.close()
    for name in (INDEX_NAME, META_NAME, MANIFEST_NAME):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_vec_open_errors(tmp_path, vec):
    with pytest.raises(base.ArmError, match="missing"):
        FileVecArm().open(tmp_path / "missing")
    (tmp_path / "vec" / INDEX_NAME).write_bytes(b"garbage")
    with pytest.raises(base.ArmError, match="vec"):
        FileVecArm().open(tmp_path / "vec")
    with pytest.raises(base.ArmError, match="dim"):
        vec.query(base.Query("q", "", np.ones(5, dtype=np.float32)), 3)
    vec.close()
    vec.close()
    with pytest.raises(base.ArmError, match="not open"):
        vec.query(q(vec_of="x"), 3)


def test_vec_hostile_texts(vec, tiny, tmp_path):
    corpus, vectors = tiny
    meta = FileVecMetaArm()
    meta.build(corpus, vectors, tmp_path / "meta")
    pred = base.Predicate("superseded_by", "is_null")
    for text in HOSTILE_TEXTS:
        check_well_formed(vec.query(q(text), 10), 10)
        res = meta.query(q(text, predicate=pred), 10)
        check_well_formed(res, 10)
        assert set(res.memory_ids) <= {"M3", "M4", "M5", "M6"}
        assert isinstance(meta.explain(q(text, predicate=pred)), str)
    meta.close()


def test_recall_vs_exact_random_unit_vectors():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2000, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    qs = rng.standard_normal((100, 384)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    assert recall_vs_exact(x, qs, 10, DEFAULT_EF_SEARCH) >= 0.99
    # a starved search is measurably worse: the function really measures something
    assert recall_vs_exact(x, qs, 10, 10) < 0.99
    # the exact reference agrees with itself
    ex = exact_topk(x, qs, 10)
    assert ex.shape == (100, 10)
    assert np.all(np.argmax(qs @ x.T, axis=1) == ex[:, 0])


def test_index_recall_on_built_arm(tmp_path):
    import polars as pl

    rng = np.random.default_rng(3)
    n = 500
    x = rng.standard_normal((n, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ids = [f"M{i}" for i in range(n)]
    memories = pl.DataFrame(
        {
            "memory_id": ids,
            "session_id": ["S1"] * n,
            "seq": list(range(n)),
            "body": ["b"] * n,
            "fact_id": [None] * n,
            "created_day": list(range(n)),
            "superseded_by": [None] * n,
        },
        schema_overrides={"fact_id": pl.Utf8, "superseded_by": pl.Utf8},
    )
    arm = FileVecArm()
    arm.build(base.Corpus(memories=memories), base.Embeddings(ids=ids, matrix=x), tmp_path / "r")
    assert arm.index_recall(x[:50], 10) >= 0.99
    # each stored vector's nearest neighbour is itself
    assert arm.query(base.Query("q", "", x[17]), 1).memory_ids == ["M17"]
    arm.close()


# ---------------------------------------------------------------- file-vec-meta


@pytest.fixture
def meta(tiny, tmp_path):
    corpus, vectors = tiny
    arm = FileVecMetaArm()
    arm.build(corpus, vectors, tmp_path / "meta")
    yield arm
    arm.close()


@pytest.mark.parametrize(
    ("pred", "allowed"),
    [
        (base.Predicate("session_id", "=", "S1"), {"M1", "M2", "M3"}),
        (base.Predicate("created_day", "<=", 15), {"M1", "M2", "M3"}),
        (base.Predicate("fact_id", "=", "F1"), {"M1", "M2", "M5"}),
        (base.Predicate("superseded_by", "is_null"), {"M3", "M4", "M5", "M6"}),
        (base.Predicate("superseded_by", "=", "M5"), {"M1", "M2"}),
        (base.Predicate("session_id", "=", "nope"), set()),
    ],
)
def test_meta_returns_only_matching_ids(meta, tiny, pred, allowed):
    body = "INC-2356: SVC-5345 outage caused by a full disk."
    res = meta.query(q(vec_of=body, predicate=pred), 10)
    # k*overfetch = 40 >= 6: every memory is fetched, so all matches come back, by cosine
    assert set(res.memory_ids) == allowed
    assert_cosine_ranked(tiny, res.memory_ids, body, allowed, 10)
    assert res.count is None


def test_meta_underfills_when_overfetch_is_too_small(tiny, tmp_path):
    corpus, vectors = tiny
    body = "INC-2356: SVC-5345 outage caused by a full disk."
    rank = exact_ranking(tiny, body)
    s3 = base.Predicate("session_id", "=", "S3")
    for overfetch in (1, 2, 4):
        arm = FileVecMetaArm(overfetch=overfetch)
        arm.build(corpus, vectors, tmp_path / f"o{overfetch}")
        got = arm.query(q(vec_of=body, predicate=s3), 1).memory_ids
        want = [m for m in rank[:overfetch] if m in {"M5", "M6"}][:1]
        assert got == want
        arm.close()
    # overfetch=1, k=1: the single candidate is M4 (session S2) -> nothing survives.
    assert rank[0] == "M4"


def test_meta_without_predicate_equals_file_vec(meta, vec):
    # k chosen so that no cosine tie straddles the cut (see the tiny similarities)
    for text, k in (("CFG-799 timeout", 3), ("amber ledger", 1), ("drain traffic", 2)):
        assert meta.query(q(vec_of=text), k).memory_ids == vec.query(q(vec_of=text), k).memory_ids
    ex = meta.explain(q(vec_of="x", predicate=base.Predicate("fact_id", "=", "F1")))
    assert "post-filter" in ex and "fact_id" in ex


# ---------------------------------------------------------------- vector remember / fetch


def _batch(*rows: dict) -> tuple[pl.DataFrame, base.Embeddings]:
    """A remember batch: each memory's vector is the fake vector of its body."""
    frame = pl.DataFrame(list(rows))
    ids = frame["memory_id"].to_list()
    mat = np.stack([fake_vector(b) for b in frame["body"].to_list()])
    return frame, base.Embeddings(ids, mat)


NEW_BODY = "ZQX-4242 rotates the vault keys every ninety minutes"


def test_vec_remember_adds_items_resizes_and_fetch_reads_rows(vec, tmp_path):
    assert vec._index.get_max_elements() == 6  # built exactly full
    vec.remember(*_batch({"memory_id": "N1", "body": NEW_BODY, "created_day": 700,
                          "session_id": "S9", "entity_ids": ["ZQX-4242"]}))  # fmt: skip
    assert vec._index.get_max_elements() == 12  # capacity doubled by resize_index
    assert vec._index.get_current_count() == 7
    assert vec.query(q(vec_of=NEW_BODY), 1).memory_ids == ["N1"]
    assert vec.query(q(vec_of=NEW_BODY), 7).memory_ids[0] == "N1"
    got = vec.fetch(["N1", "nope", "M4", "N1"])
    assert got.columns == list(base.MEMORY_SCHEMA) and dict(got.schema) == base.MEMORY_SCHEMA
    assert got["memory_id"].to_list() == ["N1", "M4"]
    n1, m4 = got.rows(named=True)
    assert (n1["body"], n1["created_day"], n1["session_id"]) == (NEW_BODY, 700, "S9")
    assert (n1["kind"], n1["entity_ids"], n1["superseded_by"]) == ("episodic", ["ZQX-4242"], None)
    assert (m4["session_id"], m4["fact_id"], m4["form"]) == ("S2", "F2", None)
    # not saved yet: the files still hold the build (durable on flush/close)
    store = tmp_path / "vec"
    assert json.loads((store / MANIFEST_NAME).read_text())["count"] == 6
    vec.flush()
    assert json.loads((store / MANIFEST_NAME).read_text())["count"] == 7
    assert pl.read_parquet(store / META_NAME)["memory_id"].to_list()[-1] == "N1"
    # storage() and open() save what was remembered since
    vec.remember(*_batch({"memory_id": "N2", "body": "second note", "created_day": 701}))
    st = vec.storage()
    assert st.objects[META_NAME] == (store / META_NAME).stat().st_size
    assert json.loads((store / MANIFEST_NAME).read_text())["count"] == 8
    vec.remember(*_batch({"memory_id": "N3", "body": "third note", "created_day": 702}))
    vec.open(store)
    assert vec.fetch(["N1", "N2", "N3"])["memory_id"].to_list() == ["N1", "N2", "N3"]


def test_vec_meta_correction_hides_the_old_memory_after_reopen(meta, tmp_path):
    current = base.Predicate("superseded_by", "is_null")
    body = "INC-2356: SVC-5345 outage caused by a full disk."
    assert "M4" in meta.query(q(vec_of=body, predicate=current), 10).memory_ids
    fix = "INC-2356: SVC-5345 outage caused by a failed fan."
    meta.remember(*_batch({"memory_id": "N1", "body": fix, "created_day": 700,
                           "supersedes": ["M4"]}))  # fmt: skip
    ids = meta.query(q(vec_of=body, predicate=current), 10).memory_ids
    assert "M4" not in ids and "N1" in ids
    by_n1 = base.Predicate("superseded_by", "=", "N1")
    assert meta.query(q(vec_of=body, predicate=by_n1), 10).memory_ids == ["M4"]
    assert meta.fetch(["M4", "N1"])["superseded_by"].to_list() == ["N1", None]
    raw = meta.raw_query_call(q(vec_of=body, predicate=current), 3)()
    assert meta.raw_ids(raw, 3) == meta.query(q(vec_of=body, predicate=current), 3).memory_ids
    meta.close()
    store = tmp_path / "meta"
    saved = pl.read_parquet(store / META_NAME)
    assert saved.filter(pl.col("memory_id") == "N1")["supersedes"].to_list() == [["M4"]]
    assert saved.filter(pl.col("memory_id") == "M4")["superseded_by"].to_list() == ["N1"]
    again = FileVecMetaArm()
    again.open(store)
    assert "M4" not in again.query(q(vec_of=body, predicate=current), 10).memory_ids
    assert again.fetch(["M4", "N1"])["superseded_by"].to_list() == ["N1", None]
    again.remember(*_batch({"memory_id": "N2", "body": "after reopen", "created_day": 701}))
    assert again.query(q(vec_of="after reopen"), 1).memory_ids == ["N2"]
    again.close()
    plain = FileVecArm()  # both vector arms read one store
    plain.open(store)
    assert plain.fetch(["N1", "N2"])["memory_id"].to_list() == ["N1", "N2"]
    plain.close()


def test_vec_remember_refuses_duplicates_and_unknown_ids_changing_nothing(vec):
    bad = [
        ({"memory_id": "M2", "body": "again", "created_day": 1}, "'M2' is already stored"),
        ({"memory_id": "N1", "body": "x", "created_day": 1, "supersedes": ["gone"]}, "'gone'"),
    ]
    for row, match in bad:
        with pytest.raises(base.ArmError, match=match):
            vec.remember(*_batch(row))
        assert vec._index.get_current_count() == 6 and vec.fetch(["N1"]).height == 0
    with pytest.raises(base.ArmError, match="embedding"):
        vec.remember(pl.DataFrame([{"memory_id": "N1", "body": "x", "created_day": 1}]),
                     base.Embeddings(["other"], np.ones((1, 384), np.float32)))  # fmt: skip
    # a correction may name a memory of its own batch
    vec.remember(*_batch({"memory_id": "N1", "body": "first", "created_day": 1},
                         {"memory_id": "N2", "body": "second", "created_day": 2,
                          "supersedes": ["N1"]}))  # fmt: skip
    assert vec.fetch(["N1"])["superseded_by"].to_list() == ["N2"]


def test_vec_open_after_a_save_cut_between_index_and_metadata(vec, tmp_path, caplog):
    """The index was saved with a new vector but the metadata was not: it is ignored."""
    store = tmp_path / "vec"
    old_meta = (store / META_NAME).read_bytes()
    old_manifest = (store / MANIFEST_NAME).read_bytes()
    vec.remember(*_batch({"memory_id": "N1", "body": NEW_BODY, "created_day": 700}))
    vec.close()
    (store / META_NAME).write_bytes(old_meta)  # as if the save stopped after index.bin
    (store / MANIFEST_NAME).write_bytes(old_manifest)
    again = FileVecArm()
    with caplog.at_level("WARNING", logger="agentmem.arms.vector"):
        again.open(store)
    assert "1 vectors the metadata never recorded" in caplog.text
    assert again.fetch(["N1"]).height == 0
    assert "N1" not in again.query(q(vec_of=NEW_BODY), 10).memory_ids
    assert len(again.query(q(vec_of=NEW_BODY), 10).memory_ids) == 6
    again.remember(*_batch({"memory_id": "N2", "body": NEW_BODY, "created_day": 701}))
    assert again.query(q(vec_of=NEW_BODY), 1).memory_ids == ["N2"]  # label 6 reused
    again.close()
    third = FileVecArm()
    third.open(store)
    assert third.query(q(vec_of=NEW_BODY), 10).memory_ids[0] == "N2"
    assert len(third.query(q(vec_of=NEW_BODY), 10).memory_ids) == 7
    third.close()
    # metadata older than the manifest is a real inconsistency
    (store / MANIFEST_NAME).write_text(json.dumps({**json.loads(old_manifest), "count": 9}))
    with pytest.raises(base.ArmError, match="inconsistent"):
        FileVecArm().open(store)


# ---------------------------------------------------------------- scope

M4_BODY = "INC-2356: SVC-5345 outage caused by a full disk."
#: scope u1 = {P1, P2}, u2 = {P3}; cosine to M4's fake vector: P1 0.408, P2 0, P3 0
SCOPED_ROWS = (
    {"memory_id": "P1", "body": "SVC-5345 outage note", "created_day": 500, "scope_id": "u1"},
    {"memory_id": "P2", "body": "amber ledger note", "created_day": 501, "scope_id": "u1"},
    {"memory_id": "P3", "body": "disk swap for SVC-77", "created_day": 502, "scope_id": "u2"},
)


def scoped(scope: str, predicate: base.Predicate | None = None) -> base.Query:
    """A query with M4's fake vector, restricted to ``scope``."""
    return base.Query("qs", "", fake_vector(M4_BODY), predicate, scope=scope)


def test_scope_cosines_behind_the_hand_checks():
    m4 = fake_vector(M4_BODY)
    sims = [float(fake_vector(r["body"]) @ m4) for r in SCOPED_ROWS]
    # P1 shares "svc-5345" and "outage" with M4's 8 words; P2 and P3 share none
    np.testing.assert_allclose(sims, [2 / np.sqrt(8 * 3), 0, 0], atol=1e-6)
    # every other tiny memory is below P1 (at most 0.125): M4 then P1 head the ranking
    others = [float(fake_vector(r[5]) @ m4) for r in TINY_ROWS if r[0] != "M4"]
    assert max(others) <= 0.125 + 1e-6 < sims[0]


def test_vec_scope_filters_inside_the_search_and_after_reopen(vec, tmp_path):
    vec.remember(*_batch(*SCOPED_ROWS))
    assert vec.query(q(vec_of=M4_BODY), 2).memory_ids == ["M4", "P1"]  # unscoped
    # in-search filter: the nearest memory of u1 whatever lies nearer outside it
    assert vec.query(scoped("u1"), 1).memory_ids == ["P1"]
    assert vec.query(scoped("u1"), 10).memory_ids == ["P1", "P2"]  # all of u1, ranked
    assert vec.query(scoped("u2"), 10).memory_ids == ["P3"]
    s1 = base.Predicate("session_id", "=", "S1")  # no P is in S1: ignored, unlike the scope
    assert vec.query(scoped("u1", s1), 10).memory_ids == ["P1", "P2"]
    for other in ("U1", "gamma", "u1' OR '1'='1", "u1\" || scope_id != ''"):
        assert vec.query(scoped(other), 10).memory_ids == [], other
    for scope in ("u1", "u2", "gamma"):
        raw = vec.raw_query_call(scoped(scope), 10)()
        assert vec.raw_ids(raw, 10) == vec.query(scoped(scope), 10).memory_ids
    assert "IN-SEARCH scope filter scope_id = 'u1'" in vec.explain(scoped("u1"))
    assert vec.fetch(["P3", "M1"])["scope_id"].to_list() == ["u2", None]
    vec.close()
    store = tmp_path / "vec"
    assert pl.read_parquet(store / META_NAME)["scope_id"].to_list()[-3:] == ["u1", "u1", "u2"]
    again = FileVecArm()
    again.open(store)
    assert again.query(scoped("u1"), 10).memory_ids == ["P1", "P2"]
    again.remember(*_batch({"memory_id": "P4", "body": M4_BODY + " again", "created_day": 503,
                            "scope_id": "u2"}))  # fmt: skip
    assert again.query(scoped("u2"), 10).memory_ids == ["P4", "P3"]
    again.close()


def test_meta_post_filters_the_scope_and_loses_fill_at_overfetch_1(tiny, tmp_path):
    corpus, vectors = tiny
    arms = {}
    for overfetch in (1, 8):
        arm = arms[overfetch] = FileVecMetaArm(overfetch=overfetch)
        arm.build(corpus, vectors, tmp_path / f"o{overfetch}")
        arm.remember(*_batch(*SCOPED_ROWS))
    # overfetch 1, k=1: the one candidate is M4 (no scope), so nothing survives although
    # u1 holds two memories; k=2: candidates M4, P1 -> P1 alone (fill 1 of 2)
    assert arms[1].query(scoped("u1"), 1).memory_ids == []
    assert arms[1].query(scoped("u1"), 2).memory_ids == ["P1"]
    # overfetch 8: k*8 >= 9 memories, every memory is a candidate, u1 fills
    assert arms[8].query(scoped("u1"), 2).memory_ids == ["P1", "P2"]
    current = base.Predicate("superseded_by", "is_null")
    assert arms[8].query(scoped("u1", current), 10).memory_ids == ["P1", "P2"]
    assert arms[8].query(scoped("u1", base.Predicate("session_id", "=", "S1")), 10).memory_ids == []
    assert arms[8].query(scoped("u2"), 10).memory_ids == ["P3"]
    for other in ("gamma", "u1' OR '1'='1"):
        assert arms[8].query(scoped(other), 10).memory_ids == [], other
    for arm in arms.values():
        for k in (1, 2, 10):
            raw = arm.raw_query_call(scoped("u1", current), k)()
            assert arm.raw_ids(raw, k) == arm.query(scoped("u1", current), k).memory_ids
    plan = arms[1].explain(scoped("u1", current))
    assert "post-filter scope_id = 'u1' AND superseded_by is_null" in plan
    for arm in arms.values():
        arm.close()


def _random_store(tmp_path: Path, n: int, scope_every: int) -> tuple[np.ndarray, list[str]]:
    """``n`` random unit vectors; every ``scope_every``-th memory in scope "s", others in none."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((n, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ids = [f"R{i}" for i in range(n)]
    memories = pl.DataFrame(
        {
            "memory_id": ids,
            "body": ["b"] * n,
            "created_day": list(range(n)),
            "seq": list(range(n)),
            "scope_id": ["s" if i % scope_every == 0 else None for i in range(n)],
        }
    )
    arm = FileVecArm()
    arm.build(base.Corpus(memories=memories), base.Embeddings(ids=ids, matrix=x), tmp_path / "r")
    arm.close()
    return x, ids


def test_vec_scope_is_exact_where_a_post_filter_underfills(tmp_path):
    """25 of 2,000 random vectors in scope: file-vec returns the exact scoped top-10."""
    x, ids = _random_store(tmp_path, 2000, 80)
    in_scope = np.arange(0, 2000, 80)
    qv = x[7] * 0.5 + x[1] * 0.5
    exact = [ids[int(in_scope[i])] for i in np.argsort(-(x[in_scope] @ qv), kind="stable")[:10]]
    vec, meta = FileVecArm(), FileVecMetaArm()  # defaults: ef_search 1000, overfetch 4
    vec.open(tmp_path / "r")
    meta.open(tmp_path / "r")
    query = base.Query("qs", "", qv, scope="s")
    # ef 1000 > 25 admitted labels: the filtered search visits every reachable node
    assert vec.query(query, 10).memory_ids == exact
    # the post-filter keeps the scope's share of the unscoped top-40 (1 in 80 on average)
    top40 = vec.query(base.Query("qa", "", qv), 40).memory_ids
    scope = {ids[int(i)] for i in in_scope}
    assert meta.query(query, 10).memory_ids == [m for m in top40 if m in scope]
    assert len(meta.query(query, 10).memory_ids) < 10  # here none of the 40 is in scope
    vec.close()
    meta.close()


def test_store_without_a_scope_column_opens_with_no_scopes(tiny, tmp_path):
    """A metadata file written before ``scope_id`` was a column: every memory in no scope."""
    corpus, vectors = tiny
    arm = FileVecArm()
    arm.build(corpus, vectors, tmp_path / "old")
    arm.close()
    path = tmp_path / "old" / META_NAME
    pl.read_parquet(path).drop("scope_id").write_parquet(path)
    old = FileVecMetaArm()
    old.open(tmp_path / "old")
    assert old.query(q(vec_of=M4_BODY), 1).memory_ids == ["M4"]
    assert old.query(scoped("u1"), 10).memory_ids == []
    assert old.fetch(["M4"])["scope_id"].to_list() == [None]
    old.remember(*_batch(SCOPED_ROWS[0]))
    assert old.query(scoped("u1"), 10).memory_ids == ["P1"]
    old.close()
    assert pl.read_parquet(path)["scope_id"].to_list() == [None] * 6 + ["u1"]


def test_recall_by_ef_builds_one_index_and_matches_one_build_per_ef():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(600, 16)).astype(np.float32)
    qs = rng.normal(size=(40, 16)).astype(np.float32)
    by_ef = recall_by_ef(x, qs, 10, [10, 40, 200])
    # ef is a search setting: the same values as a fresh (seeded) build for each
    assert by_ef == {ef: recall_vs_exact(x, qs, 10, ef) for ef in (10, 40, 200)}
    assert by_ef[10] <= by_ef[40] <= by_ef[200] and by_ef[200] > 0.9
    assert recall_by_ef(x, qs[:0], 10, [10, 40]) == {10: 1.0, 40: 1.0}  # no queries
