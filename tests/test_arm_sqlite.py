"""Tests for the SQLite arms (fts, btree, hybrid, gated) on real apsw databases.

Expectations are hand-computed on the ``tiny`` corpus (tests/support/tiny.py):

- "CFG-799" occurs in M1, M3, M5 (M2 paraphrases it; it is in M2's entity list only).
- bm25 with one matching phrase prefers the shorter body: M3 (9 tokens) < M1 (10) < M5 (12).
- LIKE scoring gives every CFG-799 memory score 1, so ties go newest first: M5, M3, M1.
- M1 and M2 are superseded by M5; fact F1 = {M1, M2, M5}.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import polars as pl
import pytest
from support.hostile import HOSTILE_TEXTS
from support.tiny import fake_query as q, fake_vector, make_tiny, make_tiny_with_adr

from agentmem.arms import base
from agentmem.arms.sqlite import (
    DB_NAME,
    SqliteBtreeArm,
    SqliteFtsArm,
    SqliteGatedArm,
    SqliteHybridArm,
)

ARM_CLASSES = [SqliteFtsArm, SqliteBtreeArm, SqliteHybridArm, SqliteGatedArm]
ALL_IDS = {"M1", "M2", "M3", "M4", "M5", "M6"}
NOT_SUPERSEDED = base.Predicate("superseded_by", "is_null")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """One built store per arm class (module scope: each is built once)."""
    corpus, vectors = make_tiny()
    arms = {}
    for cls in ARM_CLASSES:
        arm = cls()
        stats = arm.build(corpus, vectors, tmp_path_factory.mktemp(cls.name))
        assert stats.ingest_ms > 0 and stats.index_ms > 0
        arms[cls] = arm
    yield arms
    for arm in arms.values():
        arm.close()


def store_dir(arm) -> Path:
    return arm._path.parent


# --------------------------------------------------------------------------- sqlite-fts


def test_fts_identifier_alone_ranked_by_bm25(built):
    assert built[SqliteFtsArm].query(q("CFG-799"), 10).memory_ids == ["M3", "M1", "M5"]


def test_fts_identifier_inside_question(built):
    # terms: long, timeout, set, cfg-799 ("set" matches "sets" through porter).
    # M1 and M5 match three terms, M3 only the identifier; M1 is shorter than M5.
    r = built[SqliteFtsArm].query(q("How long is the timeout set by CFG-799?"), 10)
    assert r.memory_ids == ["M1", "M5", "M3"]


def test_fts_predicate_in_sql(built):
    r = built[SqliteFtsArm].query(q("CFG-799", NOT_SUPERSEDED), 10)
    assert r.memory_ids == ["M3", "M5"]
    r = built[SqliteFtsArm].query(q("CFG-799", base.Predicate("created_day", "<=", 12)), 10)
    assert r.memory_ids == ["M1"]
    r = built[SqliteFtsArm].query(q("CFG-799", base.Predicate("session_id", "=", "S2")), 10)
    assert r.memory_ids == []


def test_fts_does_not_split_identifiers(built):
    # "SVC-5345" is the phrase svc+5345: M1, M4, M5, never SVC-77 (M6).
    r = built[SqliteFtsArm].query(q("SVC-5345"), 10)
    assert set(r.memory_ids) == {"M1", "M4", "M5"}


# ------------------------------------------------------------------------- sqlite-btree


def test_btree_identifier_alone_newest_first(built):
    assert built[SqliteBtreeArm].query(q("CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]


def test_btree_identifier_inside_question(built):
    # score = terms contained: M1 = M5 = 3 (timeout, set, cfg-799), M3 = 1. M5 newer.
    r = built[SqliteBtreeArm].query(q("How long is the timeout set by CFG-799?"), 10)
    assert r.memory_ids == ["M5", "M1", "M3"]


def test_btree_predicate_and_k(built):
    arm = built[SqliteBtreeArm]
    assert arm.query(q("CFG-799", NOT_SUPERSEDED), 10).memory_ids == ["M5", "M3"]
    assert arm.query(q("CFG-799"), 1).memory_ids == ["M5"]
    assert arm.query(q("CFG-799"), 0).memory_ids == []


def test_btree_like_wildcards_are_data(built):
    # "%" / "_" never become LIKE wildcards: "%_\\" has no terms, "100%" is the term "100".
    assert built[SqliteBtreeArm].query(q("%_\\"), 10).memory_ids == []
    assert built[SqliteBtreeArm].query(q("100%"), 10).memory_ids == []
    # LIKE is case-insensitive for ASCII
    assert built[SqliteBtreeArm].query(q("inc-2356"), 10).memory_ids == ["M4"]


# ------------------------------------------------------------------------ sqlite-hybrid


def reference_rrf(
    text_ranking: list[str], pred: base.Predicate | None, qvec: np.ndarray, k: int
) -> list[str]:
    """Independent RRF(60) over the FTS ranking and a numpy cosine ranking (both top 50)."""
    corpus, vectors = make_tiny()
    rows = corpus.memories.to_dicts()
    keep = [r for r in rows if pred is None or pred.matches(r)]
    cos = {r["memory_id"]: float(vectors.get([r["memory_id"]])[0] @ qvec) for r in keep}
    vec_ranking = sorted(
        keep, key=lambda r: (-round(cos[r["memory_id"]], 5), -r["created_day"], -r["seq"])
    )
    vec_ranking = [r["memory_id"] for r in vec_ranking][:50]
    score: dict[str, float] = {}
    for ranking in (text_ranking[:50], vec_ranking):
        for rank, mid in enumerate(ranking, start=1):
            score[mid] = score.get(mid, 0.0) + 1.0 / (60 + rank)
    by_id = {r["memory_id"]: r for r in rows}
    fused = sorted(
        score,
        key=lambda m: (-round(score[m], 12), -by_id[m]["created_day"], -by_id[m]["seq"]),
    )
    return fused[:k]


@pytest.mark.parametrize(
    "text, pred",
    [
        ("CFG-799", None),
        ("CFG-799", NOT_SUPERSEDED),
        ("How long is the timeout set by CFG-799?", None),
        ("SVC-5345 outage disk", base.Predicate("created_day", "<=", 250)),
        ("rotate keys", base.Predicate("session_id", "=", "S3")),
    ],
)
def test_hybrid_matches_reference_rrf(built, text, pred):
    fts = built[SqliteFtsArm].query(q(text, pred), 50).memory_ids
    want = reference_rrf(fts, pred, fake_vector(text), 10)
    assert built[SqliteHybridArm].query(q(text, pred), 10).memory_ids == want


def test_hybrid_rrf_hand_computed(built):
    # "CFG-799": FTS ranks M3, M1, M5. The fake vector of "cfg-799" has cosine 1/sqrt(n_words)
    # with each body holding the word "cfg-799": M1 and M3 have 8 words (tie -> newer M3 first),
    # M5 has 10; the others 0 (tie -> newest first: M6, M4, M2). Vector ranking: M3 M1 M5 M6 M4 M2.
    # RRF: M3 = 2/61, M1 = 2/62, M5 = 2/63, then M6 = 1/64, M4 = 1/65, M2 = 1/66.
    r = built[SqliteHybridArm].query(q("CFG-799"), 10)
    assert r.memory_ids == ["M3", "M1", "M5", "M6", "M4", "M2"]


def test_hybrid_predicate_filters_both_branches(built):
    r = built[SqliteHybridArm].query(q("CFG-799", NOT_SUPERSEDED, wants_count=True), 10)
    assert set(r.memory_ids) == {"M3", "M4", "M5", "M6"}
    assert r.memory_ids[:2] in (["M3", "M5"], ["M5", "M3"])
    assert r.count == 4


def test_hybrid_vector_branch_alone_without_terms(built):
    arm = built[SqliteHybridArm]
    r = arm.query(q("", base.Predicate("fact_id", "=", "F1"), wants_count=True), 10)
    assert sorted(r.memory_ids) == ["M1", "M2", "M5"] and r.count == 3
    # no text terms: ranking is vector-only; a query vector equal to M6's body vector ranks M6 first
    body6 = make_tiny()[0].memories["body"][5]
    r = arm.query(base.Query("q", "???", fake_vector(body6)), 3)
    assert r.memory_ids[0] == "M6" and len(r.memory_ids) == 3


def test_hybrid_branch_k_and_rrf_k_params(tmp_path):
    corpus, vectors = make_tiny()
    arm = SqliteHybridArm(branch_k=1, rrf_k=0)
    arm.build(corpus, vectors, tmp_path)
    # FTS top 1 = M3 (1/(0+1)); vector top 1 = M6 (query vector = M6's body vector, 1/1):
    # equal scores -> newest first: M6 (day 320) before M3 (day 15).
    body6 = corpus.memories["body"][5]
    assert arm.query(base.Query("q", "CFG-799", fake_vector(body6)), 10).memory_ids == ["M6", "M3"]
    arm.close()
    with pytest.raises(ValueError):
        SqliteHybridArm(branch_k=0)


def test_hybrid_rejects_wrong_embedding_dim(built):
    with pytest.raises(base.ArmError, match="384"):
        built[SqliteHybridArm].query(base.Query("q", "CFG-799", np.ones(3, np.float32)), 5)


# ----------------------------------------------------------------------- all three arms


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_count_is_of_predicate_not_text(built, cls):
    arm = built[cls]
    r = arm.query(q("CFG-799", base.Predicate("fact_id", "=", "F1"), wants_count=True), 10)
    assert r.count == 3
    assert set(r.memory_ids) <= {"M1", "M2", "M5"}
    r = arm.query(
        q("nothing matches zzz", base.Predicate("fact_id", "=", "F1"), wants_count=True), 10
    )
    assert r.count == 3
    assert arm.query(q("CFG-799", wants_count=True), 10).count == 6
    assert arm.query(q("", NOT_SUPERSEDED, wants_count=True), 10).count == 4
    assert arm.query(q("CFG-799"), 10).count is None


@pytest.mark.parametrize("cls", [SqliteFtsArm, SqliteBtreeArm])
@pytest.mark.parametrize(
    "text", ["CFG-799", "What did we decide in CFG-799?", "cfg-799", "memories:CFG-799"]
)
def test_hyphenated_identifier_found_by_text_arms(built, cls, text):
    assert set(built[cls].query(q(text), 10).memory_ids) == {"M1", "M3", "M5"}


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_adr_identifier_alone_and_in_question(tmp_path, cls):
    corpus, vectors = make_tiny_with_adr()
    arm = cls()
    arm.build(corpus, vectors, tmp_path)
    for text in ("ADR-297", "What did we decide in ADR-297 about storage?", "-ADR-297"):
        ids = arm.query(q(text), 10).memory_ids
        assert ids[0] == "M7", (text, ids)
        if cls is not SqliteHybridArm:  # the vector branch returns everything else too
            # the near miss ADR-298 never matches; "decide" also matches M3's "decided"
            assert "M8" not in ids and set(ids) <= {"M7", "M3"}, (text, ids)
            if "decide" not in text:
                assert ids == ["M7"], (text, ids)
    arm.close()


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_hostile_texts(built, cls):
    arm = built[cls]
    for text in HOSTILE_TEXTS:
        for pred, wants in ((None, False), (NOT_SUPERSEDED, True)):
            r = arm.query(base.Query("h", text, fake_vector(text), pred, wants), 5)
            assert isinstance(r, base.Result)
            assert len(r.memory_ids) <= 5 and len(set(r.memory_ids)) == len(r.memory_ids)
            assert set(r.memory_ids) <= ALL_IDS
            assert all(isinstance(m, str) for m in r.memory_ids)
            if wants:
                assert r.count == 4
                assert set(r.memory_ids) <= {"M3", "M4", "M5", "M6"}
            else:
                assert r.count is None
            assert arm.explain(base.Query("h", text, fake_vector(text), pred, wants))
    # the table survived "'; DROP TABLE memories; --"
    assert arm.query(q("", wants_count=True), 5).count == 6


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_empty_text_gives_no_ranking_for_text_arms(built, cls):
    r = built[cls].query(q("   "), 10)
    if cls in (SqliteHybridArm, SqliteGatedArm):  # the vector branch alone answers
        assert set(r.memory_ids) == ALL_IDS
    else:
        assert r.memory_ids == []


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_reopen_from_second_instance(built, cls):
    first = built[cls]
    second = cls()
    second.open(store_dir(first))  # while the first still holds the WAL database open
    for query in (q("CFG-799"), q("timeout", NOT_SUPERSEDED, wants_count=True)):
        assert second.query(query, 10) == first.query(query, 10)
    assert second.storage().objects.keys() == first.storage().objects.keys()
    second.close()
    second.close()  # idempotent
    with pytest.raises(base.ArmError, match="not open"):
        second.query(q("CFG-799"), 10)


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_open_errors_name_the_path(tmp_path, cls):
    with pytest.raises(base.ArmError, match=str(tmp_path)):
        cls().open(tmp_path / "missing")
    (tmp_path / DB_NAME).write_text("this is not a database\n" * 100)
    with pytest.raises(base.ArmError, match=str(tmp_path)):
        cls().open(tmp_path)


def test_open_rejects_store_of_another_arm(built):
    # the file's application_id names the arm that built it, before any missing table
    with pytest.raises(base.ArmError, match="built by sqlite-btree; open it with that arm"):
        SqliteFtsArm().open(store_dir(built[SqliteBtreeArm]))
    with pytest.raises(base.ArmError, match="built by sqlite-fts; open it with that arm"):
        SqliteHybridArm().open(store_dir(built[SqliteFtsArm]))
    with pytest.raises(base.ArmError, match="built by sqlite-gated; open it with that arm"):
        SqliteHybridArm().open(store_dir(built[SqliteGatedArm]))


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_schema_wal_and_join_table(built, cls):
    conn = apsw.Connection(str(store_dir(built[cls]) / DB_NAME), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("PRAGMA journal_mode").fetchall()[0][0] == "wal"
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='index'")}
    assert {
        "memories_session_id_idx",
        "memories_created_day_idx",
        "memories_fact_id_idx",
        "memories_superseded_by_idx",
        "memory_entities_entity_idx",
    } <= indexes
    rows = conn.execute(
        "SELECT m.memory_id FROM memory_entities AS e JOIN memories AS m "
        "ON m.memory_id = e.memory_id WHERE e.entity_id = ? ORDER BY m.seq",
        ("CFG-799",),
    ).fetchall()
    assert [r[0] for r in rows] == ["M1", "M2", "M3", "M5"]
    conn.close()


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_storage_from_dbstat(built, cls):
    s = built[cls].storage()
    assert s.source == "dbstat"
    assert s.total_bytes == sum(s.objects.values()) > 0
    assert {"memories", "memory_entities", "memories_fact_id_idx"} <= s.objects.keys()
    assert ("memories_fts_data" in s.objects) == (cls is not SqliteBtreeArm)
    assert ("memory_vectors" in s.objects) == (cls in (SqliteHybridArm, SqliteGatedArm))
    if cls is SqliteHybridArm:  # 6 vectors x 1536 bytes need more than one 4 KiB page
        assert s.objects["memory_vectors"] >= 6 * 384 * 4
    if cls is SqliteGatedArm:  # 6 int8 vectors x 384 bytes fit in one page
        assert s.objects["memory_vectors"] == 4096
        assert "entity_names" in s.objects


def test_explain_shows_real_plans(built):
    fts = built[SqliteFtsArm].explain(q("CFG-799", base.Predicate("fact_id", "=", "F1"), True))
    assert "memories_fts VIRTUAL TABLE" in fts and "m.fact_id = :pv" in fts
    assert "-- count:" in fts and "memories_fact_id_idx" in fts
    bt = built[SqliteBtreeArm].explain(q("CFG-799"))
    assert "LIKE :t0 ESCAPE" in bt and "QUERY PLAN" in bt
    hy = built[SqliteHybridArm].explain(q("CFG-799", NOT_SUPERSEDED))
    assert "vec_distance_cosine" in hy and "memories_fts VIRTUAL TABLE" in hy
    assert hy.count("superseded_by IS NULL") == 2  # the predicate is in both branches
    assert "no statement runs" in built[SqliteFtsArm].explain(q("?!"))


def test_capabilities():
    for cls in ARM_CLASSES:
        c = cls.capabilities
        assert cls.family == "sqlite"
        assert c.predicate and c.join and c.aggregate and c.transactions
    assert SqliteFtsArm.capabilities.text_access == "fts5-bm25"
    assert SqliteBtreeArm.capabilities.text_access == "b-tree+like"
    assert SqliteHybridArm.capabilities.vector_access == "brute-force"
    assert SqliteFtsArm.capabilities.vector_access == "none"
    names = [c.name for c in ARM_CLASSES]
    assert names == ["sqlite-fts", "sqlite-btree", "sqlite-hybrid", "sqlite-gated"]
    assert SqliteGatedArm.capabilities.vector_access == "brute-force"
    assert SqliteGatedArm.capabilities.text_access == "fts5-bm25"


def test_rebuild_replaces_store(tmp_path):
    corpus, vectors = make_tiny()
    arm = SqliteFtsArm()
    arm.build(corpus, vectors, tmp_path)
    arm.build(corpus, vectors, tmp_path)  # rebuild over the same directory
    assert arm.query(q("", wants_count=True), 5).count == 6
    arm.close()


def test_build_missing_embedding_raises(tmp_path):
    corpus, vectors = make_tiny()
    short = base.Embeddings(ids=vectors.ids[:3], matrix=vectors.matrix[:3])
    with pytest.raises(base.ArmError, match="M4"):
        SqliteHybridArm().build(corpus, short, tmp_path)


# ---------------------------------------------------------------------- remember / fetch
NEW_BODY = "Correction: CFG-799 now sets the timeout of SVC-5345 to 60s."


def fresh(cls, tmp_path: Path, corpus=None, vectors=None):
    """A newly built store of ``cls`` on the tiny corpus (or on ``corpus``)."""
    if corpus is None:
        corpus, vectors = make_tiny()
    arm = cls()
    arm.build(corpus, vectors, tmp_path / cls.name)
    return arm


def remember(arm, rows: list[dict]) -> None:
    """Remember ``rows``; each memory's vector is the fake vector of its body."""
    vecs = base.Embeddings(
        [r["memory_id"] for r in rows], np.stack([fake_vector(r["body"]) for r in rows])
    )
    arm.remember(pl.DataFrame(rows), vecs)


def table_counts(arm) -> dict[str, int]:
    """Row counts of every table of the store, read through a second connection."""
    conn = apsw.Connection(str(arm._path), flags=apsw.SQLITE_OPEN_READONLY)
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    counts = {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchall()[0][0] for n in names}
    conn.close()
    return counts


REPLAY_QUERIES = [
    ("CFG-799", None, False),
    ("CFG-799", NOT_SUPERSEDED, True),
    ("How long is the timeout set by CFG-799?", None, False),
    ("timeout SVC-5345", base.Predicate("fact_id", "=", "F1"), True),
    ("", base.Predicate("superseded_by", "=", "M5"), True),
]


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_correction_replayed_by_remember_equals_build(tmp_path, cls):
    """Build without M5, then remember M5 (which supersedes M1 and M2): same store as build.

    Same rows (fetch), same FTS5 statistics and vectors, so every query gives the answer
    of the store built from all six memories.
    """
    corpus, vectors = make_tiny()
    full = fresh(cls, tmp_path / "full", corpus, vectors)
    replay = base.with_supersedes(corpus.memories)
    assert replay.filter(pl.col("memory_id") == "M5")["supersedes"].to_list() == [["M1", "M2"]]
    first = base.Corpus(replay.filter(pl.col("memory_id") != "M5").drop("supersedes"))
    arm = fresh(cls, tmp_path / "replay", first, vectors)
    assert arm.fetch(["M1"])["superseded_by"].to_list() == [None]
    arm.remember(replay.filter(pl.col("memory_id") == "M5"), vectors)
    ids = ["M1", "M2", "M3", "M4", "M5", "M6"]
    assert arm.fetch(ids).equals(full.fetch(ids))
    assert arm.fetch(ids)["superseded_by"].to_list() == ["M5", "M5", None, None, None, None]
    for text, pred, count in REPLAY_QUERIES:
        assert arm.query(q(text, pred, count), 10) == full.query(q(text, pred, count), 10), text
    segments = {"memories_fts_data", "memories_fts_idx"}  # an insert adds an FTS5 segment
    rows = {t: n for t, n in table_counts(arm).items() if t not in segments}
    assert rows == {t: n for t, n in table_counts(full).items() if t not in segments}
    arm.close()
    full.close()


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_remember_then_fetch_every_column(tmp_path, cls):
    arm = fresh(cls, tmp_path)
    row = {
        "memory_id": "N1",
        "session_id": "S9",
        "turn_no": 4,
        "seq": 77,
        "kind": "semantic",
        "body": NEW_BODY,
        "fact_id": "F1",
        "created_day": 400,
        "source": "tool_result",
        "confidence": 0.5,
        "tokens": 13,
        "entity_ids": ["CFG-799", "SVC-5345", "CFG-799"],
        "scope_id": "user-9",
        "supersedes": ["M5"],
    }
    remember(arm, [row])
    got = arm.fetch(["N1", "nope", "M5", "N1"])
    assert got.schema == pl.Schema(base.MEMORY_SCHEMA)
    assert got.to_dicts() == [
        {
            **{k: v for k, v in row.items() if k != "supersedes"},
            "superseded_by": None,
            "entity_ids": ["CFG-799", "SVC-5345"],  # one memory_entities row per entity
            "form": None,  # not stored
        },
        {
            "memory_id": "M5",
            "session_id": "S3",
            "turn_no": 0,
            "seq": 4,
            "kind": "semantic",
            "body": "Correction: CFG-799 now sets the timeout of SVC-5345 to 45s.",
            "fact_id": "F1",
            "created_day": 320,
            "source": "user_message",
            "confidence": 0.9,
            "superseded_by": "N1",
            "tokens": 10,
            "entity_ids": ["CFG-799", "SVC-5345"],
            "form": None,
            "scope_id": None,  # the tiny corpus has no scopes
        },
    ]
    # the next query sees it: current memories are M3, M4, M6 and N1 (M5 is corrected)
    current = arm.query(q("CFG-799", NOT_SUPERSEDED, True), 10)
    assert current.count == 4
    if cls is SqliteBtreeArm:  # one LIKE term each: ties newest first
        assert current.memory_ids == ["N1", "M3"]
    elif cls is SqliteFtsArm:  # the shorter body first (bm25): M3 has 9 tokens, N1 12
        assert current.memory_ids == ["M3", "N1"]
    elif cls is SqliteGatedArm:  # both linked to CFG-799; N1 the correction and the newest
        assert current.memory_ids == ["N1", "M3"]
    else:  # the vector branch adds every other current memory
        assert set(current.memory_ids) == {"N1", "M3", "M4", "M6"}


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_remember_defaults_and_fetch_order(tmp_path, cls):
    arm = fresh(cls, tmp_path)
    remember(arm, [{"memory_id": "N2", "body": "plain words only", "created_day": 500}])
    row = arm.fetch(["N2"]).row(0, named=True)
    assert (row["kind"], row["source"], row["confidence"]) == ("episodic", "agent", 1.0)
    assert (row["session_id"], row["turn_no"], row["fact_id"]) == (None, None, None)
    assert row["tokens"] == 3 and row["entity_ids"] == []
    assert row["seq"] > 5  # after every corpus memory
    assert arm.fetch(["M4", "zz", "M1", "M4", "N2"])["memory_id"].to_list() == ["M4", "M1", "N2"]
    empty = arm.fetch([])
    assert empty.height == 0 and empty.schema == pl.Schema(base.MEMORY_SCHEMA)
    with pytest.raises(ValueError, match="one string"):
        arm.fetch("M1")


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_failed_batch_leaves_nothing(tmp_path, cls):
    """A batch with one bad row writes none of its rows (nor FTS, vector or entity rows)."""
    arm = fresh(cls, tmp_path)
    before = table_counts(arm)
    ok = {"memory_id": "N3", "body": "fine row", "created_day": 1, "entity_ids": ["E1"]}
    with pytest.raises(base.ArmError, match="'nope'.*not stored"):
        remember(
            arm,
            [ok, {"memory_id": "N4", "body": "b", "created_day": 1, "supersedes": ["M4", "nope"]}],
        )
    with pytest.raises(base.ArmError, match="'M3' is already stored"):
        remember(arm, [ok, {"memory_id": "M3", "body": "other text", "created_day": 1}])
    with pytest.raises(base.ArmError, match="sqlite-.*'N4'.*supersedes itself"):
        remember(arm, [{"memory_id": "N4", "body": "b", "created_day": 1, "supersedes": ["N4"]}])
    assert table_counts(arm) == before
    assert arm.fetch(["N3", "N4"]).height == 0
    assert arm.fetch(["M3", "M4"])["body"].to_list() == [
        "Someone asked about CFG-799 in chat; nothing decided.",
        "INC-2356: SVC-5345 outage caused by a full disk.",
    ]
    assert arm.fetch(["M4"])["superseded_by"].to_list() == [None]
    remember(arm, [ok])  # the store is still writable
    assert table_counts(arm)["memories"] == before["memories"] + 1


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_remember_is_committed_durably_and_indexed(tmp_path, cls):
    arm = fresh(cls, tmp_path)
    assert arm._conn.execute("PRAGMA synchronous").fetchall()[0][0] == 2  # FULL
    body = "QRX-5150 keeps\x00 a NUL and 'quotes'; DROP TABLE memories; --"
    remember(arm, [{"memory_id": "N5", "body": body, "created_day": 600, "session_id": "'; --"}])
    # another connection sees it at once: committed
    other = apsw.Connection(str(arm._path), flags=apsw.SQLITE_OPEN_READONLY)
    got = other.execute("SELECT body, session_id FROM memories WHERE memory_id = 'N5'").fetchall()
    assert got == [(body, "'; --")]
    if cls is not SqliteBtreeArm:  # the FTS5 index agrees with its content table
        arm._conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")
        rowid = other.execute("SELECT id FROM memories WHERE memory_id = 'N5'").fetchall()[0][0]
        assert rowid == 7
        assert other.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH '\"QRX-5150\"'"
        ).fetchall() == [(7,)]
    if cls is SqliteHybridArm:
        blob = other.execute("SELECT embedding FROM memory_vectors WHERE id = 7").fetchall()[0][0]
        assert np.array_equal(np.frombuffer(blob, np.float32), fake_vector(body))
        assert arm.query(base.Query("v", "", fake_vector(body)), 1).memory_ids == ["N5"]
    other.close()
    assert arm.query(q("QRX-5150"), 5).memory_ids[0] == "N5"
    assert arm.fetch(["N5"])["body"].to_list() == [body]  # verbatim, NUL included
    arm.close()
    again = cls()
    again.open(store_dir_of(tmp_path, cls))
    assert again.fetch(["N5"])["body"].to_list() == [body]
    again.close()


def store_dir_of(tmp_path: Path, cls) -> Path:
    return tmp_path / cls.name


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_raw_ids_give_the_query_answer(built, cls):
    arm = built[cls]
    for text, pred, count in [*REPLAY_QUERIES, ("?!", None, True), ("CFG-799", None, False)]:
        for k in (0, 1, 3, 10):
            qq = q(text, pred, count)
            assert arm.raw_ids(arm.raw_query_call(qq, k)(), k) == arm.query(qq, k).memory_ids


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_remember_and_fetch_need_an_open_store(tmp_path, cls):
    arm = fresh(cls, tmp_path)
    arm.close()
    with pytest.raises(base.ArmError, match="not open"):
        remember(arm, [{"memory_id": "N6", "body": "x", "created_day": 1}])
    with pytest.raises(base.ArmError, match="not open"):
        arm.fetch(["M1"])


def test_a_store_opens_only_with_the_arm_that_built_it(tmp_path):
    """sqlite-btree finds every table it needs in an sqlite-fts file; the file's
    application_id still refuses it (a remember through it would skip the FTS5 index)."""
    corpus, vectors = make_tiny()
    fts = SqliteFtsArm()
    fts.build(corpus, vectors, tmp_path)
    fts.close()
    for cls, why in ((SqliteBtreeArm, r"built by sqlite-fts; open it with that arm"),
                     (SqliteHybridArm, r"built by sqlite-fts; open it with that arm")):  # fmt: skip
        other = cls()
        with pytest.raises(base.ArmError, match=why):
            other.open(tmp_path)
        other.close()
    again = SqliteFtsArm()
    again.open(tmp_path)  # its own arm still opens it
    assert again.storage().total_bytes > 0
    again.close()


# -------------------------------------------------------------------------------- scope
#: tiny with scopes: M1-M3 are user u1's memories, M4-M5 user u2's, M6 nobody's
SCOPE_OF = {"M1": "u1", "M2": "u1", "M3": "u1", "M4": "u2", "M5": "u2", "M6": None}


def scoped(
    text: str, scope: str, pred: base.Predicate | None = None, count: bool = False
) -> base.Query:
    """A query in ``scope`` whose embedding is the fake vector of ``text``."""
    return base.Query("qs", text, fake_vector(text), pred, count, scope=scope)


@pytest.fixture(scope="module")
def scoped_built(tmp_path_factory: pytest.TempPathFactory):
    """One store per arm class of the tiny corpus with the scopes of ``SCOPE_OF``."""
    corpus, vectors = make_tiny()
    mem = corpus.memories.with_columns(
        scope_id=pl.col("memory_id").replace_strict(SCOPE_OF, return_dtype=pl.String)
    )
    arms = {}
    for cls in ARM_CLASSES:
        arms[cls] = cls()
        arms[cls].build(base.Corpus(mem), vectors, tmp_path_factory.mktemp(f"scoped-{cls.name}"))
    yield arms
    for arm in arms.values():
        arm.close()


def test_predicate_sql_translates_a_conjunction():
    from agentmem.arms.sqlite import predicate_sql

    both = (base.Predicate("scope_id", "=", "u1"), base.Predicate("created_day", "<=", 12))
    assert predicate_sql(both) == (
        "(m.scope_id = :pv0 AND m.created_day <= :pv1)",
        {"pv0": "u1", "pv1": 12},
    )
    assert predicate_sql(base.Predicate("fact_id", "=", "F1")) == (
        "m.fact_id = :pv0",
        {"pv0": "F1"},
    )
    assert predicate_sql(base.Predicate("scope_id", "is_null")) == ("m.scope_id IS NULL", {})
    assert predicate_sql(None) == predicate_sql(()) == ("1", {})
    # not UTF-8: apsw cannot bind it and nothing stored equals it; = NULL is never true
    assert predicate_sql(base.Predicate("scope_id", "=", "u\ud800")) == (
        "m.scope_id = :pv0",
        {"pv0": None},
    )
    q_both = base.Query("q", "x", None, base.Predicate("created_day", "<=", 12), scope="u1")
    assert predicate_sql(q_both.filters) == predicate_sql(both)  # the scope comes first


@pytest.mark.parametrize(
    "cls, scope, want",
    [
        (SqliteFtsArm, "u1", ["M3", "M1"]),  # bm25 order of the unscoped M3, M1, M5
        (SqliteFtsArm, "u2", ["M5"]),
        (SqliteBtreeArm, "u1", ["M3", "M1"]),  # newest first of M5, M3, M1
        (SqliteBtreeArm, "u2", ["M5"]),
        # FTS ranks M3, M1 (u1); the scope's vector ranking is M3, M1 (8 words each, M3
        # newer), then M2 (cosine 0): RRF M3 = 2/61, M1 = 2/62, M2 = 1/63
        (SqliteHybridArm, "u1", ["M3", "M1", "M2"]),
        # FTS: M5; vectors: M5, then M4 (cosine 0): M5 = 2/61, M4 = 1/62; never M6 (no scope)
        (SqliteHybridArm, "u2", ["M5", "M4"]),
    ],
)
def test_scope_filters_every_branch(scoped_built, cls, scope, want):
    assert scoped_built[cls].query(scoped("CFG-799", scope), 10).memory_ids == want


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_scope_and_predicate_and_count(scoped_built, cls):
    arm = scoped_built[cls]
    # u1 holds M1, M2 (both superseded by M5) and M3: one current memory
    r = arm.query(scoped("CFG-799", "u1", NOT_SUPERSEDED, count=True), 10)
    assert r.memory_ids == ["M3"] and r.count == 1
    assert arm.query(scoped("", "u2", count=True), 10).count == 2  # M4, M5; text plays no part
    assert arm.query(q("", wants_count=True), 10).count == 6  # unscoped: every memory
    only_m6 = arm.query(q("RUN-481", base.Predicate("scope_id", "is_null"), True), 10)
    assert only_m6.memory_ids == ["M6"] and only_m6.count == 1
    for hostile in ("u1' OR '1'='1", "u1\x00", "%", *HOSTILE_TEXTS[:5]):
        if not hostile:
            continue
        r = arm.query(scoped("CFG-799", hostile, count=True), 10)
        assert r == base.Result(memory_ids=[], count=0), hostile


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_scope_survives_reopen_and_remember(tmp_path, cls):
    corpus, vectors = make_tiny()
    arm = fresh(cls, tmp_path, corpus, vectors)
    remember(arm, [{"memory_id": "N1", "body": NEW_BODY, "created_day": 400, "scope_id": "u9"}])
    arm.close()
    again = cls()
    again.open(store_dir_of(tmp_path, cls))
    r = again.query(scoped("CFG-799", "u9", count=True), 10)
    assert r == base.Result(memory_ids=["N1"], count=1)
    assert again.fetch(["N1", "M1"])["scope_id"].to_list() == ["u9", None]
    again.close()


@pytest.mark.parametrize("cls", ARM_CLASSES)
def test_scope_hooks_and_plans(scoped_built, cls):
    arm = scoped_built[cls]
    for k in (0, 1, 10):
        qq = scoped("CFG-799", "u1", NOT_SUPERSEDED, count=True)
        assert arm.raw_ids(arm.raw_query_call(qq, k)(), k) == arm.query(qq, k).memory_ids
    plan = arm.explain(scoped("CFG-799", "u1", count=True))
    branches = {SqliteHybridArm: 2, SqliteGatedArm: 3}.get(cls, 1)  # gated: keys, text, dense
    assert plan.count("m.scope_id = :pv0") == branches + 1  # every branch, and the count
    assert "memories_scope_id_idx" in plan  # the count reads the scope's partial index


def test_store_without_scope_column_is_refused(tmp_path):
    corpus, vectors = make_tiny()
    arm = fresh(SqliteFtsArm, tmp_path, corpus, vectors)
    arm._conn.execute("DROP INDEX memories_scope_id_idx; ALTER TABLE memories DROP COLUMN scope_id")
    arm.close()
    with pytest.raises(base.ArmError, match=r"lacks memories columns \['scope_id'\].*rebuild"):
        SqliteFtsArm().open(tmp_path / SqliteFtsArm.name)
