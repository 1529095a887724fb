"""Tests for the PostgreSQL arms and agentmem.pg, on real embedded PostgreSQL servers.

One tiny store directory (one embedded server, one database per arm) is shared by the
module; a "bulk" store (3,000 synthetic memories) shows planner behaviour that six rows
cannot: the HNSW and GIN indexes in pg-hybrid's plan, and pg-hnsw's filtered underfill.

Hand-computed expectations on the ``tiny`` corpus (tests/support/tiny.py):

- "CFG-799" occurs in M1, M3, M5 (M2 paraphrases it); "decide" occurs only in M3
  ("decided"; the English stemmer maps both to ``decid``).
- ILIKE scoring gives every CFG-799 memory score 1, so ties go newest first: M5, M3, M1;
  adding "timeout" lifts M1 and M5 (score 2): M5, M1, M3.
- M1 and M2 are superseded by M5; fact F1 = {M1, M2, M5}; session S3 = {M5, M6};
  created_day <= 15 = {M1, M2, M3}.
- The fake query vector of a body equals that memory's vector (cosine distance 0).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import psutil
import pytest
from psycopg import sql
from support.hostile import HOSTILE_TEXTS
from support.paths import REPO
from support.postgres import servers_left, servers_under, wait_dead
from support.tiny import fake_query as q, fake_vector, make_tiny

from agentmem import pg
from agentmem.arms import base
from agentmem.arms.postgres import (
    PgBtreeArm,
    PgGinArm,
    PgHnswArm,
    PgHnswIterativeArm,
    PgHybridArm,
    tsquery_sql,
)
from agentmem.choices import choice_overrides
from agentmem.text import like_pattern

ARM_CLASSES = [PgHnswArm, PgHnswIterativeArm, PgBtreeArm, PgGinArm, PgHybridArm]
TEXT_ARMS = ["pg-btree", "pg-gin"]
VECTOR_ARMS = ["pg-hnsw", "pg-hnsw-iterative", "pg-hybrid"]
ALL_IDS = {"M1", "M2", "M3", "M4", "M5", "M6"}
NOT_SUPERSEDED = base.Predicate("superseded_by", "is_null")


@pytest.fixture(autouse=True)
def _embedded_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in embedded mode unless it sets the DSN itself."""
    monkeypatch.delenv(pg.ENV_DSN, raising=False)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory):
    """Module temp root; at the end no postgres server may run under it."""
    path = tmp_path_factory.mktemp("pgarms")
    yield path
    survivors = servers_left(path)
    assert survivors == [], f"postgres servers still running under {path}: {survivors}"


@pytest.fixture(scope="module")
def tiny_arms(root: Path):
    """All five arms built on the tiny corpus in ONE store dir (one server, 5 databases)."""
    old = os.environ.pop(pg.ENV_DSN, None)
    corpus, vectors = make_tiny()
    store = root / "tiny"
    arms = {}
    pid = None
    try:
        for cls in ARM_CLASSES:
            arm = cls()
            stats = arm.build(corpus, vectors, store)
            assert stats.ingest_ms > 0 and stats.index_ms > 0
            arms[cls.name] = arm
        pid = pg.postmaster_pid(store / pg.PGDATA_DIRNAME)
        assert pg.process_alive(pid)
        yield arms
    finally:
        for arm in arms.values():
            arm.close()
        if old is not None:
            os.environ[pg.ENV_DSN] = old
    assert wait_dead(pid), f"embedded postmaster {pid} survived close()"


def bulk_corpus(n: int = 3000) -> tuple[base.Corpus, base.Embeddings]:
    """``n`` synthetic memories in two vector clusters split by ``created_day``.

    Days 0..49 lie near ``+e0`` (scope ``u-pos``), days 50..99 near ``-e0`` (scope
    ``u-neg``), except every 150th memory (scope ``u-few``: 20 memories, half of each
    cluster); body ``i`` contains ``w{i%100}``.
    """
    rng = np.random.default_rng(7)
    day = np.arange(n) % 100
    x = rng.standard_normal((n, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x[:, 0] += np.where(day <= 49, 1.0, -1.0).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ids = [f"B{i}" for i in range(n)]
    mem = pl.DataFrame(
        {
            "memory_id": ids,
            "session_id": [f"S{i % 30}" for i in range(n)],
            "turn_no": [i % 10 for i in range(n)],
            "seq": list(range(n)),
            "kind": ["semantic"] * n,
            "body": [f"note {i} about w{i % 100} and topic t{i % 7}" for i in range(n)],
            "fact_id": [None] * n,
            "created_day": day.tolist(),
            "source": ["user_message"] * n,
            "confidence": [0.5] * n,
            "superseded_by": [None] * n,
            "tokens": [7] * n,
            "entity_ids": [[f"E{i % 5}"] for i in range(n)],
            "scope_id": [
                "u-few" if i % 150 == 0 else "u-pos" if d <= 49 else "u-neg"
                for i, d in enumerate(day.tolist())
            ],
        },
        schema_overrides={
            "turn_no": pl.Int32,
            "created_day": pl.Int32,
            "seq": pl.Int64,
            "tokens": pl.Int32,
            "fact_id": pl.Utf8,
            "superseded_by": pl.Utf8,
        },
    )
    return base.Corpus(memories=mem), base.Embeddings(ids=ids, matrix=x)


@pytest.fixture(scope="module")
def bulk(root: Path):
    """pg-hnsw, pg-hnsw-iterative and pg-hybrid on the bulk corpus (one server)."""
    corpus, vectors = bulk_corpus()
    store = root / "bulk"
    arms = {}
    pid = None
    try:
        for cls in (PgHnswArm, PgHnswIterativeArm, PgHybridArm):
            arm = cls()
            arm.build(corpus, vectors, store)
            arms[cls.name] = arm
        pid = pg.postmaster_pid(store / pg.PGDATA_DIRNAME)
        yield arms, vectors
    finally:
        for arm in arms.values():
            arm.close()
    assert wait_dead(pid)


# ------------------------------------------------------------------ connection layer
@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        (
            "postgresql://bob:s3cret@db.example:5432/agentmem?sslmode=require",
            "postgresql://bob:***@db.example:5432/agentmem?sslmode=require",
        ),
        ("postgres://bob:p@ss/word@host/db", "postgres://bob:***@host/db"),
        (
            "postgresql://bob@host/db?password=s3cret&sslmode=disable",
            "postgresql://bob@host/db?password=***&sslmode=disable",
        ),
        ("host=h user=bob password=s3cret dbname=x", "host=h user=bob password=*** dbname=x"),
        ("host=h password = 'se cret' user=bob", "host=h password = *** user=bob"),
        (
            "postgresql://postgres:@/postgres?host=/tmp/x",
            "postgresql://postgres:***@/postgres?host=/tmp/x",
        ),
        ("host=/tmp/x dbname=postgres", "host=/tmp/x dbname=postgres"),
    ],
)
def test_redact_dsn(dsn: str, expected: str) -> None:
    assert pg.redact_dsn(dsn) == expected
    assert "s3cret" not in pg.redact_dsn(dsn) and "se cret" not in pg.redact_dsn(dsn)


def test_connection_error_names_dsn_without_password(tmp_path: Path) -> None:
    dsn = f"postgresql://bob:s3cret@/postgres?host={tmp_path / 'nowhere'}"
    with pytest.raises(pg.PgError) as err:
        pg.connect(dsn)
    msg = str(err.value)
    assert "s3cret" not in msg
    assert f"postgresql://bob:***@/postgres?host={tmp_path / 'nowhere'}" in msg


def test_database_name_is_a_safe_identifier(tmp_path: Path) -> None:
    a = pg.database_name("pg-hnsw", tmp_path / "m" / "pg-hnsw")
    b = pg.database_name("pg-hnsw", tmp_path / "s" / "pg-hnsw")
    assert a.startswith("agentmem_pg_hnsw_m_") and b.startswith("agentmem_pg_hnsw_s_")
    assert a != b
    weird = pg.database_name("x" * 80, tmp_path / "Ünïcode dir; DROP DATABASE")
    assert len(weird.encode()) <= 63
    assert all(c.isascii() and (c.isalnum() or c == "_") for c in weird)


def test_open_missing_store_names_path(tmp_path: Path) -> None:
    for cls in ARM_CLASSES:
        with pytest.raises(base.ArmError, match=str(tmp_path / "absent")):
            cls().open(tmp_path / "absent")
    assert not (tmp_path / "absent").exists()


def test_constructor_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match="ef_search"):
        PgHnswArm(ef_search=0)
    with pytest.raises(ValueError, match="max_scan_tuples"):
        PgHnswIterativeArm(max_scan_tuples=-1)
    with pytest.raises(ValueError, match="rrf_k"):
        PgHybridArm(rrf_k=-1)


# ------------------------------------------------------------------- capabilities
def test_capabilities() -> None:
    expected = {
        "pg-hnsw": ("hnsw-filtered", "none"),
        "pg-hnsw-iterative": ("hnsw-iterative", "none"),
        "pg-btree": ("none", "b-tree+like"),
        "pg-gin": ("none", "gin-tsvector"),
        "pg-hybrid": ("hnsw-filtered", "gin-tsvector"),
    }
    for cls in ARM_CLASSES:
        c = cls.capabilities
        assert cls.family == "postgres"
        assert (c.vector_access, c.text_access) == expected[cls.name]
        assert c.predicate and c.join and c.aggregate and c.transactions


# --------------------------------------------------------------------- rankings
def test_btree_ilike_scoring(tiny_arms) -> None:
    arm = tiny_arms["pg-btree"]
    assert arm.query(q("CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]
    assert arm.query(q("cfg-799 TIMEOUT"), 10).memory_ids == ["M5", "M1", "M3"]
    assert arm.query(q("amber ledger"), 10).memory_ids == ["M2"]
    # '%' and '_' in the text are literal, not wildcards
    assert arm.query(q("%_\\"), 10).memory_ids == []


def test_btree_lowered_like_is_ilike_in_this_database(tiny_arms) -> None:
    # the arm lowers the body once and LIKEs each lowered term against it: the same truth
    # value as ILIKE for every pair, accents, sharp s, Greek and escapes included
    conn = tiny_arms["pg-btree"]._h.conn
    bodies = ["Réunion à l'ÉCOLE", "STRASSE und Straße", "ΣΟΦΙΑ σοφία", "50% off_sale \\ x"]
    terms = ["école", "ÉCOLE", "straße", "STRASSE", "σοφία", "ΣΟΦΊΑ", "50%", "off_", "\\"]
    pairs = [(b, like_pattern(t)) for b in bodies for t in terms]
    got = conn.execute(
        "SELECT b ILIKE p ESCAPE '\\', lower(b) LIKE lower(p) ESCAPE '\\' "
        "FROM unnest(%s::text[], %s::text[]) AS x(b, p)",
        ([b for b, _ in pairs], [p for _, p in pairs]),
    ).fetchall()
    assert [ilike for ilike, _ in got] == [lowered for _, lowered in got]
    assert sum(ilike for ilike, _ in got) >= 8  # the pairs do match, not only disagree on none


def test_gin_ranking(tiny_arms) -> None:
    arm = tiny_arms["pg-gin"]
    assert set(arm.query(q("CFG-799"), 10).memory_ids) == {"M1", "M3", "M5"}
    assert arm.query(q("outage disk"), 10).memory_ids == ["M4"]
    # stemming: "rotating" -> rotat, matching "rotate"
    assert arm.query(q("rotating keys"), 10).memory_ids == ["M6"]
    # M1 and M5 match both terms, M3 only the identifier
    ranked = arm.query(q("CFG-799 timeout"), 10).memory_ids
    assert set(ranked[:2]) == {"M1", "M5"} and ranked[2] == "M3"


def test_gin_rank_normalization_and_tie_break(tiny_arms) -> None:
    # "CFG-799" occurs once in M1, M3 and M5: without length normalisation (the study's 0)
    # their ts_rank_cd ties, and the tie-break decides (newest first: M5, M3, M1); with
    # normalisation 1 the longest body, M5, comes last
    store = tiny_arms["pg-gin"]._store_dir
    assert tiny_arms["pg-gin"].query(q("CFG-799"), 10).memory_ids[-1] == "M5"
    plain = PgGinArm(rank_normalization=0)
    plain.open(store)
    try:
        assert plain.query(q("CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]
    finally:
        plain.close()
    study = PgGinArm(**choice_overrides(PgGinArm.study_choices, "study"))
    study.open(store)
    try:
        assert sorted(study.query(q("CFG-799"), 10).memory_ids) == ["M1", "M3", "M5"]
    finally:
        study.close()
    with pytest.raises(ValueError, match="rank_normalization"):
        PgGinArm(rank_normalization=True)


def test_tsquery_builder_never_raises_on_raw_operators(tiny_arms) -> None:
    conn = tiny_arms["pg-gin"]._conn()
    terms = ["a:*", "!b", "c & d | e", "'f'", "(g", "ADR-297", "<->", "\\", "the", "x" * 3000]
    expr, params = tsquery_sql(terms)
    got = conn.execute(sql.SQL("SELECT ") + expr + sql.SQL("::text"), params).fetchone()[0]
    assert "'adr' & '-297'" in got and "'f'" in got
    expr, params = tsquery_sql(["the"])  # stopword only: empty query, no error, no rows
    n = conn.execute(sql.SQL("SELECT count(*) FROM memories WHERE tsv @@ ") + expr, params)
    assert n.fetchone()[0] == 0


@pytest.mark.parametrize("name", TEXT_ARMS + ["pg-hybrid"])
def test_hyphenated_identifier_alone_and_in_question(tiny_arms, name: str) -> None:
    arm = tiny_arms[name]
    alone = arm.query(q("CFG-799"), 10).memory_ids
    question = arm.query(q("What did we decide about CFG-799 in the end?"), 10).memory_ids
    assert {"M1", "M3", "M5"} <= set(alone)
    assert {"M1", "M3", "M5"} <= set(question)
    if name in TEXT_ARMS:
        assert set(alone) == set(question) == {"M1", "M3", "M5"}
        assert question[0] == "M3"  # the only memory with both "decide" and the id
    # an identifier nobody mentions matches nothing in the text arms
    if name in TEXT_ARMS:
        assert arm.query(q("ADR-297"), 10).memory_ids == []
        assert arm.query(q("SVC-5345"), 10).memory_ids[0] in {"M1", "M4", "M5"}
        assert "M6" not in arm.query(q("SVC-5345"), 10).memory_ids  # SVC-77 is different


@pytest.mark.parametrize("name", ["pg-hnsw", "pg-hnsw-iterative"])
def test_hnsw_exact_on_tiny(tiny_arms, name: str) -> None:
    corpus, vectors = make_tiny()
    arm = tiny_arms[name]
    bodies = dict(zip(corpus.memories["memory_id"], corpus.memories["body"], strict=True))
    for mid, body in bodies.items():
        qv = fake_vector(body)
        sims = vectors.matrix @ qv
        order = [vectors.ids[i] for i in np.argsort(-sims, kind="stable")]
        got = arm.query(base.Query("q", "", qv), 6).memory_ids
        assert got[0] == mid
        assert len(got) == 6 and set(got) == ALL_IDS
        # compare the prefix whose similarities are strictly distinct
        s = np.sort(sims)[::-1]
        n_distinct = next((i for i in range(1, 6) if abs(s[i] - s[i - 1]) < 1e-6), 6)
        assert got[: n_distinct - 1] == order[: n_distinct - 1]


def test_hybrid_rrf_on_tiny(tiny_arms) -> None:
    corpus, _ = make_tiny()
    bodies = dict(zip(corpus.memories["memory_id"], corpus.memories["body"], strict=True))
    arm = tiny_arms["pg-hybrid"]
    # text matches only M4 (GIN rank 1); the vector is M2's (vector rank 1).
    # M4: 1/61 + 1/(60 + vec rank >= 2) > M2: 1/61 (M2 is not in the GIN branch)
    got = arm.query(q("INC-2356 outage", vec_of=bodies["M2"]), 10).memory_ids
    assert got[:2] == ["M4", "M2"]
    assert set(got) == ALL_IDS
    # no text terms: the vector branch alone ranks
    got = arm.query(q("", vec_of=bodies["M6"]), 3).memory_ids
    assert got[0] == "M6"


# --------------------------------------------------------------------- predicates
PREDICATES = [
    (None, ALL_IDS),
    (base.Predicate("session_id", "=", "S3"), {"M5", "M6"}),
    (base.Predicate("created_day", "<=", 15), {"M1", "M2", "M3"}),
    (base.Predicate("fact_id", "=", "F1"), {"M1", "M2", "M5"}),
    (NOT_SUPERSEDED, {"M3", "M4", "M5", "M6"}),
    (base.Predicate("superseded_by", "=", "M5"), {"M1", "M2"}),
    (base.Predicate("session_id", "=", "S404"), set()),
]


@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
@pytest.mark.parametrize(("pred", "allowed"), PREDICATES)
def test_predicates_and_exact_counts(tiny_arms, name: str, pred, allowed: set[str]) -> None:
    arm = tiny_arms[name]
    text = "CFG-799 SVC-5345 timeout amber outage keys"
    res = arm.query(q(text, pred, wants_count=True), 10)
    assert res.count == len(allowed)
    assert set(res.memory_ids) <= allowed
    if name in VECTOR_ARMS:
        assert set(res.memory_ids) == allowed  # every row is a vector candidate
    else:
        text_hits = {"M1", "M2", "M3", "M4", "M5", "M6"}  # every body has one of the terms
        assert set(res.memory_ids) == allowed & text_hits
    no_count = arm.query(q(text, pred), 10)
    assert no_count.count is None and no_count.memory_ids == res.memory_ids


def test_count_without_text_terms(tiny_arms) -> None:
    for name in TEXT_ARMS:
        res = tiny_arms[name].query(q("   ", base.Predicate("fact_id", "=", "F1"), True), 5)
        assert res.memory_ids == [] and res.count == 3


def test_k_bounds(tiny_arms) -> None:
    for arm in tiny_arms.values():
        assert len(arm.query(q("CFG-799 SVC-5345"), 2).memory_ids) <= 2
        assert arm.query(q("CFG-799"), 0).memory_ids == []


# ------------------------------------------------------------------- hostile text
@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
def test_hostile_texts(tiny_arms, name: str) -> None:
    arm = tiny_arms[name]
    for text in HOSTILE_TEXTS:
        for pred in (None, NOT_SUPERSEDED):
            res = arm.query(q(text, pred, wants_count=True), 5)
            assert isinstance(res, base.Result)
            assert len(res.memory_ids) <= 5
            assert all(isinstance(i, str) and i in ALL_IDS for i in res.memory_ids)
            assert res.count == (6 if pred is None else 4)
        json.loads(arm.explain(q(text, NOT_SUPERSEDED)))
    # the database survived every one of them
    assert arm.query(q("x", None, True), 1).count == 6


# ------------------------------------------------------------------ explain/storage
def test_explain_is_json_of_the_statements(tiny_arms) -> None:
    for name, arm in tiny_arms.items():
        pred = base.Predicate("session_id", "=", "S3")
        plans = json.loads(arm.explain(q("CFG-799", pred, wants_count=True)))
        assert [p["Statement"] for p in plans] == ["ranking", "count"]
        assert all("Plan" in p for p in plans), name
        assert "%(pv0)s" in plans[0]["Query Text"]  # bound, never spliced
        assert "CFG" not in plans[0]["Query Text"] and "S3" not in plans[0]["Query Text"]
    iterative = json.loads(tiny_arms["pg-hnsw-iterative"].explain(q("x")))[0]
    assert iterative["Session Settings"]["hnsw.iterative_scan"] == "relaxed_order"
    assert iterative["Session Settings"]["hnsw.max_scan_tuples"] == "20000"
    assert "MATERIALIZED" in iterative["Query Text"]
    note = json.loads(tiny_arms["pg-gin"].explain(q("?!")))
    assert note == [{"Statement": "ranking", "Note": "no statement runs: the text has no terms"}]


def test_storage_uses_pg_accounting(tiny_arms) -> None:
    sizes = {}
    for name, arm in tiny_arms.items():
        st = arm.storage()
        assert st.source == "pg_total_relation_size"
        assert st.total_bytes == sum(st.objects.values()) > 0
        assert {
            "memories",
            "memory_entities",
            "memories_pkey",
            "memories_session_id_idx",
            "memories_created_day_idx",
            "memories_fact_id_idx",
            "memories_superseded_by_idx",
            "memory_entities_entity_idx",
        } <= set(st.objects)
        total = (
            arm._conn()
            .execute(
                "SELECT sum(pg_total_relation_size(oid)) FROM pg_class "
                "WHERE relname IN ('memories', 'memory_entities')"
            )
            .fetchone()[0]
        )
        assert st.total_bytes == total
        sizes[name] = st
    assert "memories_embedding_idx" in sizes["pg-hnsw"].objects
    assert "memories_tsv_idx" in sizes["pg-gin"].objects
    assert {"memories_embedding_idx", "memories_tsv_idx"} <= set(sizes["pg-hybrid"].objects)
    assert "memories_embedding_idx" not in sizes["pg-btree"].objects


# -------------------------------------------------------------------- bulk store
def test_hybrid_explain_shows_gin_and_hnsw(bulk) -> None:
    arms, vectors = bulk
    query = base.Query("q", "what about w75?", vectors.matrix[75])
    plan = json.loads(arms["pg-hybrid"].explain(query))
    assert len(plan) == 1  # ONE statement
    text = json.dumps(plan)
    assert '"Index Name": "memories_tsv_idx"' in text
    assert '"Index Name": "memories_embedding_idx"' in text
    ids = arms["pg-hybrid"].query(query, 10).memory_ids
    assert len(ids) == 10 and "B75" in ids  # in both branches: GIN and nearest vector


def test_hnsw_underfills_filtered_and_iterative_fills(bulk) -> None:
    arms, vectors = bulk
    # query from the day >= 50 cluster, filter to the day <= 49 cluster: the 40 HNSW
    # candidates (ef_search) are all filtered away
    pred = base.Predicate("created_day", "<=", 49)
    query = base.Query("q", "", vectors.matrix[75], pred)
    plain_plan = json.dumps(json.loads(arms["pg-hnsw"].explain(query)))
    assert "memories_embedding_idx" in plain_plan
    plain = arms["pg-hnsw"].query(query, 10).memory_ids
    assert len(plain) < 10  # underfill: the point of this arm
    filled = arms["pg-hnsw-iterative"].query(query, 10).memory_ids
    assert len(filled) == 10
    rows = vectors.get(filled)
    days = [int(m[1:]) % 100 for m in filled]
    assert all(d <= 49 for d in days)
    dist = 1.0 - rows @ vectors.matrix[75]
    assert np.all(np.diff(dist) >= -1e-5)  # re-sorted by distance
    # unfiltered both find the query's own memory first
    assert arms["pg-hnsw"].query(base.Query("q", "", vectors.matrix[75]), 5).memory_ids[0] == "B75"


def test_selective_scope_underfills_hnsw_and_iterative_fills(bulk) -> None:
    """The scope sits where pgvector applies the predicate: after the HNSW index scan."""
    arms, vectors = bulk
    # a query from u-neg's cluster, scoped to u-pos: the ~40 HNSW candidates are u-neg's
    query = base.Query("q", "", vectors.matrix[75], scope="u-pos")
    assert "memories_embedding_idx" in json.dumps(json.loads(arms["pg-hnsw"].explain(query)))
    plain = arms["pg-hnsw"].query(query, 10).memory_ids
    assert len(plain) < 10 and all(int(m[1:]) % 100 <= 49 for m in plain)
    filled = arms["pg-hnsw-iterative"].query(query, 10).memory_ids
    assert len(filled) == 10 and all(int(m[1:]) % 100 <= 49 for m in filled)
    # pg-hybrid's HNSW branch underfills the same way; its GIN branch is exact inside the
    # scope: "w7" is in B7, B107, ..., B2907 (all day 7, u-pos), equal ts_rank_cd, so
    # newest first; the fused top 10 are the GIN branch's first 10 plus what HNSW found
    hybrid = arms["pg-hybrid"].query(base.Query("q", "w7", vectors.matrix[75], scope="u-pos"), 10)
    gin_top = [f"B{i}" for i in range(2907, 2006, -100)]
    assert len(hybrid.memory_ids) == 10
    assert set(hybrid.memory_ids) <= set(gin_top) | set(plain)
    if not plain:  # no HNSW candidate in the scope: the GIN order alone
        assert hybrid.memory_ids == gin_top
    counted = arms["pg-hnsw"].query(
        base.Query("q", "", vectors.matrix[75], wants_count=True, scope="u-pos"), 1
    )
    # days 0..49 of 3,000 memories with day = i % 100, less u-few's i = 0, 300, ..., 2700
    assert counted.count == 1490
    # a small scope: the planner sorts the scope's exact distances instead of the HNSW scan
    few = base.Query("q", "", vectors.matrix[75], scope="u-few")
    assert "memories_embedding_idx" not in json.dumps(json.loads(arms["pg-hnsw"].explain(few)))
    ids = arms["pg-hnsw"].query(few, 10).memory_ids
    assert len(ids) == 10 and all(int(m[1:]) % 150 == 0 for m in ids)


# ---------------------------------------------------------------- reopen/lifecycle
def test_reopen_in_second_instance_shares_server(tiny_arms, root: Path) -> None:
    store = root / "tiny"
    for name in ("pg-gin", "pg-hybrid"):
        first = tiny_arms[name]
        second = type(first)()
        second.open(store)
        try:
            query = q("CFG-799 timeout", NOT_SUPERSEDED, True)
            assert second.query(query, 5) == first.query(query, 5)
            assert second.storage().objects.keys() == first.storage().objects.keys()
        finally:
            second.close()
        second.close()  # idempotent
    # the server is still up for the other arms
    assert tiny_arms["pg-btree"].query(q("CFG-799"), 3).memory_ids == ["M5", "M3", "M1"]


def test_close_stops_server_and_open_restarts_it(tmp_path: Path) -> None:
    corpus, vectors = make_tiny()
    store = tmp_path / "s" / "pg-gin"
    arm = PgGinArm()
    arm.build(corpus, vectors, store)
    expected = arm.query(q("CFG-799 timeout"), 5)
    pid = pg.postmaster_pid(store / "pgdata")
    assert pg.process_alive(pid)
    arm.close()
    arm.close()
    assert wait_dead(pid)
    with pytest.raises(base.ArmError, match="not open"):
        arm.query(q("x"), 1)

    again = PgGinArm()
    again.open(store)
    pid2 = pg.postmaster_pid(store / "pgdata")
    assert pg.process_alive(pid2) and pid2 != pid
    assert again.query(q("CFG-799 timeout"), 5) == expected
    again.close()
    assert wait_dead(pid2)

    # a store of another arm is not there: clear error naming the directory
    with pytest.raises(base.ArmError, match="pg-btree"):
        PgBtreeArm().open(store)

    # reopen from a fresh process (as the pipeline does after build)
    code = (
        "import json, sys\n"
        "from agentmem.arms.postgres import PgGinArm\n"
        "from agentmem.arms.base import Query\n"
        "import numpy as np\n"
        "a = PgGinArm(); a.open(sys.argv[1])\n"
        "try:\n"
        "    r = a.query(Query('q', 'CFG-799 timeout', np.zeros(384, 'float32')), 5)\n"
        "    print(json.dumps(r.memory_ids))\n"
        "finally:\n"
        "    a.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != pg.ENV_DSN}
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, str(store)],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr[-4000:]
        assert json.loads(out.stdout.strip().splitlines()[-1]) == expected.memory_ids
        survivors = servers_left(tmp_path)
        assert survivors == [], "the child process left its server running"
    finally:
        for p in servers_under(tmp_path):  # never leave a server behind, even on failure
            psutil.Process(p).kill()


def test_restart_after_postmaster_sigkill_in_same_process(tmp_path: Path) -> None:
    corpus, vectors = make_tiny()
    store = tmp_path / "crash"
    first = PgBtreeArm()
    first.build(corpus, vectors, store)
    pid = pg.postmaster_pid(store / "pgdata")
    os.kill(pid, signal.SIGKILL)
    assert wait_dead(pid)
    # pgserver's cached server object is dead; a second open must restart the cluster
    second = PgBtreeArm()
    second.open(store)
    try:
        new_pid = pg.postmaster_pid(store / "pgdata")
        assert new_pid != pid and pg.process_alive(new_pid)
        assert second.query(q("CFG-799"), 3).memory_ids == ["M5", "M3", "M1"]
    finally:
        first.close()  # its connection died with the old server; must not raise
        second.close()
    assert wait_dead(new_pid)


# ------------------------------------------------------------------ external DSN mode
def test_external_dsn_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = pg.EmbeddedServer.acquire(tmp_path / "ext-pgdata", create=True)
    corpus, vectors = make_tiny()
    store = tmp_path / "stores" / "xs" / "pg-hybrid"
    try:
        monkeypatch.setenv(pg.ENV_DSN, server.uri())
        arm = PgHybridArm()
        arm.build(corpus, vectors, store)
        assert not (store / "pgdata").exists()  # no embedded server was started
        db = pg.database_name("pg-hybrid", store)
        assert db.startswith("agentmem_pg_hybrid_xs_")
        got = arm.query(q("CFG-799", NOT_SUPERSEDED, True), 5)
        arm.close()
        reopened = PgHybridArm()
        reopened.open(store)
        assert reopened.query(q("CFG-799", NOT_SUPERSEDED, True), 5) == got
        reopened.close()
        assert pg.process_alive(server.pid)  # closing an external store leaves the server

        # built externally, opened embedded: a clear error, not a new empty server
        monkeypatch.delenv(pg.ENV_DSN)
        with pytest.raises(base.ArmError, match="external mode"):
            PgHybridArm().open(store)
        monkeypatch.setenv(pg.ENV_DSN, server.uri())
        pg.drop_store(store, "pg-hybrid")
        with psycopg_connect(server.uri()) as conn:
            assert (
                conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone()
                is None
            )

        # a bad external DSN: the message names it, password redacted
        monkeypatch.setenv(pg.ENV_DSN, f"postgresql://bob:s3cret@/postgres?host={tmp_path}/no")
        with pytest.raises(base.ArmError) as err:
            PgGinArm().build(corpus, vectors, tmp_path / "other")
        assert "s3cret" not in str(err.value) and "bob:***@" in str(err.value)
    finally:
        pid = server.pid
        server.release()
    assert wait_dead(pid)


def psycopg_connect(dsn: str):
    """A plain autocommit connection (through the layer under test)."""
    return pg.connect(dsn)


def test_two_processes_share_one_store_and_the_last_one_stops_it(tmp_path: Path) -> None:
    """Untimed jobs (budget sweep, anomaly probe) may open one store at the same time.

    Process A opens the store and keeps querying; process B opens it while A runs, queries
    and closes (its close must not stop the server under A); A then queries again and
    closes; afterwards no postmaster is left.
    """
    corpus, vectors = make_tiny()
    store = tmp_path / "s" / "pg-gin"
    arm = PgGinArm()
    arm.build(corpus, vectors, store)
    expected = arm.query(q("CFG-799 timeout"), 5).memory_ids
    arm.close()
    code = (
        "import json, sys, time\n"
        "from pathlib import Path\n"
        "from agentmem.arms.postgres import PgGinArm\n"
        "from agentmem.arms.base import Query\n"
        "import numpy as np\n"
        "store, role, flag = sys.argv[1], sys.argv[2], Path(sys.argv[3])\n"
        "query = Query('q', 'CFG-799 timeout', np.zeros(384, 'float32'))\n"
        "a = PgGinArm(); a.open(store)\n"
        "try:\n"
        "    out = [a.query(query, 5).memory_ids]\n"
        "    if role == 'A':\n"
        "        flag.with_suffix('.a-open').touch()\n"
        "        deadline = time.monotonic() + 90\n"
        "        while not flag.exists() and time.monotonic() < deadline:\n"
        "            time.sleep(0.05)\n"
        "        out.append(a.query(query, 5).memory_ids)\n"
        "    else:\n"
        "        flag.touch()  # B queried; it closes now, A goes on\n"
        "    print(json.dumps(out))\n"
        "finally:\n"
        "    a.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != pg.ENV_DSN}
    flag = tmp_path / "b-done"

    def spawn(role: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", code, str(store), role, str(flag)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )

    a = spawn("A")
    try:
        for _ in range(1800):  # wait until A has the store open
            if flag.with_suffix(".a-open").exists() or a.poll() is not None:
                break
            time.sleep(0.05)
        b = spawn("B")
        out_b, err_b = b.communicate(timeout=120)
        out_a, err_a = a.communicate(timeout=120)
        assert b.returncode == 0, err_b[-4000:]
        assert a.returncode == 0, err_a[-4000:]
        assert json.loads(out_b.strip().splitlines()[-1]) == [expected]
        # A's second query ran after B closed: the server was still up for A
        assert json.loads(out_a.strip().splitlines()[-1]) == [expected, expected]
        survivors = servers_left(tmp_path)
        assert survivors == [], "the last process to close left its server running"
    finally:
        for proc in (a,):
            if proc.poll() is None:
                proc.kill()
        for p in servers_under(tmp_path):
            psutil.Process(p).kill()


# ----------------------------------------------------------------- remember / fetch
TINY_IDS = ["M1", "M2", "M3", "M4", "M5", "M6"]


@pytest.fixture(scope="module")
def replayed(root: Path):
    """All five arms built on the tiny corpus without M5, then M5 remembered (one server).

    M5 arrives as a correction (``supersedes = [M1, M2]``). Later tests remember more
    memories here, none in session S3 or fact F1.
    """
    corpus, vectors = make_tiny()
    replay = base.with_supersedes(corpus.memories)
    assert replay.filter(pl.col("memory_id") == "M5")["supersedes"].to_list() == [["M1", "M2"]]
    first = base.Corpus(replay.filter(pl.col("memory_id") != "M5").drop("supersedes"))
    store = root / "replayed"
    arms = {}
    pid = None
    try:
        for cls in ARM_CLASSES:
            arm = cls()
            arm.build(first, vectors, store)
            assert arm.fetch(["M1"])["superseded_by"].to_list() == [None]
            arm.remember(replay.filter(pl.col("memory_id") == "M5"), vectors)
            arms[cls.name] = arm
        pid = pg.postmaster_pid(store / pg.PGDATA_DIRNAME)
        yield arms, store
    finally:
        for arm in arms.values():
            arm.close()
    assert wait_dead(pid)


def remember(arm, rows: list[dict]) -> None:
    """Remember ``rows``; each memory's vector is the fake vector of its body."""
    vecs = base.Embeddings(
        [r["memory_id"] for r in rows], np.stack([fake_vector(r["body"]) for r in rows])
    )
    arm.remember(pl.DataFrame(rows), vecs)


def table_counts(store: Path, name: str) -> dict[str, int]:
    """Rows in ``memories`` and ``memory_entities``, read through a second connection."""
    with pg.connect_store(store, name, create=False) as h:
        return {
            t: h.conn.execute(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(t))
            ).fetchone()[0]
            for t in ("memories", "memory_entities")
        }


@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
def test_correction_replayed_by_remember_equals_build(tiny_arms, replayed, name: str) -> None:
    """Remembering M5 after a build without it gives the rows and answers of the full build."""
    arm, full = replayed[0][name], tiny_arms[name]
    got = arm.fetch(TINY_IDS)
    assert got.equals(full.fetch(TINY_IDS))
    assert got["superseded_by"].to_list() == ["M5", "M5", None, None, None, None]
    # predicates that hold only tiny memories, and no ties in cosine distance among them
    # (rows tied on distance come in heap order, which the updates of M1 and M2 change)
    for text, pred in [
        ("CFG-799", base.Predicate("session_id", "=", "S3")),
        ("How long is the timeout set by CFG-799?", base.Predicate("fact_id", "=", "F1")),
        ("timeout SVC-5345", base.Predicate("fact_id", "=", "F1")),
    ]:
        assert arm.query(q(text, pred, True), 10) == full.query(q(text, pred, True), 10), text
    current = arm.query(q("CFG-799", NOT_SUPERSEDED), 10).memory_ids
    assert "M5" in current and not {"M1", "M2"} & set(current)


@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
def test_remember_then_fetch_every_column(replayed, name: str) -> None:
    arms, store = replayed
    arm = arms[name]
    before = table_counts(store, name)
    row = {
        "memory_id": "P1",
        "session_id": "S9",
        "turn_no": 4,
        "seq": 77,
        "kind": "procedural",
        "body": "RUN-481 now says: drain traffic, then rotate keys on SVC-77.",
        "fact_id": "F3",
        "created_day": 400,
        "source": "tool_result",
        "confidence": 0.25,
        "tokens": 15,
        "entity_ids": ["RUN-481", "SVC-77", "RUN-481"],
        "scope_id": "u9",
        "supersedes": ["M6"],
    }
    remember(arm, [row])
    got = arm.fetch(["P1", "nope", "M6", "P1"])
    assert got.schema == pl.Schema(base.MEMORY_SCHEMA)
    assert got.to_dicts() == [
        {
            **{k: v for k, v in row.items() if k != "supersedes"},
            "superseded_by": None,
            "form": None,  # not stored; entity_ids is the array as given, as build keeps it
        },
        {
            "memory_id": "M6",
            "session_id": "S3",
            "turn_no": 1,
            "seq": 5,
            "kind": "procedural",
            "body": "RUN-481: to rotate keys on SVC-77, drain traffic first.",
            "fact_id": "F3",
            "created_day": 320,
            "source": "user_message",
            "confidence": 0.9,
            "superseded_by": "P1",
            "tokens": 9,
            "entity_ids": ["RUN-481", "SVC-77"],
            "form": None,
            "scope_id": None,  # the tiny corpus has no scopes
        },
    ]
    # committed: a second connection counts one memory and two (de-duplicated) entity rows
    after = table_counts(store, name)
    assert after == {
        "memories": before["memories"] + 1,
        "memory_entities": before["memory_entities"] + 2,
    }
    # the next query sees it through the arm's index; M6 is no longer current
    res = arm.query(q(row["body"], base.Predicate("fact_id", "=", "F3"), True), 5)
    assert res.count == 2 and res.memory_ids[0] == "P1"
    current = arm.query(q(row["body"], NOT_SUPERSEDED), 10).memory_ids
    assert "P1" in current and "M6" not in current
    mine = base.Query("qs", row["body"], fake_vector(row["body"]), wants_count=True, scope="u9")
    assert arm.query(mine, 5) == base.Result(["P1"], 1)  # the remembered scope filters at once
    assert arm.fetch(["M4", "zz", "M1", "M4"])["memory_id"].to_list() == ["M4", "M1"]
    assert arm.fetch([]).schema == pl.Schema(base.MEMORY_SCHEMA)
    with pytest.raises(ValueError, match="one string"):
        arm.fetch("M1")


@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
def test_failed_batch_leaves_nothing(replayed, name: str) -> None:
    arms, store = replayed
    arm = arms[name]
    before = table_counts(store, name)
    ok = {"memory_id": "P2", "body": "fine row", "created_day": 401, "entity_ids": ["E1"]}
    bad_batches = [
        ("'nope'.*not stored", [ok, {**ok, "memory_id": "P3", "supersedes": ["M4", "nope"]}]),
        ("'M3' is already stored", [ok, {**ok, "memory_id": "M3"}]),
        ("'P3'.*'body'.*NUL", [ok, {**ok, "memory_id": "P3", "body": "a\x00b"}]),
        ("'P3'.*'session_id'.*NUL", [ok, {**ok, "memory_id": "P3", "session_id": "S\x00"}]),
        ("'P3'.*'entity_ids'.*NUL", [ok, {**ok, "memory_id": "P3", "entity_ids": ["E\x00"]}]),
        ("'P3'.*'supersedes'.*NUL", [ok, {**ok, "memory_id": "P3", "supersedes": ["M\x00"]}]),
    ]
    for match, rows in bad_batches:
        with pytest.raises(base.ArmError, match=f"{name}: .*{match}"):
            remember(arm, rows)
    assert table_counts(store, name) == before
    assert arm.fetch(["P2", "P3"]).height == 0
    assert arm.fetch(["M3", "M4"])["superseded_by"].to_list() == [None, None]
    assert arm.fetch(["M3"])["body"].to_list() == [
        "Someone asked about CFG-799 in chat; nothing decided."
    ]
    remember(arm, [ok])  # the connection is still usable: no transaction left open
    assert table_counts(store, name)["memories"] == before["memories"] + 1
    assert arm.fetch(["P2"])["entity_ids"].to_list() == [["E1"]]


@pytest.mark.parametrize("name", ["pg-btree", "pg-hnsw"])
def test_large_batch_with_mixed_nulls_in_chunks(replayed, name: str) -> None:
    """1,201 rows (three INSERT statements of at most 500) with nulls in every other row."""
    arms, store = replayed
    arm = arms[name]
    before = table_counts(store, name)
    n = 1201
    rows = pl.DataFrame(
        {
            "memory_id": [f"L{i}" for i in range(n)],
            "body": [f"bulk remembered {i}" for i in range(n)],
            "created_day": [500 + i for i in range(n)],
            "turn_no": [i if i % 2 else None for i in range(n)],
            "session_id": [None if i % 2 else f"SL{i}" for i in range(n)],
            "confidence": [None if i % 3 else 0.5 for i in range(n)],
            "entity_ids": [[f"E{i % 3}"] if i % 2 else [] for i in range(n)],
            "supersedes": [["L0"] if i == n - 1 else None for i in range(n)],
        }
    )
    rng = np.random.default_rng(3)
    mat = rng.standard_normal((n, 384)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    arm.remember(rows, base.Embeddings(rows["memory_id"].to_list(), mat))
    assert table_counts(store, name) == {
        "memories": before["memories"] + n,
        "memory_entities": before["memory_entities"] + n // 2,
    }
    got = arm.fetch(["L0", "L1", "L1200"]).select(
        "memory_id", "turn_no", "session_id", "confidence", "entity_ids", "superseded_by"
    )
    assert got.rows() == [
        ("L0", None, "SL0", 0.5, [], "L1200"),
        ("L1", 1, None, 1.0, ["E1"], None),
        ("L1200", None, "SL1200", 0.5, [], None),
    ]
    if name == "pg-hnsw":  # the index holds the new vectors: a row's own vector finds it
        assert arm.query(base.Query("v", "", mat[777]), 1).memory_ids == ["L777"]


def test_remember_is_durable_on_the_servers_terms(replayed) -> None:
    """Commits wait for the WAL flush: the embedded server runs with fsync on."""
    arm = replayed[0]["pg-gin"]
    conn = arm._h.conn
    settings = {
        k: conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(k))).fetchone()[0]
        for k in ("fsync", "synchronous_commit", "wal_sync_method")
    }
    assert settings["fsync"] == "on" and settings["synchronous_commit"] == "on", settings
    assert conn.info.transaction_status.name == "IDLE"  # no transaction left open


@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
def test_raw_ids_give_the_query_answer(tiny_arms, name: str) -> None:
    arm = tiny_arms[name]
    for text, pred, count in [
        ("CFG-799", None, False),
        ("CFG-799 timeout", NOT_SUPERSEDED, True),
        ("?!", None, True),
        ("", base.Predicate("fact_id", "=", "F1"), True),
    ]:
        for k in (0, 1, 3, 10):
            qq = q(text, pred, count)
            assert arm.raw_ids(arm.raw_query_call(qq, k)(), k) == arm.query(qq, k).memory_ids


def test_remember_and_fetch_need_an_open_store() -> None:
    arm = PgGinArm()
    with pytest.raises(base.ArmError, match="not open"):
        remember(arm, [{"memory_id": "x", "body": "x", "created_day": 1}])
    with pytest.raises(base.ArmError, match="not open"):
        arm.fetch(["M1"])


def test_two_processes_see_each_others_remembers(replayed) -> None:
    """A second process on the same store remembers; each side then finds the other's memory.

    The child opens pg-hybrid, remembers C1 (superseding M4) and signals; the parent finds
    C1 by text and sees M4 superseded, remembers P9 and signals back; the child finds P9.
    """
    arms, store = replayed
    arm = arms["pg-hybrid"]
    code = (
        "import json, sys, time\n"
        "from pathlib import Path\n"
        "import numpy as np, polars as pl\n"
        "from agentmem.arms.postgres import PgHybridArm\n"
        "from agentmem.arms.base import Embeddings, Query\n"
        "store, flags = sys.argv[1], Path(sys.argv[2])\n"
        "vec = np.zeros(384, 'float32'); vec[3] = 1.0\n"
        "a = PgHybridArm(); a.open(store)\n"
        "try:\n"
        "    a.remember(pl.DataFrame({'memory_id': ['C1'], 'body': ['ZXC-808 from the child'],\n"
        "        'created_day': [450], 'supersedes': [['M4']]}), Embeddings(['C1'], vec[None]))\n"
        "    (flags / 'child').touch()\n"
        "    deadline = time.monotonic() + 90\n"
        "    while not (flags / 'parent').exists() and time.monotonic() < deadline:\n"
        "        time.sleep(0.05)\n"
        "    got = a.fetch(['P9'])['body'].to_list()\n"
        "    ids = a.query(Query('q', 'VBN-909', vec), 3).memory_ids\n"
        "    print(json.dumps([got, ids[:1]]))\n"
        "finally:\n"
        "    a.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != pg.ENV_DSN}
    flags = store / "flags"
    flags.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(store), str(flags)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    try:
        for _ in range(1800):
            if (flags / "child").exists() or child.poll() is not None:
                break
            time.sleep(0.05)
        assert (flags / "child").exists(), child.communicate(timeout=30)[1][-4000:]
        assert arm.query(q("ZXC-808"), 3).memory_ids[0] == "C1"
        assert arm.fetch(["M4"])["superseded_by"].to_list() == ["C1"]
        remember(arm, [{"memory_id": "P9", "body": "VBN-909 from the parent", "created_day": 460}])
        (flags / "parent").touch()
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err[-4000:]
        assert json.loads(out.strip().splitlines()[-1]) == [["VBN-909 from the parent"], ["P9"]]
    finally:
        if child.poll() is None:
            child.kill()


# ------------------------------------------------------------------------------ scope
#: tiny with scopes: M1-M3 are user u1's memories, M4-M5 user u2's, M6 nobody's
SCOPE_OF = {"M1": "u1", "M2": "u1", "M3": "u1", "M4": "u2", "M5": "u2", "M6": None}
SCOPE_TEXT = "CFG-799 SVC-5345 timeout amber outage keys"  # every body holds one term


def scoped(
    text: str, scope: str, pred: base.Predicate | None = None, count: bool = False
) -> base.Query:
    """A query in ``scope`` whose embedding is the fake vector of ``text``."""
    return base.Query("qs", text, fake_vector(text), pred, count, scope=scope)


@pytest.fixture(scope="module")
def scoped_arms(root: Path):
    """All five arms on the tiny corpus with the scopes of ``SCOPE_OF`` (one server)."""
    corpus, vectors = make_tiny()
    mem = corpus.memories.with_columns(
        scope_id=pl.col("memory_id").replace_strict(SCOPE_OF, return_dtype=pl.String)
    )
    store = root / "scoped"
    arms = {}
    pid = None
    try:
        for cls in ARM_CLASSES:
            arms[cls.name] = cls()
            arms[cls.name].build(base.Corpus(mem), vectors, store)
        pid = pg.postmaster_pid(store / pg.PGDATA_DIRNAME)
        yield arms
    finally:
        for arm in arms.values():
            arm.close()
    assert wait_dead(pid)


def test_predicate_sql_translates_a_conjunction(tiny_arms) -> None:
    from agentmem.arms.postgres import predicate_sql

    conn = tiny_arms["pg-btree"]._conn()
    both = (base.Predicate("scope_id", "=", "u1"), base.Predicate("created_day", "<=", 12))
    cond, params = predicate_sql(both)
    assert cond.as_string(conn) == '("scope_id" = %(pv0)s AND "created_day" <= %(pv1)s)'
    assert params == {"pv0": "u1", "pv1": 12}
    cond, params = predicate_sql(base.Predicate("scope_id", "=", "u1\x00"))
    assert (cond.as_string(conn), params) == ("FALSE", {})  # no stored text holds NUL
    cond, params = predicate_sql(base.Predicate("scope_id", "=", "u\ud800"))
    assert (cond.as_string(conn), params) == ("FALSE", {})  # nor a lone surrogate
    assert predicate_sql(None)[0].as_string(conn) == predicate_sql(())[0].as_string(conn)
    assert predicate_sql(())[0].as_string(conn) == "TRUE"


def test_statements_are_rendered_once_per_shape_and_bind_every_value() -> None:
    from agentmem.arms.postgres import PgBtreeArm, PgGinArm
    from agentmem.sql.postgres.queries import predicate_parts

    gin = PgGinArm()
    first = base.Query(
        "a", "CFG-799 decide", fake_vector("a"), base.Predicate("created_day", "<=", 3)
    )
    other = base.Query(
        "b", "SVC-5345 later", fake_vector("b"), base.Predicate("created_day", "<=", 9)
    )
    (s1, p1), (s2, p2) = gin._ranking(first, 5), gin._ranking(other, 7)
    assert s1 is s2  # same shape (two terms, one <= filter): one rendered statement
    assert (p1["t0"], p1["t1"], p1["pv0"], p1["k"]) == ("cfg-799", "decide", 3, 5)
    assert (p2["t0"], p2["t1"], p2["pv0"], p2["k"]) == ("svc-5345", "later", 9, 7)
    scoped = base.Query("c", "CFG-799 decide", fake_vector("c"), scope="u1")
    assert gin._ranking(scoped, 5)[0] is not s1  # another shape, another statement
    assert predicate_parts(base.Predicate("scope_id", "=", "u\x00")) == ((("", "false"),), {})
    btree, _ = PgBtreeArm()._ranking(first, 5)
    btree_sql = btree.as_string(None)
    assert btree_sql.count("LIKE lower(%(t") == 2 and btree_sql.count("lower(body)") == 1


@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
@pytest.mark.parametrize(
    ("scope", "pred", "allowed"),
    [
        ("u1", None, {"M1", "M2", "M3"}),
        ("u2", None, {"M4", "M5"}),
        ("u1", NOT_SUPERSEDED, {"M3"}),  # M1, M2 are superseded by M5
        ("u2", base.Predicate("session_id", "=", "S3"), {"M5"}),
    ],
)
def test_scope_in_every_statement(scoped_arms, name: str, scope, pred, allowed) -> None:
    res = scoped_arms[name].query(scoped(SCOPE_TEXT, scope, pred, True), 10)
    assert set(res.memory_ids) == allowed and res.count == len(allowed)


def test_scope_hand_computed(scoped_arms) -> None:
    assert scoped_arms["pg-btree"].query(scoped("CFG-799", "u1"), 10).memory_ids == ["M3", "M1"]
    assert scoped_arms["pg-btree"].query(scoped("CFG-799", "u2"), 10).memory_ids == ["M5"]
    assert scoped_arms["pg-gin"].query(scoped("outage disk", "u1"), 10).memory_ids == []
    assert scoped_arms["pg-hnsw"].query(scoped("", "u2", count=True), 10).count == 2
    unscoped = scoped_arms["pg-hnsw"].query(q("RUN-481", base.Predicate("scope_id", "is_null")), 10)
    assert unscoped.memory_ids == ["M6"]  # outside every scope, reachable by its predicate


@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
def test_hostile_scopes_match_nothing(scoped_arms, name: str) -> None:
    arm = scoped_arms[name]
    for hostile in ("u1' OR '1'='1", "u1\x00", "%", *[t for t in HOSTILE_TEXTS if t][:4]):
        res = arm.query(scoped(SCOPE_TEXT, hostile, count=True), 10)
        assert res == base.Result(memory_ids=[], count=0), hostile
        json.loads(arm.explain(scoped(SCOPE_TEXT, hostile, NOT_SUPERSEDED, True)))
    assert arm.query(q("x", None, True), 1).count == 6  # the database survived


@pytest.mark.parametrize("name", [c.name for c in ARM_CLASSES])
def test_scope_bound_in_every_branch_and_hooks(scoped_arms, name: str) -> None:
    arm = scoped_arms[name]
    query = scoped("CFG-799", "u1", NOT_SUPERSEDED, True)
    plans = json.loads(arm.explain(query))
    branches = 2 if name == "pg-hybrid" else 1  # GIN and HNSW branches, before fusion
    assert plans[0]["Query Text"].count('"scope_id" = %(pv0)s') == branches
    assert plans[1]["Query Text"].count('"scope_id" = %(pv0)s') == 1  # the count
    assert "u1" not in plans[0]["Query Text"]
    for k in (0, 1, 10):
        assert arm.raw_ids(arm.raw_query_call(query, k)(), k) == arm.query(query, k).memory_ids


def test_store_without_scope_column_is_refused(tmp_path: Path) -> None:
    corpus, vectors = make_tiny()
    arm = PgBtreeArm()
    arm.build(corpus, vectors, tmp_path)
    arm._conn().execute("ALTER TABLE memories DROP COLUMN scope_id")
    arm.close()
    again = PgBtreeArm()
    with pytest.raises(base.ArmError, match=r"lacks memories columns \['scope_id'\]"):
        again.open(tmp_path)
    again.close()
    assert wait_dead(pg.postmaster_pid(tmp_path / pg.PGDATA_DIRNAME))
