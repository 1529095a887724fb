"""Tests for the LanceDB product arms lancedb and lancedb-hybrid (arms/lance/)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from support.tiny import fake_query as q, fake_vector

from agentmem.arms.base import MEMORY_SCHEMA, Arm, ArmError, Embeddings, Predicate, Query
from agentmem.arms.lance import (
    DB_DIR,
    TABLE,
    LanceDbArm,
    LanceDbHybridArm,
    lance_filter,
    query_filter,
    sql_string,
)

DISK = "INC-2356: SVC-5345 outage caused by a full disk."


def cosine(tiny, text: str) -> dict[str, float]:
    """Memory id -> exact cosine of its tiny vector to fake_vector(text)."""
    _, vectors = tiny
    sims = (vectors.matrix @ fake_vector(text)).tolist()
    return dict(zip(vectors.ids, sims, strict=True))


def assert_cosine_ranked(tiny, ids: list[str], text: str, pool: set[str], k: int) -> None:
    """``ids`` are the top ``k`` of ``pool`` by exact cosine (ties compared by value)."""
    sim = cosine(tiny, text)
    want = sorted((sim[m] for m in pool), reverse=True)[:k]
    assert len(ids) == len(want) and set(ids) <= pool
    assert [sim[m] for m in ids] == pytest.approx(want, abs=1e-6)


def batch(*rows: dict, vec_of: str | None = None) -> tuple[pl.DataFrame, Embeddings]:
    """A remember batch; each vector is the fake vector of ``vec_of`` or of the row's body."""
    frame = pl.DataFrame(list(rows))
    bodies = frame["body"].to_list()
    mat = np.stack([fake_vector(vec_of if vec_of is not None else b) for b in bodies])
    return frame, Embeddings(frame["memory_id"].to_list(), mat)


@pytest.fixture
def lance(tiny, tmp_path):
    corpus, vectors = tiny
    arm = LanceDbArm()
    arm.build(corpus, vectors, tmp_path / "lance")
    yield arm
    arm.close()


@pytest.fixture
def hybrid(tiny, tmp_path):
    corpus, vectors = tiny
    arm = LanceDbHybridArm()
    arm.build(corpus, vectors, tmp_path / "hybrid")
    yield arm
    arm.close()


# ---------------------------------------------------------------- filters


def test_filters_are_lancedb_sql_with_quoted_values():
    assert lance_filter(None) is None
    assert lance_filter(Predicate("created_day", "<=", 15)) == "(created_day <= 15)"
    assert lance_filter(Predicate("session_id", "=", "S1")) == "(session_id = 'S1')"
    assert lance_filter(Predicate("superseded_by", "is_null")) == "(superseded_by = '')"
    hostile = Predicate("session_id", "=", "'; DROP TABLE x; --")
    assert lance_filter(hostile) == "(session_id = '''; DROP TABLE x; --')"
    # never-null created_day and a "stored null" id match nothing
    assert lance_filter(Predicate("created_day", "is_null")) == "false"
    assert lance_filter(Predicate("fact_id", "=", "")) == "false"


def test_quotes_after_a_backslash_or_a_quote_are_doubled_too():
    # lancedb.expr.lit(v).to_sql() leaves these quotes undoubled, ending the literal early
    assert sql_string("\\' OR true) --") == "'\\'' OR true) --'"
    assert sql_string("a''b") == "'a''''b'"
    assert sql_string("a\\b") == "'a\\b'"
    vec = fake_vector("x")
    assert query_filter(Query("q", "x", vec, scope="\\' OR true) --")) == (
        "(scope_id = '\\'' OR true) --')"
    )


def test_scope_and_predicate_are_one_quoted_filter():
    vec = fake_vector("x")
    assert query_filter(Query("q", "x", vec)) is None
    assert query_filter(Query("q", "x", vec, scope="u'1")) == "(scope_id = 'u''1')"
    both = Query("q", "x", vec, Predicate("superseded_by", "is_null"), scope="u1")
    assert query_filter(both) == "((scope_id = 'u1') AND (superseded_by = ''))"
    never = Query("q", "x", vec, Predicate("created_day", "is_null"), scope="u1")
    assert query_filter(never) == "false"
    assert query_filter(Query("q", "x", vec, scope="\ud800")) == "false"
    only_pred = Query("q", "x", vec, Predicate("created_day", "<=", 15))
    assert query_filter(only_pred) == lance_filter(only_pred.predicate)


#: a scope that is an SQL injection when pasted between quotes
HOSTILE_SCOPE = "al'pha' OR '1'='1"
#: ZQX-4242 appears in one body only: BM25 ranks it first for that text
ZQX = "ZQX-4242 rotates the vault keys"


def remember_scoped(arm: LanceDbArm) -> None:
    """A1, A2 in scope alpha and H1 in the hostile scope (vectors DISK); B1 in beta
    (the only ZQX-4242 body, its vector far from DISK)."""
    arm.remember(*batch(
        {"memory_id": "A1", "body": "alpha one", "created_day": 700, "scope_id": "alpha"},
        {"memory_id": "A2", "body": "alpha two", "created_day": 701, "scope_id": "alpha"},
        {"memory_id": "H1", "body": "hostile", "created_day": 702, "scope_id": HOSTILE_SCOPE},
        vec_of=DISK,
    ))  # fmt: skip
    arm.remember(*batch({"memory_id": "B1", "body": ZQX, "created_day": 703, "scope_id": "beta"},
                        vec_of="amber ledger"))  # fmt: skip


def scoped(arm: LanceDbArm, scope: str, text: str = "", pred=None) -> tuple[list[str], int]:
    res = arm.query(Query("s", text, fake_vector(DISK), pred, True, scope=scope), 10)
    return sorted(res.memory_ids), res.count


@pytest.mark.parametrize("cls", [LanceDbArm, LanceDbHybridArm])
def test_scope_prefilters_search_and_count_and_survives_reopen(cls, tiny, tmp_path):
    corpus, vectors = tiny
    arm = cls()
    arm.build(corpus, vectors, tmp_path / "s")
    remember_scoped(arm)
    assert arm.fetch(["A1", "H1", "M1"])["scope_id"].to_list() == ["alpha", HOSTILE_SCOPE, None]
    early = Predicate("created_day", "<=", 700)
    for a in (arm, cls()):
        if a is not arm:
            arm.close()
            a.open(tmp_path / "s")
        assert scoped(a, "alpha") == (["A1", "A2"], 2)
        assert scoped(a, "alpha", "alpha one", early) == (["A1"], 1)
        assert scoped(a, HOSTILE_SCOPE) == (["H1"], 1)  # a quoted value, not SQL
        assert scoped(a, "alp") == ([], 0) and scoped(a, "al'pha") == ([], 0)
        assert a.query(Query("u", "", fake_vector(DISK), wants_count=True), 20).count == 10
    a.close()


def test_hybrid_scope_filters_the_bm25_leg_too(hybrid):
    remember_scoped(hybrid)
    # unscoped, BM25 brings B1 (beta) in: its body alone holds ZQX-4242
    assert "B1" in hybrid.query(q("ZQX-4242", vec_of=DISK), 3).memory_ids
    assert scoped(hybrid, "alpha", "ZQX-4242") == (["A1", "A2"], 2)
    assert scoped(hybrid, "beta", "ZQX-4242") == (["B1"], 1)
    assert hybrid.fts_fallbacks == 0
    plan = hybrid.explain(Query("s", "ZQX-4242", fake_vector(DISK), scope="alpha"), 3)
    vector_plan, fts_plan = plan.split("MatchQuery: column=body", 1)
    # the scope is the pre-filter of the vector leg's read and of the FTS leg's reads
    assert 'full_filter=scope_id = Utf8("alpha")' in vector_plan
    assert 'full_filter=scope_id = Utf8("alpha")' in fts_plan


def test_hybrid_reads_one_column_and_ranks_as_with_every_column(hybrid, tiny):
    """The arm's projection (``select(["memory_id"])``) leaves LanceDB's fused ranking as
    it is with every column read, scoped or not."""
    remember_scoped(hybrid)
    corpus, _ = tiny
    texts = [*corpus.memories["body"].to_list()[:6], "ZQX-4242", "disk outage keys"]
    table = hybrid._table
    compared = 0
    for text in texts:
        for scope in (None, "alpha", "beta"):
            query = Query("p", text, fake_vector(text), scope=scope)
            full = (
                table.search(query_type="hybrid")
                .vector(fake_vector(text))
                .text(text)
                .distance_type("cosine")
                .limit(hybrid.candidates)
            )
            where = query_filter(query)
            if where is not None:
                full = full.where(where, prefilter=True)
            expected = full.to_arrow().column("memory_id").to_pylist()[:10]
            assert "body" in full.to_arrow().column_names  # every column was read
            assert hybrid.query(query, 10).memory_ids == expected, (text, scope)
            compared += bool(expected)
    assert compared >= 2 * len(texts)
    assert hybrid.fts_fallbacks == 0


#: values LanceDB's own Expr.to_sql() renders as SQL that ends the literal early or changes it
BACKSLASH_QUOTE = ["\\' OR true) --", "\\' OR true)) --", "x''y", "\\'", "a\\b"]


@pytest.mark.parametrize("cls", [LanceDbArm, LanceDbHybridArm])
def test_backslash_and_doubled_quotes_in_a_scope_are_compared_verbatim(cls, tiny, tmp_path):
    corpus, vectors = tiny
    arm = cls()
    arm.build(corpus, vectors, tmp_path / "s")
    remember_scoped(arm)
    rows = [
        {"memory_id": f"X{i}", "body": "x", "created_day": 1, "scope_id": s, "session_id": s}
        for i, s in enumerate(BACKSLASH_QUOTE)
    ]
    arm.remember(*batch(*rows, vec_of=DISK))
    for i, s in enumerate(BACKSLASH_QUOTE):
        assert scoped(arm, s) == ([f"X{i}"], 1), s  # not every row, not an error
        by_session = Query("p", "", fake_vector(DISK), Predicate("session_id", "=", s), True)
        res = arm.query(by_session, 10)
        assert (res.memory_ids, res.count) == ([f"X{i}"], 1), s
    assert scoped(arm, "x'y") == ([], 0)  # x''y is its own value, not x'y
    arm.close()


def test_a_correction_of_an_id_holding_backslash_quote_marks_that_memory_only(lance):
    evil = "\\' OR true) --"
    lance.remember(*batch({"memory_id": evil, "body": "x", "created_day": 3}))
    lance.remember(*batch({"memory_id": "N2", "body": "y", "created_day": 4, "supersedes": [evil]}))
    marked = lance.query(
        q(vec_of="x", predicate=Predicate("superseded_by", "=", "N2"), wants_count=True), 10
    )
    assert (marked.memory_ids, marked.count) == ([evil], 1)


def test_open_refuses_a_table_without_the_scope_column(lance, tmp_path):
    lance._table.drop_columns(["scope_id"])
    lance.close()
    with pytest.raises(ArmError, match=r"lacks the columns \['scope_id'\]"):
        LanceDbArm().open(tmp_path / "lance")


# ---------------------------------------------------------------- lancedb


def test_classes_declare_the_contract():
    for cls in (LanceDbArm, LanceDbHybridArm):
        assert isinstance(cls(), Arm) and cls.family == "product"
        assert cls.products[0] == "lancedb"
        caps = cls.capabilities
        assert (caps.predicate, caps.aggregate, caps.filter_stage) == (True, True, "in-search")
        assert caps.vector_access == "brute-force"
    assert LanceDbArm.capabilities.text_access == "none" and LanceDbArm.prefix_stable
    assert LanceDbHybridArm.capabilities.text_access == "lance-fts-bm25"
    assert not LanceDbHybridArm.prefix_stable
    assert issubclass(LanceDbHybridArm, LanceDbArm)
    with pytest.raises(ValueError, match="optimize_every"):
        LanceDbArm(optimize_every=-1)
    with pytest.raises(ValueError, match="candidates"):
        LanceDbHybridArm(candidates=0)


@pytest.mark.parametrize(
    ("pred", "allowed"),
    [
        (None, {"M1", "M2", "M3", "M4", "M5", "M6"}),
        (Predicate("session_id", "=", "S1"), {"M1", "M2", "M3"}),
        (Predicate("created_day", "<=", 15), {"M1", "M2", "M3"}),
        (Predicate("created_day", "<=", 9), set()),
        (Predicate("fact_id", "=", "F1"), {"M1", "M2", "M5"}),
        (Predicate("superseded_by", "is_null"), {"M3", "M4", "M5", "M6"}),
        (Predicate("superseded_by", "=", "M5"), {"M1", "M2"}),
        (Predicate("fact_id", "is_null"), {"M3"}),
        (Predicate("session_id", "=", "nope"), set()),
    ],
)
def test_predicates_filter_rank_by_cosine_and_count_exactly(lance, tiny, pred, allowed):
    res = lance.query(q("ignored text", vec_of=DISK, predicate=pred, wants_count=True), 10)
    assert_cosine_ranked(tiny, res.memory_ids, DISK, allowed, 10)
    assert res.count == len(allowed)
    assert lance.query(q(vec_of=DISK, predicate=pred), 10).count is None


@pytest.mark.parametrize(
    ("pred", "n"),
    [
        # days beyond the int32 column, which LanceDB refuses as a literal
        (Predicate("created_day", "<=", 2**31), 6),
        (Predicate("created_day", "<=", 2**40), 6),
        (Predicate("created_day", "<=", -(2**40)), 0),
        (Predicate("created_day", "=", 2**40), 0),
        (Predicate("created_day", "<=", 2**31 - 1), 6),
        # a lone surrogate is no stored (UTF-8) value
        (Predicate("session_id", "=", "\ud800"), 0),
    ],
)
def test_out_of_range_days_and_non_utf8_ids_are_answered(lance, hybrid, pred, n):
    for arm in (lance, hybrid):
        res = arm.query(q("timeout", vec_of=DISK, predicate=pred, wants_count=True), 10)
        assert (len(res.memory_ids), res.count) == (n, n)
    assert lance_filter(Predicate("created_day", "<=", 2**40)) == "true"
    assert lance_filter(Predicate("created_day", "=", -(2**40))) == "false"


def test_prefilter_fills_k_where_lancedb_postfilter_underfills(lance, tiny):
    s3 = Predicate("session_id", "=", "S3")
    sim = cosine(tiny, DISK)
    assert max(sim, key=sim.get) == "M4"  # the nearest memory is in session S2
    best_s3 = max(("M5", "M6"), key=sim.get)
    assert lance.query(q(vec_of=DISK, predicate=s3), 1).memory_ids == [best_s3]
    # the product's own post-filter mode ranks first, then filters: nothing survives
    table = lance._table
    post = (
        table.search(fake_vector(DISK))
        .distance_type("cosine")
        .where(lance_filter(s3), prefilter=False)
        .limit(1)
        .select(["memory_id", "_distance"])
        .to_arrow()
    )
    assert post.num_rows == 0


def test_answers_are_prefixes_and_text_is_ignored(lance):
    full = lance.query(q(vec_of=DISK), 6).memory_ids
    assert len(full) == 6
    for k in range(1, 6):
        assert lance.query(q("RUN-481 drain", vec_of=DISK), k).memory_ids == full[:k]
    assert lance.query(q(vec_of=DISK), 0).memory_ids == []
    assert lance.query(q(vec_of=DISK), -2).memory_ids == []
    assert lance.query(q(vec_of=DISK), 10**6).memory_ids == full
    nan = Query("n", "x", np.full(384, np.nan, np.float32), wants_count=True)
    assert lance.query(nan, 5).memory_ids == [] and lance.query(nan, 5).count == 6
    with pytest.raises(ArmError, match="17 values"):
        lance.query(Query("b", "x", np.ones(17, np.float32)), 5)


def test_explain_is_lancedbs_plan_with_the_filter(lance):
    plan = lance.explain(q(vec_of=DISK, predicate=Predicate("created_day", "<=", 15)), 3)
    assert "KNNVectorDistance: metric=cosine" in plan
    assert "created_day <= Int32(15)" in plan and "TopK(fetch=3)" in plan
    assert "prefilter=True" in plan
    counted = lance.explain(q(vec_of=DISK, wants_count=True), 3)
    assert "count: table.count_rows()" in counted


def test_remember_supersedes_via_update_and_fetch_reads_rows(lance):
    current = Predicate("superseded_by", "is_null")
    fix = "INC-2356: SVC-5345 outage caused by a failed fan."
    lance.remember(*batch({"memory_id": "N1", "body": fix, "created_day": 700,
                           "session_id": "S9", "supersedes": ["M4"]}))  # fmt: skip
    res = lance.query(q(vec_of=DISK, predicate=current, wants_count=True), 10)
    assert "M4" not in res.memory_ids and "N1" in res.memory_ids
    assert res.count == 4  # M3, M5, M6, N1
    by_n1 = Predicate("superseded_by", "=", "N1")
    assert lance.query(q(vec_of=DISK, predicate=by_n1), 10).memory_ids == ["M4"]
    got = lance.fetch(["N1", "nope", "M4", "N1"])
    assert got.columns == list(MEMORY_SCHEMA) and dict(got.schema) == MEMORY_SCHEMA
    assert got["memory_id"].to_list() == ["N1", "M4"]
    n1, m4 = got.rows(named=True)
    assert (n1["body"], n1["created_day"], n1["session_id"]) == (fix, 700, "S9")
    assert (n1["superseded_by"], n1["fact_id"], n1["turn_no"]) == (None, None, None)
    assert (m4["superseded_by"], m4["session_id"], m4["fact_id"]) == ("N1", "S2", "F2")
    assert (m4["turn_no"], m4["kind"], m4["entity_ids"]) == (0, "episodic", None)
    assert lance.fetch([]).columns == list(MEMORY_SCHEMA)


def test_remember_refuses_changing_nothing_and_links_within_a_batch(lance):
    table = lance._table
    bad = [
        ({"memory_id": "M2", "body": "again", "created_day": 1}, "'M2' is already stored"),
        ({"memory_id": "N1", "body": "x", "created_day": 1, "supersedes": ["gone"]}, "'gone'"),
    ]
    for row, match in bad:
        with pytest.raises(ArmError, match=match):
            lance.remember(*batch(row))
        assert table.count_rows() == 6
    lance.remember(*batch({"memory_id": "N1", "body": "first", "created_day": 1},
                          {"memory_id": "N2", "body": "second", "created_day": 2,
                           "supersedes": ["N1", "M6"]}))  # fmt: skip
    assert lance.fetch(["N1", "N2", "M6"])["superseded_by"].to_list() == ["N2", None, "N2"]


def test_hostile_ids_are_values_not_sql(lance):
    evil = "O'Brien'; DROP TABLE memories; --"
    lance.remember(*batch({"memory_id": "N1", "body": "x", "created_day": 3, "session_id": evil}))
    res = lance.query(q(vec_of="x", predicate=Predicate("session_id", "=", evil),
                        wants_count=True), 10)  # fmt: skip
    assert (res.memory_ids, res.count) == (["N1"], 1)
    assert lance._table.count_rows() == 7


def test_optimize_every_folds_writes_into_one_version(tiny, tmp_path):
    corpus, vectors = tiny
    arm = LanceDbHybridArm(optimize_every=2)
    arm.build(corpus, vectors, tmp_path / "opt")
    arm.remember(*batch({"memory_id": "N1", "body": "wrench one", "created_day": 1}))
    assert arm._table.index_stats("body_idx").num_unindexed_rows == 1
    arm.remember(*batch({"memory_id": "N2", "body": "wrench two", "created_day": 1}))
    assert arm._table.index_stats("body_idx").num_unindexed_rows == 0  # optimize() ran
    assert arm._table.index_stats("body_idx").num_indexed_rows == 8
    arm.close()


def test_open_reopens_and_refuses_a_missing_store(lance, tmp_path):
    before = lance.query(q(vec_of=DISK), 6).memory_ids
    lance.remember(*batch({"memory_id": "N1", "body": "kept", "created_day": 5}))
    lance.close()
    lance.close()
    with pytest.raises(ArmError, match="not open"):
        lance.query(q(vec_of=DISK), 3)
    again = LanceDbArm()
    again.open(tmp_path / "lance")
    assert [m for m in again.query(q(vec_of=DISK), 7).memory_ids if m != "N1"] == before
    assert again.fetch(["N1"])["body"].to_list() == ["kept"]
    again.close()
    missing = tmp_path / "nope"
    with pytest.raises(ArmError, match="nope"):
        LanceDbArm().open(missing)
    assert not missing.exists()  # lancedb.connect would have created it
    assert (tmp_path / "lance" / DB_DIR / f"{TABLE}.lance").is_dir()
    with pytest.raises(ArmError, match="no full-text index"):
        LanceDbHybridArm().open(tmp_path / "lance")


def test_storage_is_lancedbs_table_stats(lance, hybrid):
    st = lance.storage()
    assert st.total_bytes == lance._table.stats()["total_bytes"]
    assert list(st.objects) == ["memories"] and st.counts["memories"] == 6
    assert "stats()" in st.source
    hs = hybrid.storage()
    idx = hybrid._table.list_indices()[0]
    assert hs.objects["index:body_idx"] == idx.size_bytes > 0
    assert hs.total_bytes == hybrid._table.stats()["total_bytes"] == sum(hs.objects.values())
    assert hs.objects["memories"] == st.objects["memories"]


# ---------------------------------------------------------------- lancedb-hybrid


def test_hybrid_fuses_bm25_and_cosine_with_rrf(hybrid, lance, tiny):
    sim = cosine(tiny, "amber ledger")
    assert max(sim, key=sim.get) == "M2"
    # only M6 holds "drain"/"traffic": BM25 rank 1 plus its cosine rank beat M2's one list
    assert hybrid.query(q("drain traffic", vec_of="amber ledger"), 2).memory_ids == ["M6", "M2"]
    assert lance.query(q("drain traffic", vec_of="amber ledger"), 1).memory_ids == ["M2"]
    # pre-filtered legs: M6 is outside S1, so the S1 answer is the cosine order of S1
    s1 = Predicate("session_id", "=", "S1")
    res = hybrid.query(q("drain traffic", vec_of="amber ledger", predicate=s1,
                         wants_count=True), 3)  # fmt: skip
    assert res.memory_ids[0] == "M2" and set(res.memory_ids) == {"M1", "M2", "M3"}
    assert res.count == 3
    assert hybrid.fts_fallbacks == 0


def test_hybrid_blank_text_is_the_vector_search(hybrid, lance):
    for text in ("", "   ", "\t\n"):
        got = hybrid.query(q(text, vec_of=DISK), 6).memory_ids
        assert got == lance.query(q(vec_of=DISK), 6).memory_ids
    assert hybrid.fts_fallbacks == 0
    assert hybrid.explain(q("", vec_of=DISK), 3).startswith("text is blank")


def test_hybrid_falls_back_to_vector_when_lancedb_refuses_a_phrase(hybrid, lance):
    table = hybrid._table
    with pytest.raises(ValueError, match="position is not found but required for phrase"):
        table.search('"vault keys"', query_type="fts").limit(3).to_arrow()
    for i, text in enumerate(('"vault keys"', '""'), start=1):
        got = hybrid.query(q(text, vec_of=DISK), 6).memory_ids
        assert got == lance.query(q(vec_of=DISK), 6).memory_ids
        assert hybrid.fts_fallbacks == i
    # an unbalanced quote is not a phrase: BM25 runs and finds RUN-481's memory first
    assert hybrid.query(q('"RUN-481', vec_of=DISK), 1).memory_ids == ["M6"]


def test_hybrid_finds_remembered_rows_before_they_are_indexed(hybrid):
    hybrid.remember(*batch({"memory_id": "N1", "body": "ZQX-4242 rotates the vault keys",
                            "created_day": 700}, vec_of="unrelated words"))  # fmt: skip
    assert hybrid._table.index_stats("body_idx").num_unindexed_rows == 1
    assert hybrid.query(q("ZQX-4242", vec_of="amber ledger"), 2).memory_ids[0] == "N1"


def test_hybrid_explain_is_lancedbs_reranker_and_two_plans(hybrid):
    plan = hybrid.explain(q("drain traffic", vec_of=DISK, wants_count=True,
                            predicate=Predicate("superseded_by", "is_null")), 3)  # fmt: skip
    assert plan.count("RRFReranker(K=60)") == 1
    assert "KNNVectorDistance: metric=cosine" in plan and "MatchQuery: column=body" in plan
    assert "limit(50)" in plan and 'superseded_by = Utf8("")' in plan
    assert "count_rows(\"(superseded_by = '')\")" in plan
