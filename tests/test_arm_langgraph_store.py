"""Tests for the langgraph-store arm (LangGraph PostgresStore on the embedded PostgreSQL).

Expectations are computed by hand on the tiny corpus (tests/support/tiny.py): days
M1 10, M2 12, M3 15, M4 200, M5 320, M6 320; sessions S1 = {M1, M2, M3}, S2 = {M4},
S3 = {M5, M6}; M1 and M2 superseded by M5.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from support.postgres import servers_left
from support.tiny import fake_vector, make_tiny

from agentmem import pg
from agentmem.arms import base
from agentmem.arms.langgraph_store import (
    CachedVectors,
    LangGraphStoreArm,
    item_values,
    namespace_of,
    scope_can_match,
    search_filter,
    search_prefix,
)

TINY_IDS = ["M1", "M2", "M3", "M4", "M5", "M6"]
DAYS = {"M1": 10, "M2": 12, "M3": 15, "M4": 200, "M5": 320, "M6": 320}


def q(vec_of: str, predicate: base.Predicate | None = None, text: str = "question") -> base.Query:
    """A query whose embedding is the fake vector of ``vec_of``."""
    return base.Query("q", text, fake_vector(vec_of), predicate)


def cosine_order(vec_of: str, pool: list[str]) -> list[str]:
    """``pool`` ranked by exact cosine to fake_vector(vec_of) (tiny corpus bodies)."""
    corpus, vectors = make_tiny()
    sims = dict(zip(vectors.ids, (vectors.matrix @ fake_vector(vec_of)).tolist(), strict=True))
    return sorted(pool, key=lambda m: -sims[m])


@pytest.fixture(autouse=True)
def _embedded_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs on the embedded server."""
    monkeypatch.delenv(pg.ENV_DSN, raising=False)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory):
    """Module temp root; at the end no postgres server may run under it."""
    old = os.environ.pop(pg.ENV_DSN, None)
    path = tmp_path_factory.mktemp("lgstore")
    yield path
    if old is not None:
        os.environ[pg.ENV_DSN] = old
    assert servers_left(path) == []


@pytest.fixture(scope="module")
def ro(root: Path):
    """The tiny corpus, read only."""
    corpus, vectors = make_tiny()
    arm = LangGraphStoreArm()
    stats = arm.build(corpus, vectors, root / "ro")
    assert stats.ingest_ms > 0 and stats.index_ms > 0
    yield arm
    arm.close()


@pytest.fixture(scope="module")
def rw(root: Path):
    """The tiny corpus for the tests that remember (each uses its own ids)."""
    corpus, vectors = make_tiny()
    arm = LangGraphStoreArm()
    arm.build(corpus, vectors, root / "rw")
    yield arm
    arm.close()


# --------------------------------------------------------------------- pure parts
def test_search_filter_speaks_the_store_syntax():
    assert search_filter(None) is None
    assert search_filter(base.Predicate("created_day", "<=", 11)) == {"created_day": {"$lte": 11}}
    assert search_filter(base.Predicate("created_day", "=", 5)) == {"created_day": 5}
    assert search_filter(base.Predicate("session_id", "=", "S1")) == {"session_id": "S1"}
    assert search_filter(base.Predicate("superseded_by", "is_null")) == {"superseded_by": ""}
    assert search_filter(base.Predicate("fact_id", "is_null")) == {"fact_id": ""}
    assert search_filter(base.Predicate("created_day", "is_null")) == {"created_day": None}


def test_namespace_and_values():
    assert namespace_of("S1") == ("agent", "unscoped", "S1")
    assert namespace_of("") == ("agent", "unscoped", "-")
    assert namespace_of("S1", "u1") == ("agent", "scope", "u1", "S1")
    assert namespace_of("", "unscoped") == ("agent", "scope", "unscoped", "-")
    with pytest.raises(ValueError, match="session id 'a.b' holds '.'"):
        namespace_of("a.b")
    with pytest.raises(ValueError, match="scope id 'u.1' holds '.'"):
        namespace_of("S1", "u.1")
    assert search_prefix(None) == ("agent",) and search_prefix("u1") == ("agent", "scope", "u1")
    assert scope_can_match(None) and scope_can_match("a_%' OR 1=1")
    assert not any(scope_can_match(s) for s in ("u.1", "u\x001", "\ud800"))
    corpus, _ = make_tiny()
    v = item_values(corpus.memories)[0]
    assert v["memory_id"] == "M1" and v["created_day"] == 10 and v["superseded_by"] == "M5"
    assert v["body"] == "CFG-799 sets the timeout of SVC-5345 to 30s."
    assert v["entity_ids"] == ["CFG-799", "SVC-5345"]
    assert item_values(corpus.memories)[2]["superseded_by"] == ""  # null -> NO_ID


def test_cached_vectors_pop_in_order_and_refuse_unstaged_text():
    cv = CachedVectors("t")
    a, b, c = (np.full(384, x, np.float32) for x in (1.0, 2.0, 3.0))
    cv.stage(["same", "other", "same"], [a, b, c])
    got = cv(["same", "same", "other"])
    assert [float(g[0]) for g in got] == [1.0, 3.0, 2.0]  # same text: first staged first
    with pytest.raises(base.ArmError, match="no cached vector"):
        cv(["same"])
    cv.stage(["x"], [a])
    cv.clear()
    with pytest.raises(base.ArmError):
        cv(["x"])


def test_constructor_checks_parameters():
    with pytest.raises(ValueError, match="m must"):
        LangGraphStoreArm(m=0)
    with pytest.raises(ValueError, match="ef_construction"):
        LangGraphStoreArm(ef_construction=True)


# --------------------------------------------------------------------- queries
def test_unfiltered_search_is_exact_cosine_order(ro):
    body = "CFG-799 sets the timeout of SVC-5345 to 30s."
    ids = ro.query(q(body), 6).memory_ids
    assert ids[0] == "M1"
    assert ids == cosine_order(body, TINY_IDS)
    assert ro.query(q(body), 2).memory_ids == ids[:2]
    assert ro.query(q(body), 0).memory_ids == []


@pytest.mark.parametrize(
    ("pred", "pool"),
    [
        (base.Predicate("session_id", "=", "S1"), ["M1", "M2", "M3"]),
        (base.Predicate("fact_id", "=", "F1"), ["M1", "M2", "M5"]),
        (base.Predicate("superseded_by", "is_null"), ["M3", "M4", "M5", "M6"]),
        (base.Predicate("superseded_by", "=", "M5"), ["M1", "M2"]),
        (base.Predicate("created_day", "=", 320), ["M5", "M6"]),
        (base.Predicate("created_day", "is_null"), []),
        (base.Predicate("fact_id", "is_null"), ["M3"]),
        (base.Predicate("session_id", "=", "S9"), []),
        (base.Predicate("fact_id", "=", ""), []),  # not the memories without a fact
        (base.Predicate("superseded_by", "=", ""), []),
        (base.Predicate("session_id", "=", "\ud800"), []),  # not UTF-8: no stored value
    ],
)
def test_equality_filters_give_the_matching_memories_in_cosine_order(ro, pred, pool):
    text = "timeout of SVC-5345"
    assert ro.query(q(text, pred), 6).memory_ids == cosine_order(text, pool)


def test_lte_compares_days_as_text(ro):
    """The store's $lte is ``value->>'created_day' <= str(d)``: a string comparison."""
    text = "timeout of SVC-5345"

    def got(d: int) -> set[str]:
        return set(ro.query(q(text, base.Predicate("created_day", "<=", d)), 6).memory_ids)

    # "10" <= "100" but "12", "15" > "100": M2 and M3 (days 12, 15) are dropped
    assert got(100) == {"M1"}
    assert {m for m, d in DAYS.items() if d <= 100} == {"M1", "M2", "M3"}
    # every day string starting below "9" sorts before "9": all six, none of them <= 9
    assert got(9) == set(TINY_IDS)
    # "200" > "15" and "320" > "15": right by accident
    assert got(15) == {"M1", "M2", "M3"}
    # "320" > "300": correct too; "10" < "300"
    assert got(300) == {"M1", "M2", "M3", "M4"}


def test_empty_query_text_is_not_a_vector_search(rw):
    """``query=""`` is falsy: the store lists by ``updated_at`` and ignores the vector."""
    vec = fake_vector("an unrelated zebra sentence")
    rows = [{"memory_id": "E1", "body": "an unrelated zebra sentence", "created_day": 1}]
    rw.remember(pl.DataFrame(rows), base.Embeddings(["E1"], vec[None, :]))
    m1 = fake_vector("CFG-799 sets the timeout of SVC-5345 to 30s.")
    assert rw.query(base.Query("e", "x", m1), 1).memory_ids == ["M1"]
    assert rw.query(base.Query("e", "", m1), 1).memory_ids == ["E1"]  # newest item, not M1


def test_hostile_and_bad_queries(ro):
    m1 = fake_vector("CFG-799 sets the timeout of SVC-5345 to 30s.")
    for text in ["'; DROP TABLE store; --", "\x00nul", "x" * 10_000, "🔥", "%_\\", "   "]:
        assert ro.query(base.Query("h", text, m1), 3).memory_ids[0] == "M1"
    nul = base.Predicate("session_id", "=", "S1\x00")
    assert ro.query(base.Query("h", "x", m1, nul), 3).memory_ids == []
    with pytest.raises(base.ArmError, match="non-finite"):
        ro.query(base.Query("h", "x", np.full(384, np.nan, np.float32)), 3)
    with pytest.raises(base.ArmError, match="384"):
        ro.query(base.Query("h", "x", m1[:10]), 3)
    with pytest.raises(ValueError):
        ro.query(base.Query("h", "x", m1), 2.5)  # type: ignore[arg-type]
    assert ro.query(base.Query("h", "x", m1, wants_count=True), 3).count is None


def test_explain_returns_the_plan_of_the_store_sql(ro):
    m1 = fake_vector("CFG-799 sets the timeout of SVC-5345 to 30s.")
    plans = json.loads(
        ro.explain(base.Query("x", "x", m1, base.Predicate("created_day", "<=", 11)), 5)
    )
    assert len(plans) == 1
    p = plans[0]
    assert "filter={'created_day': {'$lte': 11}}" in p["Call"] and "limit=5" in p["Call"]
    assert "value->>%s <= %s" in p["Query Text"]  # the text comparison the store issues
    assert "JOIN store_vectors sv" in p["Query Text"]
    assert p["Plan"]["Node Type"] == "CTE Scan"


def test_storage_counts_the_store_tables(ro):
    st = ro.storage()
    assert st.source == "pg_total_relation_size"
    assert st.total_bytes == sum(st.objects.values()) > 0
    for rel in ("store", "store_vectors", "store_vectors_embedding_idx", "store_pkey"):
        assert st.objects[rel] > 0, rel
    assert st.counts == {"items": 6}


def test_fetch_returns_rows_in_order_asked(ro):
    got = ro.fetch(["M4", "nope", "M1", "M4"])
    assert got.columns == list(base.MEMORY_SCHEMA)
    assert got["memory_id"].to_list() == ["M4", "M1"]
    r = got.row(1, named=True)
    assert (r["session_id"], r["turn_no"], r["created_day"], r["superseded_by"]) == (
        "S1", 0, 10, "M5",
    )  # fmt: skip
    assert r["entity_ids"] == ["CFG-799", "SVC-5345"] and r["confidence"] == 0.9
    assert got.row(0, named=True)["fact_id"] == "F2"
    assert ro.fetch([]).height == 0
    with pytest.raises(ValueError):
        ro.fetch("M1")


# --------------------------------------------------------------------- remember
def _mem(mid: str, body: str, day: int = 500, **extra) -> dict:
    return {"memory_id": mid, "body": body, "created_day": day, **extra}


def _remember(arm, rows: list[dict]) -> None:
    vecs = base.Embeddings(
        [r["memory_id"] for r in rows], np.stack([fake_vector(r["body"]) for r in rows])
    )
    arm.remember(pl.DataFrame(rows), vecs)


def test_remember_then_supersede(rw):
    _remember(rw, [_mem("R1", "QQV-1 caps the pool at four", session_id="S7", kind="semantic")])
    assert rw.query(q("QQV-1 caps the pool at four"), 1).memory_ids == ["R1"]
    with pytest.raises(base.ArmError, match="'R1' is already stored"):
        _remember(rw, [_mem("R1", "again")])
    _remember(rw, [_mem("R2", "QQV-1 caps the pool at six", supersedes=["R1"])])
    rows = {r["memory_id"]: r for r in rw.fetch(["R1", "R2"]).iter_rows(named=True)}
    assert rows["R1"]["superseded_by"] == "R2" and rows["R2"]["superseded_by"] is None
    assert rows["R1"]["session_id"] == "S7" and rows["R2"]["session_id"] is None
    current = base.Predicate("superseded_by", "is_null")
    ids = rw.query(q("QQV-1 caps the pool at four", current), 3).memory_ids
    assert "R1" not in ids and ids[0] == "R2"
    # the superseded item kept its vector (re-put with index=False): still first unfiltered
    assert rw.query(q("QQV-1 caps the pool at four"), 1).memory_ids == ["R1"]


def test_remember_refuses_and_writes_nothing(rw):
    with pytest.raises(base.ArmError, match="'R-missing', which is not stored"):
        _remember(rw, [_mem("R3", "x y", supersedes=["R-missing"])])
    with pytest.raises(base.ArmError, match="NUL"):
        _remember(rw, [_mem("R4", "bad \x00 body")])
    with pytest.raises(base.ArmError, match="'.'"):
        _remember(rw, [_mem("R5", "dotted", session_id="s.1")])
    with pytest.raises(base.ArmError, match="'R6' appears twice"):
        _remember(rw, [_mem("R6", "a"), _mem("R6", "b")])
    assert rw.fetch(["R3", "R4", "R5", "R6"]).height == 0


def test_supersede_within_one_batch_and_last_correction_wins(rw):
    _remember(rw, [_mem("B1", "PPX-3 old"), _mem("B2", "PPX-3 newer", supersedes=["B1"])])
    assert rw.fetch(["B1"])["superseded_by"].to_list() == ["B2"]
    _remember(rw, [_mem("B3", "PPX-3 a", supersedes=["B1"]), _mem("B4", "b", supersedes=["B1"])])
    assert rw.fetch(["B1"])["superseded_by"].to_list() == ["B4"]


#: LIKE wildcards and quotes: a prefix pattern built by pasting would widen on these
HOSTILE_SCOPE = "al%' OR '1'='1"
SCOPE_BODY = "ZRK-77 rotates the scoped keys"


def test_scope_is_the_namespace_prefix_and_survives_reopen(rw, root):
    _remember(rw, [
        _mem("SA1", SCOPE_BODY, 700, scope_id="alpha", session_id="S-a"),
        _mem("SA2", SCOPE_BODY, 701, scope_id="alpha"),
        _mem("SB1", SCOPE_BODY, 702, scope_id="alphabet", session_id="S-a"),
        _mem("SW1", SCOPE_BODY, 703, scope_id="a_pha"),
        _mem("SH1", SCOPE_BODY, 704, scope_id=HOSTILE_SCOPE),
    ])  # fmt: skip
    got = rw.fetch(["SA1", "SH1", "M1"])
    assert got["scope_id"].to_list() == ["alpha", HOSTILE_SCOPE, None]

    def scoped(a: LangGraphStoreArm, scope: str, pred=None) -> list[str]:
        res = a.query(base.Query("s", "x", fake_vector(SCOPE_BODY), pred, scope=scope), 10)
        assert res.count is None
        return sorted(res.memory_ids)

    current = base.Predicate("superseded_by", "is_null")
    assert scoped(rw, "alpha") == ["SA1", "SA2"]  # not alphabet: whole labels
    assert scoped(rw, "a_pha") == ["SW1"] and scoped(rw, HOSTILE_SCOPE) == ["SH1"]
    assert scoped(rw, "alph") == [] and scoped(rw, "al") == []
    with pytest.raises(base.ArmError, match="scope id 'u.1' holds '.'"):
        _remember(rw, [_mem("SD1", SCOPE_BODY, scope_id="u.1")])
    assert rw.fetch(["SD1"]).height == 0 and scoped(rw, "u.1") == []
    plan = json.loads(rw.explain(base.Query("s", "x", fake_vector(SCOPE_BODY), scope="alpha"), 3))
    assert plan[0]["Call"].startswith("store.search(('agent', 'scope', 'alpha'),")
    # a correction re-puts the item under its own namespace: it stays in its scope
    _remember(rw, [_mem("SA3", SCOPE_BODY, 705, scope_id="alpha", supersedes=["SA1"])])
    assert scoped(rw, "alpha", current) == ["SA2", "SA3"]
    assert scoped(rw, "alpha") == ["SA1", "SA2", "SA3"]
    again = LangGraphStoreArm()
    again.open(root / "rw")
    try:
        assert scoped(again, "alpha", current) == ["SA2", "SA3"]
        assert scoped(again, HOSTILE_SCOPE) == ["SH1"]
    finally:
        again.close()


def test_reopen_and_close(rw, root):
    before = rw.query(q("timeout of SVC-5345"), 4).memory_ids
    again = LangGraphStoreArm()
    again.open(root / "rw")
    try:
        assert again.query(q("timeout of SVC-5345"), 4).memory_ids == before
    finally:
        again.close()
        again.close()
    with pytest.raises(base.ArmError, match="store is not open"):
        again.query(q("x"), 3)
    with pytest.raises(base.ArmError, match="nope-lg"):
        LangGraphStoreArm().open(root / "nope-lg")


# --------------------------------------------------------------------- the planner
@pytest.fixture(scope="module")
def bulk(root: Path):
    """1,500 random memories: days 0..399, sessions of 25, every fifth superseded."""
    n = 1500
    rng = np.random.default_rng(3)
    mat = rng.standard_normal((n, 384)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    ids = [f"X{i:05d}" for i in range(n)]
    mem = pl.DataFrame(
        {
            "memory_id": ids,
            "session_id": [f"S{i // 25:03d}" for i in range(n)],
            "body": [f"bulk memory {i}" for i in range(n)],
            "created_day": [i % 400 for i in range(n)],
            "superseded_by": [ids[i + 1] if i % 5 == 0 else None for i in range(n)],
        }
    ).select(
        [pl.col(c).cast(t) if c in ("memory_id", "session_id", "body", "created_day",
         "superseded_by") else pl.lit(None).cast(t).alias(c) for c, t in base.MEMORY_SCHEMA.items()]
    )  # fmt: skip
    arm = LangGraphStoreArm()
    arm.build(base.Corpus(mem), base.Embeddings(ids, mat), root / "bulk")
    yield arm, mat
    arm.close()


def _plan_text(arm, query: base.Query, k: int) -> str:
    return json.dumps(json.loads(arm.explain(query, k))[0]["Plan"])


def test_planner_uses_hnsw_unfiltered_and_scans_for_equality(bulk):
    arm, mat = bulk
    qv = mat[7]
    assert "store_vectors_embedding_idx" in _plan_text(arm, base.Query("p", "p", qv), 10)
    eq = base.Query("p", "p", qv, base.Predicate("superseded_by", "is_null"))
    plan = _plan_text(arm, eq, 10)
    assert "store_vectors_embedding_idx" not in plan and '"Seq Scan"' in plan
    # exact: the memory itself first (X00007 is not superseded: 7 % 5 != 0)
    assert arm.query(eq, 10).memory_ids[0] == "X00007"


def test_plan_depends_on_k(bulk):
    """The search's LIMIT is 2k + 1: at k = 10 the planner walks the HNSW index, at k = 50
    (LIMIT 101 of 1,500 rows) a sequential scan and an exact sort are cheaper."""
    arm, mat = bulk
    qv = base.Query("p", "p", mat[0])
    assert "store_vectors_embedding_idx" in _plan_text(arm, qv, 10)
    wide = _plan_text(arm, qv, 50)
    assert "store_vectors_embedding_idx" not in wide and '"Seq Scan"' in wide
    assert len(arm.query(qv, 50).memory_ids) == 50
