"""Tests for the mem0 product arms mem0-qdrant and mem0-faiss (arms/mem0/)."""

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
from support.tiny import fake_vector

from agentmem.arms import ARMS
from agentmem.arms.base import MEMORY_SCHEMA, Arm, ArmError, Embeddings, Predicate, Query
from agentmem.arms.mem0 import Mem0FaissArm, Mem0QdrantArm
from agentmem.arms.mem0.filters import (
    matches_nothing,
    predicate_filters,
    query_filters,
    valid_user_id,
)

ARM_CLASSES = (Mem0QdrantArm, Mem0FaissArm)
SRC = str(Path(__file__).resolve().parents[1] / "src")


def q(vec_of: str, *, text: str = "question", predicate=None, wants_count=False) -> Query:
    """A query whose embedding is the fake vector of ``vec_of``."""
    return Query("q", text, fake_vector(vec_of), predicate=predicate, wants_count=wants_count)


def similarities(tiny, text: str) -> dict[str, float]:
    _, vectors = tiny
    return dict(zip(vectors.ids, (vectors.matrix @ fake_vector(text)).tolist(), strict=True))


@pytest.fixture(params=ARM_CLASSES, ids=lambda c: c.name)
def arm(request, tiny, tmp_path):
    corpus, vectors = tiny
    a = request.param()
    stats = a.build(corpus, vectors, tmp_path / "store")
    assert stats.ingest_ms > 0 and stats.index_ms == 0.0
    yield a
    a.close()


def test_protocol_and_capabilities():
    assert ARMS["mem0-qdrant"] is Mem0QdrantArm and ARMS["mem0-faiss"] is Mem0FaissArm
    for cls in ARM_CLASSES:
        a = cls()
        assert isinstance(a, Arm) and a.family == "product" and a.threshold == 0.0
        assert cls.products[0] == "mem0ai"
        assert cls.capabilities.vector_access == "brute-force"
        assert cls.capabilities.text_access == "none"
        assert cls.candidate_param is None
    qc, fc = Mem0QdrantArm.capabilities, Mem0FaissArm.capabilities
    assert (qc.filter_stage, qc.aggregate, Mem0QdrantArm.prefix_stable) == ("in-search", True, True)
    assert (fc.filter_stage, fc.aggregate, Mem0FaissArm.prefix_stable) == (
        "post-filter",
        False,
        False,
    )
    with pytest.raises(ValueError, match="threshold"):
        Mem0QdrantArm(threshold=1.5)


def test_filters_translation():
    assert predicate_filters(None) == {"agent_id": "agent"}
    assert predicate_filters(Predicate("created_day", "<=", 15)) == {
        "agent_id": "agent",
        "created_day": {"lte": 15},
    }
    assert predicate_filters(Predicate("session_id", "=", "S1"))["session_id"] == "S1"
    assert predicate_filters(Predicate("superseded_by", "is_null"))["superseded_by"] == ""
    star = Predicate("session_id", "=", "*")
    assert predicate_filters(star, eq_operator=True)["session_id"] == {"eq": "*"}
    assert predicate_filters(star)["session_id"] == "*"


def test_scope_is_mem0s_user_id_filter():
    vec = fake_vector("x")
    assert query_filters(Query("q", "x", vec)) == {"agent_id": "agent"}
    scoped = Query("q", "x", vec, Predicate("created_day", "<=", 15), scope="u1")
    assert query_filters(scoped) == {
        "agent_id": "agent",
        "user_id": "u1",
        "created_day": {"lte": 15},
    }
    assert query_filters(scoped, eq_operator=True)["user_id"] == "u1"  # mem0 wants a str
    assert valid_user_id("u1") and valid_user_id("al'pha\"--")
    for bad in ("a b", " u1", "u1\n", "*", "\ud800"):
        assert not valid_user_id(bad), bad
        assert matches_nothing(Query("q", "x", vec, scope=bad)), bad
    assert not matches_nothing(scoped)


SCOPE_BODY = "ZRK-77 rotates the scoped keys"


def test_scope_filters_search_and_count_and_survives_reopen(arm, tmp_path):
    rows = [
        {"memory_id": "A1", "body": SCOPE_BODY, "created_day": 700, "scope_id": "alpha"},
        {"memory_id": "A2", "body": SCOPE_BODY, "created_day": 701, "scope_id": "alpha"},
        {"memory_id": "Q1", "body": SCOPE_BODY, "created_day": 702, "scope_id": "al'pha\""},
    ]
    frame = pl.DataFrame(rows)
    arm.remember(frame, Embeddings(["A1", "A2", "Q1"], np.tile(fake_vector(SCOPE_BODY), (3, 1))))
    assert arm.fetch(["A1", "Q1", "M1"])["scope_id"].to_list() == ["alpha", "al'pha\"", None]
    assert arm._mem.get(arm._ids["A1"])["user_id"] == "alpha"  # mem0's own tenancy key
    assert "user_id" not in arm._mem.get(arm._ids["M1"])
    counts = arm.capabilities.aggregate

    def scoped(a, scope, pred=None) -> tuple[list[str], int | None]:
        res = a.query(Query("s", "x", fake_vector(SCOPE_BODY), pred, True, scope=scope), 10)
        return sorted(res.memory_ids), res.count

    def check(a) -> None:
        early = Predicate("session_id", "is_null")
        assert scoped(a, "alpha") == (["A1", "A2"], 2 if counts else None)
        assert scoped(a, "alpha", early)[0] == ["A1", "A2"]
        assert scoped(a, "al'pha\"")[0] == ["Q1"]
        for none in ("alp", "*", "al pha", "agent"):
            assert scoped(a, none) == ([], 0 if counts else None), none
        assert len(a.query(Query("u", "x", fake_vector(SCOPE_BODY)), 20).memory_ids) == 9

    check(arm)
    for bad in ("two words", "*"):
        one = pl.DataFrame([{"memory_id": "Z1", "body": "z", "created_day": 1, "scope_id": bad}])
        with pytest.raises(ArmError, match="cannot be a mem0 user_id"):
            arm.remember(one, Embeddings(["Z1"], fake_vector("z")[None, :]))
    assert arm.fetch(["Z1"]).height == 0 and arm.storage().counts == {"memories": 9}
    assert "'user_id': 'alpha'" in arm.explain(Query("s", "x", fake_vector("x"), scope="alpha"))
    arm.close()
    arm.open(tmp_path / "store")
    check(arm)


def test_qdrant_reads_a_star_user_id_as_every_user(tiny, tmp_path):
    """The product behaviour behind refusing the scope '*': mem0's qdrant store drops it."""
    corpus, vectors = tiny
    a = Mem0QdrantArm()
    a.build(corpus, vectors, tmp_path / "s")
    frame = pl.DataFrame([{"memory_id": "A1", "body": "x", "created_day": 1, "scope_id": "alpha"}])
    a.remember(frame, Embeddings(["A1"], fake_vector("x")[None, :]))
    a._emb.expect("x", fake_vector("x"))
    raw = a._mem.search("x", top_k=10, filters={"agent_id": "agent", "user_id": "*"}, threshold=0.0)
    a._emb.clear()
    assert len(raw["results"]) == 7  # the six memories without a user_id as well
    assert a.query(Query("s", "x", fake_vector("x"), scope="*"), 10).memory_ids == []
    a.close()


def test_ranks_by_cosine(arm, tiny):
    body = "INC-2356: SVC-5345 outage caused by a full disk."
    assert arm.query(q(body), 1).memory_ids == ["M4"]
    # fake vectors are non-negative: every memory scores >= threshold 0 and comes back
    full = arm.query(q("CFG-799 timeout"), 50).memory_ids
    assert len(full) == 6 and full[:3] == ["M1", "M5", "M3"]  # cos 0.5, 0.447, 0.25
    sim = similarities(tiny, "CFG-799 timeout")
    assert [round(sim[m], 3) for m in full[:3]] == [0.5, 0.447, 0.25]
    assert arm.query(q(body), 0).memory_ids == []


def test_equality_predicates(arm):
    vec_of = "CFG-799 timeout"
    cases = [
        (Predicate("session_id", "=", "S1"), ["M1", "M3", "M2"]),
        (Predicate("fact_id", "=", "F1"), ["M1", "M5", "M2"]),
        (Predicate("superseded_by", "is_null"), ["M5", "M3"]),
        (Predicate("session_id", "=", "no-such-session"), []),
        (Predicate("session_id", "=", "*"), []),  # an id, not mem0's wildcard
        (Predicate("fact_id", "=", ""), []),  # not the memories without a fact
    ]
    for pred, want in cases:
        got = arm.query(q(vec_of, predicate=pred), 6).memory_ids
        assert got[: len(want)] == want, pred
        if pred.op == "is_null":
            assert set(got) == {"M3", "M4", "M5", "M6"}
        else:
            assert len(got) == len(want)


def test_qdrant_range_predicate_and_counts(tiny, tmp_path):
    corpus, vectors = tiny
    a = Mem0QdrantArm()
    a.build(corpus, vectors, tmp_path / "s")
    pred = Predicate("created_day", "<=", 15)
    res = a.query(q("CFG-799 timeout", predicate=pred, wants_count=True), 6)
    assert res.memory_ids == ["M1", "M3", "M2"] and res.count == 3
    counts = {
        Predicate("created_day", "<=", 200): 4,
        Predicate("superseded_by", "is_null"): 4,
        Predicate("fact_id", "=", "F1"): 3,
        Predicate("session_id", "=", "S3"): 2,
        Predicate("session_id", "=", "*"): 0,
        Predicate("superseded_by", "=", ""): 0,
    }
    for p, n in counts.items():
        assert a.query(q("x", predicate=p, wants_count=True), 1).count == n
    assert a.query(q("x", wants_count=True), 1).count == 6
    assert a.query(q("x", predicate=pred), 6).count is None  # not asked
    assert "Range" in a.explain(q("x", predicate=pred)) or "lte" in a.explain(
        q("x", predicate=pred)
    )
    a.close()


def test_faiss_range_predicate_matches_nothing(tiny, tmp_path):
    """mem0's FAISS filter compares the day to {'lte': d}: nothing matches (a finding)."""
    corpus, vectors = tiny
    a = Mem0FaissArm()
    a.build(corpus, vectors, tmp_path / "s")
    res = a.query(q("CFG-799 timeout", predicate=Predicate("created_day", "<=", 400)), 6)
    assert res.memory_ids == [] and res.count is None
    assert a.query(q("x", wants_count=True), 3).count is None
    a.close()


def _selective_corpus() -> tuple[pl.DataFrame, Embeddings, np.ndarray]:
    """130 memories: 120 near the query (fact FA, scope big, cos ~0.9), 10 farther (fact FX,
    scope small, cos ~0.3)."""
    rng = np.random.default_rng(3)
    query = np.zeros(384, np.float32)
    query[0] = 1.0
    rows, mats = [], []
    for i in range(130):
        noise = rng.standard_normal(384).astype(np.float32)
        noise[0] = 0.0
        noise /= np.linalg.norm(noise)
        cos = 0.9 if i < 120 else 0.3
        mats.append(cos * query + np.sqrt(1 - cos**2) * noise)
        rows.append(
            {
                "memory_id": f"N{i}",
                "body": f"memory number {i}",
                "created_day": i,
                "session_id": "S",
                "fact_id": "FA" if i < 120 else "FX",
                "scope_id": "big" if i < 120 else "small",
            }
        )
    mat = np.stack(mats).astype(np.float32)
    frame = pl.DataFrame(rows).with_columns(pl.col("created_day").cast(pl.Int32))
    return frame, Embeddings(ids=[r["memory_id"] for r in rows], matrix=mat), query


@pytest.mark.parametrize("cls", ARM_CLASSES, ids=lambda c: c.name)
def test_selective_filter_in_search_vs_post_filter(cls, tmp_path):
    from agentmem.arms.base import Corpus, prepare_memories

    frame, vectors, query = _selective_corpus()
    memories = prepare_memories(frame, vectors, "t").memories
    a = cls()
    a.build(Corpus(memories=memories), vectors, tmp_path / "s")
    far = sorted(f"N{i}" for i in range(120, 130))
    for by_fact, scope in ((Predicate("fact_id", "=", "FX"), None), (None, "small")):
        res = a.query(Query("q", "which", query, by_fact, scope=scope), 10)
        if cls.capabilities.filter_stage == "in-search":
            assert sorted(res.memory_ids) == far
        else:  # candidates: 2 * max(4 * 11, 60) = 120 nearest, all FA and scope big
            assert res.memory_ids == []
    a.close()


@pytest.mark.parametrize("cls", ARM_CLASSES, ids=lambda c: c.name)
def test_shared_body_gets_each_memory_its_own_vector(cls, tmp_path):
    from agentmem.arms.base import Corpus, prepare_memories

    frame = pl.DataFrame(
        {"memory_id": ["A", "B"], "body": ["same words", "same words"], "created_day": [1, 2]}
    )
    va, vb = fake_vector("alpha beta"), fake_vector("gamma delta")
    vectors = Embeddings(ids=["A", "B"], matrix=np.stack([va, vb]))
    a = cls()
    a.build(Corpus(memories=prepare_memories(frame, vectors, "t").memories), vectors, tmp_path)
    assert a.query(Query("q", "same words", va), 2).memory_ids == ["A", "B"]
    assert a.query(Query("q", "same words", vb), 2).memory_ids == ["B", "A"]
    a.close()


def test_remember_supersedes_and_refuses(arm):
    m4 = "INC-2356: SVC-5345 outage caused by a full disk."
    body = "INC-2356 root cause: the log volume, not the data disk."
    new = pl.DataFrame(
        {"memory_id": ["M7"], "body": [body], "created_day": [330], "supersedes": [["M4"]]}
    )
    vectors = Embeddings(ids=["M7"], matrix=fake_vector(body)[None, :])
    arm.remember(new, vectors)
    rows = arm.fetch(["M4", "M7"])
    assert rows["memory_id"].to_list() == ["M4", "M7"]
    assert rows["superseded_by"].to_list() == ["M7", None]
    assert rows["body"].to_list() == [m4, body]
    current = Predicate("superseded_by", "is_null")
    got = arm.query(q(m4, predicate=current), 6).memory_ids
    assert "M4" not in got and "M7" in got
    # mem0's update re-embedded M4's text: the arm gave it M4's own vector back
    assert arm.query(q(m4), 1).memory_ids == ["M4"]
    with pytest.raises(ArmError, match="already stored"):
        arm.remember(new.drop("supersedes"), vectors)
    other = pl.DataFrame(
        {"memory_id": ["M8"], "body": ["x"], "created_day": [1], "supersedes": [["nope"]]}
    )
    with pytest.raises(ArmError, match="not stored"):
        arm.remember(other, Embeddings(ids=["M8"], matrix=fake_vector("x")[None, :]))
    assert arm.fetch(["M8"]).height == 0


def test_fetch_order_schema_and_nulls(arm):
    rows = arm.fetch(["M3", "zz", "M1", "M3"])
    assert rows.schema == pl.Schema(MEMORY_SCHEMA)
    assert rows["memory_id"].to_list() == ["M3", "M1"]
    assert rows["fact_id"].to_list() == [None, "F1"]
    assert rows["created_day"].to_list() == [15, 10]
    assert rows["turn_no"].to_list() == [2, 0]
    assert rows["entity_ids"].to_list() == [None, None]


def test_reopen_storage_and_errors(arm, tmp_path):
    store = tmp_path / "store"
    before = arm.query(q("CFG-799 timeout"), 6).memory_ids
    arm.close()
    arm.close()
    with pytest.raises(ArmError, match="not open"):
        arm.query(q("x"), 3)
    arm.open(store)
    assert arm.query(q("CFG-799 timeout"), 6).memory_ids == before
    st = arm.storage()
    assert st.counts == {"memories": 6} and "directory size" in st.source
    assert f"{arm.provider}/" in st.objects and "history.db" in st.objects
    assert st.total_bytes == sum(st.objects.values())
    with pytest.raises(ArmError, match="missing"):
        type(arm)().open(tmp_path / "missing")


def test_qdrant_local_lock_second_client(tiny, tmp_path):
    """Local qdrant refuses a second client on an open path; after close, open works."""
    corpus, vectors = tiny
    a, b = Mem0QdrantArm(), Mem0QdrantArm()
    a.build(corpus, vectors, tmp_path / "s")
    with pytest.raises(ArmError, match="already accessed"):
        b.open(tmp_path / "s")
    a.close()
    b.open(tmp_path / "s")
    assert b.query(q("CFG-799 timeout"), 1).memory_ids == ["M1"]
    b.close()


def test_hostile_texts(arm):
    pred = Predicate("superseded_by", "is_null")
    for text in HOSTILE_TEXTS + ["\x00", "a\x00b"]:
        res = arm.query(Query("q", text, fake_vector("timeout"), predicate=pred), 10)
        assert set(res.memory_ids) <= {"M3", "M4", "M5", "M6"}
        assert isinstance(arm.explain(Query("q", text, fake_vector("x"), predicate=pred)), str)
    with pytest.raises(ArmError, match="384"):
        arm.query(Query("q", "x", np.ones(5, np.float32)), 3)
    bad = np.full(384, np.nan, np.float32)
    assert arm.query(Query("q", "x", bad), 3).memory_ids == []


def test_nothing_outside_store_no_network_two_dirs(tmp_path):
    """Another process: two stores in one process, HOME and cwd stay empty, no socket use."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    script = textwrap.dedent(
        f"""
        import json, socket, sys
        calls = []
        def refuse(self, *a, **k):
            calls.append(a)
            raise OSError("network disabled in test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from support.tiny import make_tiny, fake_vector
        from agentmem.arms.base import Query
        from agentmem.arms.mem0 import Mem0FaissArm, Mem0QdrantArm
        import polars as pl
        from agentmem.arms.base import Embeddings
        corpus, vectors = make_tiny()
        out = []
        for cls, d in ((Mem0QdrantArm, "a"), (Mem0FaissArm, "b"), (Mem0QdrantArm, "c")):
            arm = cls()
            arm.build(corpus, vectors, {str(tmp_path)!r} + "/" + d)
            new = pl.DataFrame({{"memory_id": ["M9"], "body": ["new"], "created_day": [5],
                                 "supersedes": [["M2"]]}})
            arm.remember(new, Embeddings(ids=["M9"], matrix=fake_vector("new")[None, :]))
            out.append(arm.query(Query("q", "hi", fake_vector("CFG-799 timeout")), 2).memory_ids)
            arm.close()
        from mem0.memory import main
        print(json.dumps({{"out": out, "calls": len(calls), "telemetry": main.MEM0_TELEMETRY}}))
        """
    )
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": SRC}
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got == {"out": [["M1", "M5"]] * 3, "calls": 0, "telemetry": False}
    assert list(home.iterdir()) == [] and list(cwd.iterdir()) == []
    # mem0 reads MEM0_DIR once, at its first import: only the first store has mem0home
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [
        "history.db",
        "mem0home",
        "qdrant",
    ]
    assert [p.name for p in (tmp_path / "a" / "mem0home").iterdir()] == ["config.json"]
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["faiss", "history.db"]
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["history.db", "qdrant"]
    assert sorted(p.name for p in (tmp_path / "b" / "faiss").iterdir()) == [
        "mem0.faiss",
        "mem0.json",
    ]
