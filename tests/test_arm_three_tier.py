"""Tests for the three-tier arm (L1 SQLite working memory, L2 summaries, L3 pgvector).

Real engines only: apsw SQLite files and embedded PostgreSQL 18 + pgvector servers.

Hand-computed expectations on the ``tiny`` corpus (tests/support/tiny.py) with
``l1_max_tokens=40`` and the default ``compact_fraction=0.5`` (compact down to 20 tokens):

- o200k tokens of the bodies M1..M6: 17, 11, 12, 17, 20, 17.
- M1, M2, M3 -> L1 holds 17, 28, 40 tokens (40 is not past the cap: no compaction).
- M4 -> 57 > 40: evict oldest until <= 20: M1 (57-17=40), M2 (29), M3 (17); all of session
  S1, so ONE node (S1, epoch 0) covering M1, M2, M3; L1 = {M4}, 17 tokens.
- M5 -> 37. M6 -> 54 > 40: evict M4 (37), M5 (17); sessions S2 and S3, so TWO nodes
  (S2, 0) = [M4] and (S3, 0) = [M5]; L1 = {M6}, 17 tokens.
- Final: L1 = {M6}; L2 = 3 nodes covering 5 memories; L3 = {M1..M5}.
- Predicates: session S3 = {M5 (L3), M6 (L1)}; superseded_by IS NULL = {M3, M4, M5, M6};
  created_day <= 15 = {M1, M2, M3}; fact F1 = {M1, M2, M5}.
- The fake vector of "CFG-799" has a positive cosine only with bodies containing the word
  "CFG-799" (M1, M3, M5); with summary_tokens=200 every sentence fits into its summary.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
from pathlib import Path

import apsw
import numpy as np
import polars as pl
import pytest
from support.hostile import HOSTILE_TEXTS
from support.postgres import servers_left, wait_dead
from support.tiny import fake_query as q, fake_vector, make_tiny

from agentmem import pg
from agentmem.arms import base
from agentmem.arms.three_tier import (
    DB_NAME,
    AssembledContext,
    ThreeTierArm,
    rrf_fuse,
)
from agentmem.summarise import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    ExtractiveSummariser,
    OpenAICompatibleSummariser,
    Summariser,
    SummariserError,
    make_summariser,
    split_sentences,
    truncate_to_tokens,
)
from agentmem.tokens import count_tokens

ALL_IDS = {"M1", "M2", "M3", "M4", "M5", "M6"}
TINY_TOKENS = [17, 11, 12, 17, 20, 17]
CAP = 40


def tiny_rows() -> list[tuple[dict, np.ndarray]]:
    """The tiny memories as (row dict, vector) in seq order."""
    corpus, vectors = make_tiny()
    rows = list(corpus.memories.sort("seq").iter_rows(named=True))
    return [(r, vectors.get([r["memory_id"]])[0]) for r in rows]


def l2_nodes(arm: ThreeTierArm) -> list[tuple[str, int, list[str]]]:
    """(session, epoch, covered ids in order) of every L2 node, in node order."""
    db = arm._sqlite()
    out = []
    for node_id, sid, epoch in db.execute(
        "SELECT node_id, session_id, epoch FROM l2_nodes ORDER BY node_id"
    ):
        ids = [
            r[0]
            for r in db.execute(
                "SELECT memory_id FROM l2_covers WHERE node_id = ? ORDER BY ord", (node_id,)
            )
        ]
        out.append((sid, epoch, ids))
    return out


def l1_ids(arm: ThreeTierArm) -> list[str]:
    return [r[0] for r in arm._sqlite().execute("SELECT memory_id FROM l1_turns ORDER BY id")]


def l3_ids(arm: ThreeTierArm) -> list[str]:
    rows = arm._pg().execute("SELECT memory_id FROM l3_memories ORDER BY memory_id").fetchall()
    return [r[0] for r in rows]


# ------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory):
    """Module temp root in embedded mode; at the end no postgres server may run under it."""
    old = os.environ.pop(pg.ENV_DSN, None)
    path = tmp_path_factory.mktemp("threetier")
    try:
        yield path
    finally:
        if old is not None:
            os.environ[pg.ENV_DSN] = old
    survivors = servers_left(path)
    assert survivors == [], f"postgres servers still running under {path}: {survivors}"


@pytest.fixture(scope="module")
def built(root: Path):
    """The tiny corpus built with a 40-token L1 (compaction happens twice)."""
    corpus, vectors = make_tiny()
    arm = ThreeTierArm(l1_max_tokens=CAP, summary_tokens=200)
    stats = arm.build(corpus, vectors, root / "tiny")
    assert stats.ingest_ms > 0 and stats.index_ms > 0
    pid = pg.postmaster_pid(root / "tiny" / pg.PGDATA_DIRNAME)
    assert pg.process_alive(pid)
    yield arm
    arm.close()
    assert wait_dead(pid), f"embedded postmaster {pid} survived close()"


@pytest.fixture(scope="module")
def turns(root: Path):
    """An empty store for turn-by-turn tests (each test calls ``reset()`` first)."""
    arm = ThreeTierArm(l1_max_tokens=CAP, summary_tokens=200)
    arm.create(root / "turns")
    pid = pg.postmaster_pid(root / "turns" / pg.PGDATA_DIRNAME)
    yield arm
    arm.close()
    assert wait_dead(pid)


# ---------------------------------------------------------------- tiers after build
def test_identity_and_capabilities() -> None:
    cap = ThreeTierArm.capabilities
    assert (ThreeTierArm.name, ThreeTierArm.family) == ("three-tier", "tiered")
    assert cap.predicate and cap.aggregate and cap.transactions and not cap.join
    assert (cap.vector_access, cap.text_access) == ("hnsw-filtered", "fts5-bm25")


def test_token_counts_behind_the_expectations() -> None:
    corpus, _ = make_tiny()
    assert count_tokens(corpus.memories["body"].to_list()) == TINY_TOKENS


def test_tiers_really_populated(built: ThreeTierArm) -> None:
    stats = built.tier_stats()
    assert stats["l1_turns"] == 1 and stats["l1_tokens"] == 17 <= CAP
    assert stats["l2_nodes"] == 3 and stats["l2_covered"] == 5
    assert stats["l3_rows"] == 5
    assert 0 < stats["l2_summary_tokens"] <= 3 * 200
    assert l1_ids(built) == ["M6"]
    assert l3_ids(built) == ["M1", "M2", "M3", "M4", "M5"]
    assert l2_nodes(built) == [
        ("S1", 0, ["M1", "M2", "M3"]),
        ("S2", 0, ["M4"]),
        ("S3", 0, ["M5"]),
    ]
    # provenance carries the metadata predicates need, and the summary quotes its sources
    db = built._sqlite()
    rows = db.execute(
        "SELECT c.memory_id, c.session_id, c.created_day, c.fact_id, c.superseded_by, "
        "c.excerpt, n.summary FROM l2_covers c JOIN l2_nodes n USING (node_id) "
        "WHERE c.memory_id = 'M1'"
    ).fetchall()
    (mid, sid, day, fact, sup, excerpt, summary) = rows[0]
    assert (mid, sid, day, fact, sup) == ("M1", "S1", 10, "F1", "M5")
    assert excerpt == "CFG-799 sets the timeout of SVC-5345 to 30s." and excerpt in summary
    # L3's HNSW index and predicate indexes exist
    idx = {
        r[0]
        for r in built._pg().execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'l3_memories'"
        )
    }
    assert {"l3_embedding_idx", "l3_session_id_idx", "l3_superseded_by_idx"} <= idx
    typ = (
        built._pg()
        .execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'l3_memories'::regclass AND attname = 'embedding'"
        )
        .fetchone()
    )
    assert typ == ("vector(384)",)


# ------------------------------------------------------------------------ turn by turn
def test_compaction_triggered_at_threshold(turns: ThreeTierArm) -> None:
    turns.reset()
    events = [turns.ingest_turn(row, vec) for row, vec in tiny_rows()]
    assert [e.tokens for e in events] == TINY_TOKENS
    assert [e.l1_tokens for e in events] == [17, 28, 40, 17, 37, 17]
    assert [e.compacted for e in events] == [False, False, False, True, False, True]
    assert all(e.l1_tokens <= CAP for e in events)
    assert events[3].moved_to_l3 == ["M1", "M2", "M3"]
    (c,) = events[3].compactions
    assert (c.session_id, c.epoch, c.memory_ids, c.source_tokens) == (
        "S1",
        0,
        ("M1", "M2", "M3"),
        40,
    )
    assert 0 < c.summary_tokens <= 200
    assert events[5].moved_to_l3 == ["M4", "M5"]
    assert [(x.session_id, x.epoch, x.memory_ids) for x in events[5].compactions] == [
        ("S2", 0, ("M4",)),
        ("S3", 0, ("M5",)),
    ]
    for e in events:
        assert set(e.latency_ms) == {"L1", "L2", "L3"}
        assert e.latency_ms["L1"] > 0 and e.latency_ms["L3"] > 0  # the insert, the L3 lookup
        assert all(v < 60_000 for v in e.latency_ms.values())
        if e.compacted:
            assert e.latency_ms["L2"] > 0
        else:
            assert e.latency_ms["L2"] == 0  # L3 still pays the duplicate-id lookup
    assert events[3].latency_ms["L3"] > 0 and events[3].latency_ms["L2"] > 0
    # replaying through ingest_turn gives the same tiers as build()
    assert l1_ids(turns) == ["M6"]
    assert l3_ids(turns) == ["M1", "M2", "M3", "M4", "M5"]
    assert l2_nodes(turns) == [
        ("S1", 0, ["M1", "M2", "M3"]),
        ("S2", 0, ["M4"]),
        ("S3", 0, ["M5"]),
    ]


def test_epochs_count_per_session_and_oversized_turn(turns: ThreeTierArm) -> None:
    turns.reset()
    vec = fake_vector("x")
    body = "Alpha beta gamma delta."  # 5 tokens
    assert count_tokens([body]) == [5]
    events = []
    for i in range(17):  # 9 turns = 45 tokens > 40 -> compact to <= 20 (evict 5 turns)
        row = {"memory_id": f"A{i}", "session_id": "SA", "seq": i, "body": body}
        events.append(turns.ingest_turn(row, vec))
    assert [i for i, e in enumerate(events) if e.compacted] == [8, 13]
    assert [len(e.moved_to_l3) for e in events if e.compacted] == [5, 5]
    assert [(s, ep) for s, ep, _ in l2_nodes(turns)] == [("SA", 0), ("SA", 1)]
    # identical sentences are one candidate: the summary says it once
    assert turns._sqlite().execute("SELECT summary FROM l2_nodes").fetchall() == [
        (body,),
        (body,),
    ]
    # a turn larger than the cap alone is compacted immediately (L1 ends empty)
    big = " ".join(f"word{i}" for i in range(60))
    e = turns.ingest_turn({"memory_id": "BIG", "session_id": "SB", "body": big}, vec)
    assert e.compacted and e.l1_tokens == 0 and e.l1_turns == 0
    assert e.moved_to_l3[-1] == "BIG"
    assert [c.session_id for c in e.compactions] == ["SA", "SB"]
    assert all(c.summary_tokens <= 200 for c in e.compactions)


def test_ingest_turn_rejects_bad_input(turns: ThreeTierArm) -> None:
    turns.reset()
    row, vec = tiny_rows()[0]
    turns.ingest_turn(row, vec)
    with pytest.raises(base.ArmError, match="already in L1"):
        turns.ingest_turn(row, vec)
    with pytest.raises(base.ArmError, match="384"):
        turns.ingest_turn({**row, "memory_id": "N1"}, np.zeros(3, dtype=np.float32))
    with pytest.raises(base.ArmError, match="NUL"):
        turns.ingest_turn({**row, "memory_id": "N2", "body": "a\x00b"}, vec)
    with pytest.raises(base.ArmError, match="body"):
        turns.ingest_turn({"memory_id": "N3"}, vec)
    with pytest.raises(base.ArmError, match="created_day"):
        turns.ingest_turn({**row, "memory_id": "N4", "created_day": "soon"}, vec)
    # a memory already moved to L3 cannot come back
    for r, v in tiny_rows()[1:4]:
        turns.ingest_turn(r, v)
    assert "M1" in l3_ids(turns)
    with pytest.raises(base.ArmError, match="already in L3"):
        turns.ingest_turn(row, vec)
    assert turns.tier_stats()["l1_tokens"] <= CAP


def test_conversation_cap_and_context_bounds(turns: ThreeTierArm) -> None:
    """A 300-turn, 12-session conversation: every invariant after every turn."""
    turns.reset()
    rng = np.random.default_rng(3)
    words = ["deploy", "cache", "timeout", "owner", "rollback", "queue", "index", "budget"]
    n = 300
    max_body = 0
    for i in range(n):
        picked = rng.choice(words, size=int(rng.integers(2, 6)))
        body = f"CFG-{i} {' '.join(picked)}."
        max_body = max(max_body, count_tokens([body])[0])
        row = {
            "memory_id": f"T{i:03d}",
            "session_id": f"S{i // 25:02d}",
            "seq": i,
            "created_day": i // 25,
            "superseded_by": None if i % 3 else "X",
            "body": body,
        }
        e = turns.ingest_turn(row, fake_vector(body))
        assert e.l1_tokens <= CAP
        if i % 37 == 0:
            ctx = turns.assemble_context(body, fake_vector(body), 5)
            assert ctx.tokens["L1"] == e.l1_tokens
            assert ctx.total_tokens <= CAP + 1 * 200 + 5 * max_body
    stats = turns.tier_stats()
    assert stats["l1_turns"] + stats["l2_covered"] == n
    assert stats["l3_rows"] == stats["l2_covered"]
    assert stats["l2_nodes"] > 12  # several epochs per session
    # every memory is in exactly one of L1 / L3, and covered by exactly one node
    db = turns._sqlite()
    assert db.execute("SELECT count(DISTINCT memory_id) FROM l2_covers").fetchall() == [
        (stats["l2_covered"],)
    ]
    assert set(l1_ids(turns)).isdisjoint(l3_ids(turns))
    epochs: dict[str, list[int]] = {}
    for sid, epoch in db.execute("SELECT session_id, epoch FROM l2_nodes ORDER BY node_id"):
        epochs.setdefault(sid, []).append(epoch)
    for got in epochs.values():
        assert got == list(range(len(got)))
    # exact counts over L1 ∪ L3
    r = turns.query(q("CFG-7", base.Predicate("superseded_by", "is_null"), True), 10)
    assert r.count == sum(1 for i in range(n) if i % 3)
    r = turns.query(q("x", base.Predicate("created_day", "<=", 3), True), 10)
    assert r.count == 100


# --------------------------------------------------------------------- assemble context
def test_assemble_context_tiers_tokens_latency(built: ThreeTierArm) -> None:
    ctx = built.assemble_context("CFG-799 timeout", fake_vector("CFG-799"), 3)
    assert isinstance(ctx, AssembledContext)
    items, tokens, latency = ctx  # unpacks as a 3-tuple
    assert [it.tier for it in items] == ["L1", "L2", "L3", "L3", "L3"]
    l1 = items[0]
    assert (l1.ref, l1.memory_ids, l1.keyword_hit) == ("M6", ("M6",), False)
    l2 = items[1]
    assert l2.keyword_hit and "CFG-799" in l2.text and l2.ref.startswith("L2:")
    assert set(l2.memory_ids) in ({"M1", "M2", "M3"}, {"M5"})
    assert {it.ref for it in items if it.tier == "L3"} == {"M1", "M3", "M5"}
    for it in items:
        assert it.tokens == count_tokens([it.text])[0]
    assert tokens == {t: sum(it.tokens for it in items if it.tier == t) for t in ("L1", "L2", "L3")}
    assert tokens["L1"] == 17 and tokens["L3"] == 17 + 12 + 20
    assert set(latency) == {"L1", "L2", "L3"} and all(v > 0 for v in latency.values())
    assert ctx.total_tokens == sum(tokens.values())
    assert {"M1", "M3", "M5", "M6"} <= ctx.memory_ids()


def test_assemble_context_recency_fill_and_predicate(built: ThreeTierArm) -> None:
    # no terms: the newest summary node fills L2 (running summary); L1 whole
    ctx = built.assemble_context("", fake_vector("CFG-799"), 2)
    l2 = [it for it in ctx.items if it.tier == "L2"]
    assert [(it.memory_ids, it.keyword_hit) for it in l2] == [(("M5",), False)]
    assert [it.ref for it in ctx.items if it.tier == "L1"] == ["M6"]
    # predicate restricts L2 and L3, never working memory
    pred = base.Predicate("session_id", "=", "S1")
    ctx = built.assemble_context("timeout", fake_vector("CFG-799"), 5, predicate=pred)
    assert [it.ref for it in ctx.items if it.tier == "L1"] == ["M6"]
    assert {it.ref for it in ctx.items if it.tier == "L3"} == {"M1", "M2", "M3"}
    assert [it.memory_ids for it in ctx.items if it.tier == "L2"] == [("M1", "M2", "M3")]
    ctx = built.assemble_context("timeout", fake_vector("CFG-799"), 0)
    assert ctx.tokens["L3"] == 0


# ----------------------------------------------------------------- query: predicates
@pytest.mark.parametrize(
    ("pred", "expected"),
    [
        (base.Predicate("session_id", "=", "S3"), {"M5", "M6"}),
        (base.Predicate("superseded_by", "is_null"), {"M3", "M4", "M5", "M6"}),
        (base.Predicate("created_day", "<=", 15), {"M1", "M2", "M3"}),
        (base.Predicate("fact_id", "=", "F1"), {"M1", "M2", "M5"}),
        (base.Predicate("session_id", "=", "nope"), set()),
        (None, ALL_IDS),
    ],
)
def test_predicates_and_exact_counts(
    built: ThreeTierArm, pred: base.Predicate | None, expected: set[str]
) -> None:
    r = built.query(q("CFG-799 timeout", pred, wants_count=True), 10)
    assert set(r.memory_ids) == expected  # every tier filtered; all matches fit in k=10
    assert len(r.memory_ids) == len(set(r.memory_ids))
    assert r.count == len(expected)
    assert set(built.last_latency_ms) >= {"L1", "L2", "L3", "fuse", "count"}


def test_count_counts_a_memory_in_both_tiers_once(built: ThreeTierArm) -> None:
    """L1 ids are unioned with L3 ids in SQL, so an id present in both counts once."""
    l1, union = built._count_statements(q("x", None, True))
    ids = [r[0] for r in built._run(l1)]
    assert ids == ["M6"]
    assert built._run(union(ids))[0][0] == 6
    assert built._run(union([*ids, "M1", "M2"]))[0][0] == 6  # duplicates of L3 rows


def test_query_ranking_and_k(built: ThreeTierArm) -> None:
    r = built.query(q("CFG-799"), 10)
    assert set(r.memory_ids[:3]) == {"M1", "M3", "M5"}
    assert set(r.memory_ids) == ALL_IDS
    assert len(built.query(q("CFG-799"), 2).memory_ids) == 2
    assert built.query(q("CFG-799"), 0) == base.Result(memory_ids=[], count=None)
    assert built.query(q("CFG-799", None, True), 0).count == 6


def test_l2_summary_search_maps_back_to_covered_ids(built: ThreeTierArm) -> None:
    """The identifier, alone or in a question, reaches its compacted memories through L2."""
    for text in ("CFG-799", "What did we decide about CFG-799 last week?"):
        (st,) = [s for s in built._statements(q(text), 10) if s.label == "L2 summaries"]
        ids = [r[0] for r in built._run(st)]
        assert set(ids[:3]) == {"M1", "M3", "M5"}, text  # the memories the summaries quote
        assert "M4" not in ids  # its node does not mention CFG-799


def test_identifier_in_working_memory(root: Path) -> None:
    """Everything in L1 (default 3,000-token cap): FTS5 finds CFG-799 alone or in a question."""
    corpus, vectors = make_tiny()
    arm = ThreeTierArm(recent_k=0)
    try:
        arm.build(corpus, vectors, root / "l1only")
        assert arm.tier_stats()["l1_turns"] == 6 and arm.tier_stats()["l3_rows"] == 0
        far = "unrelated words only"
        r = arm.query(q("CFG-799", vec_of=far), 3)
        assert set(r.memory_ids) == {"M1", "M3", "M5"}
        r = arm.query(q("What did we decide about CFG-799 last week?", vec_of=far), 3)
        assert r.memory_ids[0] == "M3" and set(r.memory_ids) == {"M1", "M3", "M5"}
        current = base.Predicate("superseded_by", "is_null")
        r = arm.query(q("CFG-799", current, True, vec_of=far), 10)
        assert set(r.memory_ids) == {"M3", "M5"} and r.count == 4
    finally:
        arm.close()


def test_rrf_fuse_hand_computed() -> None:
    a = [("A", 1, 1), ("B", 2, 2), ("C", 3, 3)]
    b = [("C", 3, 3), ("A", 1, 1)]
    fused = rrf_fuse([a, b], 60)
    assert [m for m, _ in fused] == ["A", "C", "B"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    # ties go newest first
    assert [m for m, _ in rrf_fuse([[("old", 1, 1)], [("new", 9, 1)]], 60)] == ["new", "old"]


def test_rrf_fuse_orders_ties_alike_whatever_the_list_order() -> None:
    """Equal scores: newest first (day, then seq), then by id, in whichever list order."""
    lists = [
        [("A", 5, 1), ("x", 1, 1)],
        [("B", 5, 2), ("y", 1, 2)],
        [("C", 5, 2), ("z", 1, 3)],
        [("D", None, None)],
    ]
    want = ["B", "C", "A", "D", "z", "y", "x"]
    for order in itertools.permutations(lists):
        got = rrf_fuse(list(order), 60)
        assert [m for m, _ in got] == want
        assert [s for _, s in got] == [1 / 61] * 4 + [1 / 62] * 3


# --------------------------------------------------------------------- hostile texts
def test_hostile_texts_query_context_explain(built: ThreeTierArm) -> None:
    preds = [
        None,
        base.Predicate("superseded_by", "is_null"),
        base.Predicate("session_id", "=", "S1"),
    ]
    counts = [6, 4, 3]
    for text in HOSTILE_TEXTS:
        for pred, n in zip(preds, counts, strict=True):
            r = built.query(q(text, pred, True, vec_of="CFG-799"), 5)
            assert isinstance(r, base.Result) and len(r.memory_ids) <= 5
            assert set(r.memory_ids) <= ALL_IDS and len(set(r.memory_ids)) == len(r.memory_ids)
            assert r.count == n, text
        ctx = built.assemble_context(text, fake_vector("CFG-799"), 2)
        assert ctx.tokens["L1"] == 17
    for text in ("", "'; DROP TABLE l1_turns; --", "NEAR(a b, 3)", "x" * 10_000):
        assert "QUERY PLAN" in built.explain(q(text, preds[1], True))
    assert built.tier_stats()["l3_rows"] == 5  # nothing was dropped


def test_hostile_texts_as_turns(turns: ThreeTierArm) -> None:
    """Every hostile text ingested as a turn body (NUL is refused cleanly), then searched."""
    turns.reset()
    n = 0
    for i, text in enumerate(HOSTILE_TEXTS):
        row = {"memory_id": f"H{i}", "session_id": f"S{i % 4}", "seq": i, "body": text}
        if "\x00" in text:
            with pytest.raises(base.ArmError, match="NUL"):
                turns.ingest_turn(row, fake_vector(text))
            continue
        e = turns.ingest_turn(row, fake_vector(text))
        n += 1
        assert e.l1_tokens <= CAP
    stats = turns.tier_stats()
    assert stats["l1_turns"] + stats["l2_covered"] == n == stats["l1_turns"] + stats["l3_rows"]
    summaries = turns._sqlite().execute("SELECT summary, summary_tokens FROM l2_nodes").fetchall()
    assert all(count_tokens([s])[0] == t <= 200 for s, t in summaries)
    for text in HOSTILE_TEXTS:
        r = turns.query(q(text, None, True), 10)
        assert len(r.memory_ids) <= 10 and r.count == n
    r = turns.query(q("ADR-297"), 10)
    assert {"H0", "H1"} <= set(r.memory_ids)


# ------------------------------------------------------------- explain, storage, reopen
def test_explain_shows_every_tier(built: ThreeTierArm) -> None:
    text = built.explain(q("CFG-799", base.Predicate("session_id", "=", "S3"), True))
    for label in (
        "-- L1 keyword [sqlite]",
        "-- L1 recency [sqlite]",
        "-- L2 summaries [sqlite]",
        "-- L3 vector [postgres]",
        "-- count: L1 ids [sqlite]",
        "-- count: L1 ∪ L3 [postgres]",
    ):
        assert label in text
    assert "l1_fts VIRTUAL TABLE" in text and "l2_fts VIRTUAL TABLE" in text
    assert '"Relation Name": "l3_memories"' in text and "hnsw.ef_search" in text
    empty = built.explain(q("   "))
    assert "no statement runs" in empty and "L1 keyword [sqlite]" not in empty


def test_storage_both_engines(built: ThreeTierArm) -> None:
    st = built.storage()
    assert st.total_bytes == sum(st.objects.values()) > 0
    for obj in (
        "sqlite:l1_turns",
        "sqlite:l1_fts_data",
        "sqlite:l2_nodes",
        "sqlite:l2_covers",
        "sqlite:l2_fts_data",
        "pg:l3_memories",
        "pg:l3_embedding_idx",
        "pg:l3_memories_pkey",
    ):
        assert st.objects.get(obj, 0) > 0, obj
    assert "dbstat" in st.source and "pg_total_relation_size" in st.source


def test_reopen_recover_and_no_surviving_server(root: Path) -> None:
    corpus, vectors = make_tiny()
    store = root / "reopen"
    pgdata = store / pg.PGDATA_DIRNAME
    arm = ThreeTierArm(l1_max_tokens=CAP, summary_tokens=200)
    arm.build(corpus, vectors, store)
    before = arm.query(q("CFG-799 timeout", None, True), 10)
    stats = arm.tier_stats()
    pid = pg.postmaster_pid(pgdata)
    arm.close()
    arm.close()  # idempotent
    assert wait_dead(pid), "embedded postmaster survived close()"
    assert servers_left(store) == []
    with pytest.raises(base.ArmError, match="not open"):
        arm.query(q("x"), 3)

    again = ThreeTierArm(l1_max_tokens=CAP, summary_tokens=200)
    again.open(store)
    try:
        assert again.tier_stats() == stats
        assert again.query(q("CFG-799 timeout", None, True), 10) == before
        ev = again.ingest_turn(
            {"memory_id": "M7", "session_id": "S4", "seq": 6, "body": "New turn about SVC-77."},
            fake_vector("New turn about SVC-77."),
        )
        assert ev.l1_turns == 2 and not ev.compacted
        pid = again._h.postmaster_pid if again._h else None
    finally:
        again.close()
    assert wait_dead(pid)

    # simulate a crash between the L1 insert and the compaction: L1 over its cap on disk
    db = apsw.Connection(str(store / DB_NAME))
    with db:
        db.execute(
            "INSERT INTO l1_turns(memory_id, session_id, seq, body, entity_ids, body_tokens, "
            "embedding) VALUES ('M8', 'S4', 7, ?, '[]', 30, ?)",
            ("Padding turn " * 10, fake_vector("pad").tobytes()),
        )
    db.close()
    third = ThreeTierArm(l1_max_tokens=CAP, summary_tokens=200)
    third.open(store)  # finishes the pending compaction
    try:
        s = third.tier_stats()
        assert s["l1_tokens"] <= CAP
        assert s["l1_turns"] + s["l3_rows"] == 8 and s["l3_rows"] == s["l2_covered"]
        assert third.query(q("x", None, True), 1).count == 8
    finally:
        third.close()
    assert servers_left(store) == []


def test_open_errors(root: Path, built: ThreeTierArm) -> None:
    with pytest.raises(base.ArmError, match="missing tiers.db"):
        ThreeTierArm().open(root / "nowhere")
    # a store is reopened only with the parameters it was built with
    other = ThreeTierArm(l1_max_tokens=CAP + 1, summary_tokens=200)
    with pytest.raises(base.ArmError, match="l1_max_tokens"):
        other.open(root / "tiny")
    other.close()
    bad = root / "corrupt"
    bad.mkdir()
    (bad / DB_NAME).write_bytes(b"not a database at all" * 100)
    with pytest.raises(base.ArmError, match=re.escape(str(bad))):
        ThreeTierArm().open(bad)


def test_parameter_validation() -> None:
    for kwargs in (
        {"l1_max_tokens": 0},
        {"compact_fraction": 0.0},
        {"compact_fraction": 1.5},
        {"summary_tokens": -1},
        {"summariser": "gpt"},
        {"recent_k": -1},
        {"branch_k": True},
    ):
        with pytest.raises(ValueError):
            ThreeTierArm(**kwargs)
    assert ThreeTierArm(compact_fraction=0.25, l1_max_tokens=3000).l1_target_tokens == 2250
    assert ThreeTierArm(summariser=ExtractiveSummariser()).summariser == "extractive"


# ----------------------------------------------------------------------- bulk build
def test_bulk_build_is_fast_and_consistent(root: Path) -> None:
    n = 2000
    rng = np.random.default_rng(11)
    x = rng.standard_normal((n, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ids = [f"B{i:04d}" for i in range(n)]
    mem = pl.DataFrame(
        {
            "memory_id": ids,
            "session_id": [f"S{i // 25:03d}" for i in range(n)],
            "turn_no": [i % 25 for i in range(n)],
            "seq": list(range(n)),
            "kind": ["semantic"] * n,
            "body": [f"SVC-{i % 97} note {i}: the cache timeout is {i % 13}s." for i in range(n)],
            "fact_id": [f"F{i % 50}" for i in range(n)],
            "created_day": [i // 25 for i in range(n)],
            "source": ["user_message"] * n,
            "confidence": [0.5] * n,
            "superseded_by": [None if i % 4 else "Z" for i in range(n)],
            "tokens": [0] * n,
            "entity_ids": [[f"SVC-{i % 97}"] for i in range(n)],
        },
        schema_overrides={
            "turn_no": pl.Int32,
            "created_day": pl.Int32,
            "seq": pl.Int64,
            "tokens": pl.Int32,
            "superseded_by": pl.Utf8,
        },
    )
    arm = ThreeTierArm(l1_max_tokens=600)
    try:
        t0 = time.perf_counter()
        arm.build(
            base.Corpus(memories=mem.sample(fraction=1.0, shuffle=True, seed=1)),
            base.Embeddings(ids=ids, matrix=x),
            root / "bulk",
        )
        assert time.perf_counter() - t0 < 30
        s = arm.tier_stats()
        assert 0 < s["l1_tokens"] <= 600 and s["l2_nodes"] >= n // 25
        assert s["l1_turns"] + s["l3_rows"] == n and s["l3_rows"] == s["l2_covered"]
        # replay is in seq order: L1 holds exactly the newest turns
        assert l1_ids(arm) == ids[n - s["l1_turns"] :]
        r = arm.query(
            base.Query("b", "timeout", x[7], base.Predicate("fact_id", "=", "F7"), True), 10
        )
        assert r.count == n // 50 and len(r.memory_ids) == 10
        assert all(int(m[1:]) % 50 == 7 for m in r.memory_ids)
        assert "B0007" in r.memory_ids  # its own vector: L3 rank 1
    finally:
        arm.close()


# ----------------------------------------------------------------------- summarisers
TEXTS = [
    "CFG-799 sets the timeout of SVC-5345 to 30s. The team agreed quickly.",
    "The amber ledger gateway waits half a minute per call.",
    "Someone asked about CFG-799 in chat; nothing decided.",
    "Correction: CFG-799 now sets the timeout of SVC-5345 to 45s!",
    "Lunch was good.",
]


def test_extractive_summariser_deterministic_and_within_budget() -> None:
    s = ExtractiveSummariser()
    assert isinstance(s, Summariser)
    for budget in (0, 1, 3, 8, 12, 20, 30, 50, 200):
        out = s.summarise(TEXTS, budget)
        assert (
            out
            == s.summarise(list(TEXTS), budget)
            == ExtractiveSummariser().summarise(TEXTS, budget)
        )
        assert count_tokens([out])[0] <= budget
    assert s.summarise(TEXTS, 0) == ""
    # generous budget: every distinct sentence, in original order
    full = s.summarise(TEXTS, 500)
    assert full.split("\n") == [x for t in TEXTS for x in split_sentences(t)]
    # tight budget: the identifier-dense sentences win over chit-chat
    tight = s.summarise(TEXTS, 40)
    assert "CFG-799" in tight and "Lunch" not in tight
    # extracted sentences are verbatim
    for line in tight.split("\n"):
        assert any(line in t for t in TEXTS)


def test_extractive_summariser_edge_cases() -> None:
    s = ExtractiveSummariser()
    assert s.summarise([], 50) == ""
    assert s.summarise(["", "   ", "\n"], 50) == ""
    assert s.summarise(["same. same.", "Same.", "same."], 50) == "same."
    long = "x" * 10_000
    out = s.summarise([long], 10)
    assert out and long.startswith(out) and count_tokens([out])[0] <= 10
    for text in HOSTILE_TEXTS:
        for budget in (1, 7, 64):
            assert count_tokens([s.summarise([text, text[:50]], budget)])[0] <= budget
    assert truncate_to_tokens("🔥🚀 deploy 🔥", 2) in ("🔥", "🔥🚀", "")
    assert count_tokens([truncate_to_tokens("データベースのタイムアウト", 3)])[0] <= 3


def test_split_sentences() -> None:
    assert split_sentences('One. Two! "Three?" Four\nFive 1.5s ok.') == [
        "One.",
        "Two!",
        '"Three?"',
        "Four",
        "Five 1.5s ok.",
    ]
    assert split_sentences("") == []


def test_openai_summariser_needs_env() -> None:
    with pytest.raises(SummariserError, match=f"{ENV_BASE_URL} and {ENV_MODEL}"):
        OpenAICompatibleSummariser(env={})
    with pytest.raises(SummariserError, match=ENV_MODEL):
        OpenAICompatibleSummariser(env={ENV_BASE_URL: "http://localhost:1/v1"})
    with pytest.raises(SummariserError, match="http"):
        OpenAICompatibleSummariser(env={ENV_BASE_URL: "ftp://x", ENV_MODEL: "m"})
    s = OpenAICompatibleSummariser(env={ENV_BASE_URL: "http://h/v1/", ENV_MODEL: "m"})
    assert s.base_url == "http://h/v1" and s.summarise(["x"], 0) == ""
    assert not OpenAICompatibleSummariser.available({ENV_API_KEY: "k"})
    with pytest.raises(ValueError, match="unknown summariser"):
        make_summariser("nope")


@pytest.mark.skipif(
    not OpenAICompatibleSummariser.available(),
    reason=f"set {ENV_BASE_URL} and {ENV_MODEL} to test the LLM summariser",
)
def test_openai_summariser_live() -> None:
    s = make_summariser("openai")
    out = s.summarise(TEXTS, 40)
    assert out and count_tokens([out])[0] <= 40


def writer_turn(w: int, i: int) -> tuple[dict, np.ndarray]:
    """Turn ``i`` of writer ``w`` (session ``S<w>``, day ``i``, seq ``1000 w + i``), its vector."""
    body = f"writer {w} turn {i} mentions CFG-{w}{i:03d} and the amber gateway"
    row = {"memory_id": f"W{w}-{i}", "session_id": f"S{w}", "turn_no": i,
           "seq": w * 1000 + i, "created_day": i, "body": body}  # fmt: skip
    return row, fake_vector(body)


def test_threads_writing_turns_while_one_queries(root: Path) -> None:
    """8 writer threads x 60 turns through ingest_turn beside a querying thread.

    Every call either succeeds or raises ArmError (none here: calls are serialised), every
    turn ends up in exactly one tier, and the arm answers single-threaded calls afterwards.
    Which tier a turn ends in, and whether its node's summary quotes it, depend on the
    schedule (one schedule is replayed by the next test), so the final check asks for a
    turn written after the threads.
    """
    arm = ThreeTierArm(l1_max_tokens=300, summary_tokens=60)
    arm.create(root / "threads")
    writers, per_writer = 8, 60
    errors: list[BaseException] = []
    answered: list[int] = []
    stop = threading.Event()

    def write(w: int) -> None:
        for i in range(per_writer):
            try:
                arm.ingest_turn(*writer_turn(w, i))
            except BaseException as exc:  # noqa: BLE001 - the test counts every kind
                errors.append(exc)

    def read() -> None:
        while not stop.is_set():
            try:
                arm.query(
                    q("amber gateway CFG-1001", base.Predicate("superseded_by", "is_null")), 10
                )
                answered.append(1)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

    try:
        reader = threading.Thread(target=read)
        reader.start()
        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        reader.join()
        assert [f"{type(e).__name__}: {e}" for e in errors] == []
        assert len(answered) > 0
        stats = arm.tier_stats()
        assert stats["l1_turns"] + stats["l3_rows"] == writers * per_writer
        assert stats["l3_rows"] > 0  # compaction ran under concurrency
        assert arm.fetch(["W7-59"])["memory_id"].to_list() == ["W7-59"]
        arm.ingest_turn(*writer_turn(8, 60))  # the newest turn: first in both L1 lists
        r = arm.query(q("CFG-8060", vec_of="unrelated"), 5)
        assert r.memory_ids[0] == "W8-60"
    finally:
        arm.close()


def fused(arm: ThreeTierArm, query: base.Query) -> list[tuple[str, float]]:
    """RRF over the tier lists ``query`` runs for ``query`` (ids with their scores)."""
    lists = [[(r[0], r[1], r[2]) for r in arm._run(st)] for st in arm._statements(query, 5)]
    return rrf_fuse(lists, arm.rrf_k)


def test_a_compacted_turn_its_summary_does_not_quote_is_found_by_vector_only(root: Path) -> None:
    """One schedule of the thread test, replayed in order: writer 7's last four turns, then
    writer 0's sixty (``l1_max_tokens=300``, ``summary_tokens=60``).

    Writer 0's turns push W7-56..W7-59 out of L1 together, into one S7 node. Its 60-token
    extractive summary holds three of the four sentences; they score alike, the earliest
    win, so W7-59's sentence is not quoted. W7-59 now lives in L3 only, which no keyword
    list reads: for ``CFG-7059`` with an unrelated vector the first places go to L1
    recency's first (W0-59) and L3's first (W0-24: its word ``24`` falls in the hash
    bucket of ``unrelated``), both 1/61, in the documented order (newest first). With its
    own vector W7-59 is L3's first and ties W0-59; newest first (seq 7059 > 59) puts it
    ahead.
    """
    arm = ThreeTierArm(l1_max_tokens=300, summary_tokens=60)
    arm.create(root / "unquoted")
    try:
        for w, i in [(7, i) for i in range(56, 60)] + [(0, i) for i in range(60)]:
            arm.ingest_turn(*writer_turn(w, i))
        assert "W7-59" in l3_ids(arm) and "W7-59" not in l1_ids(arm)
        assert l2_nodes(arm)[0] == ("S7", 0, ["W7-56", "W7-57", "W7-58", "W7-59"])
        excerpts = dict(
            arm._sqlite().execute(
                "SELECT memory_id, excerpt FROM l2_covers WHERE node_id = "
                "(SELECT node_id FROM l2_covers WHERE memory_id = 'W7-59')"
            )
        )
        assert [excerpts[f"W7-{i}"] != "" for i in range(56, 60)] == [True, True, True, False]

        unrelated = q("CFG-7059", vec_of="unrelated")
        assert fused(arm, unrelated)[:2] == [("W0-59", 1 / 61), ("W0-24", 1 / 61)]
        assert arm.query(unrelated, 2).memory_ids == ["W0-59", "W0-24"]

        own = q("CFG-7059", vec_of=writer_turn(7, 59)[0]["body"])
        assert fused(arm, own)[:2] == [("W7-59", 1 / 61), ("W0-59", 1 / 61)]
        assert arm.query(own, 2).memory_ids == ["W7-59", "W0-59"]
    finally:
        arm.close()


# ------------------------------------------------------------------- remember / fetch
def _batch(*rows: dict) -> tuple[pl.DataFrame, base.Embeddings]:
    """A remember batch: each memory's vector is the fake vector of its body."""
    frame = pl.DataFrame(list(rows))
    ids = frame["memory_id"].to_list()
    return frame, base.Embeddings(ids, np.stack([fake_vector(b) for b in frame["body"].to_list()]))


def superseded_by(arm: ThreeTierArm, mid: str) -> dict[str, list]:
    """Where ``mid`` is held and its ``superseded_by`` there: L1, L2 provenance, L3."""
    db, conn = arm._sqlite(), arm._pg()
    return {
        "L1": [r[0] for r in db.execute("SELECT superseded_by FROM l1_turns WHERE memory_id = ?",
                                        (mid,))],
        "L2": [r[0] for r in db.execute("SELECT superseded_by FROM l2_covers WHERE memory_id = ?",
                                        (mid,))],
        "L3": [r[0] for r in conn.execute(
            "SELECT superseded_by FROM l3_memories WHERE memory_id = %s", (mid,)).fetchall()],
    }  # fmt: skip


def test_remember_goes_through_the_tiers_and_corrects_in_every_tier(turns: ThreeTierArm) -> None:
    """The tiny corpus remembered with its correction as ``supersedes`` (module docstring:
    L1 = {M6}, L2 = three nodes, L3 = M1..M5); M5 corrects M1 and M2, already in L3."""
    turns.reset()
    corpus, vectors = make_tiny()
    replay = base.with_supersedes(corpus.memories.sort("seq"))
    turns.remember(replay, vectors)
    assert l1_ids(turns) == ["M6"] and l3_ids(turns) == ["M1", "M2", "M3", "M4", "M5"]
    assert l2_nodes(turns) == [("S1", 0, ["M1", "M2", "M3"]), ("S2", 0, ["M4"]), ("S3", 0, ["M5"])]
    assert superseded_by(turns, "M1") == {"L1": [], "L2": ["M5"], "L3": ["M5"]}
    assert superseded_by(turns, "M3") == {"L1": [], "L2": [None], "L3": [None]}
    current = base.Predicate("superseded_by", "is_null")
    assert turns.query(q("CFG-799", current, wants_count=True), 10).count == 4
    assert not {"M1", "M2"} & set(turns.query(q("CFG-799 timeout", current), 10).memory_ids)
    # a correction of the memory in working memory: 11 tokens, L1 = 28 <= 40, no compaction
    fix = "Correction: RUN-481 drains traffic after the rotation."
    assert count_tokens([fix]) == [11]
    turns.remember(*_batch({"memory_id": "N1", "body": fix, "created_day": 400,
                            "session_id": "S3", "supersedes": ["M6"]}))  # fmt: skip
    assert l1_ids(turns) == ["M6", "N1"] and turns.tier_stats()["l1_tokens"] == 28
    assert superseded_by(turns, "M6") == {"L1": ["N1"], "L2": [], "L3": []}
    ids = turns.query(q("RUN-481 drains traffic", current), 10).memory_ids
    assert ids[0] == "N1" and "M6" not in ids
    raw = turns.raw_query_call(q("RUN-481", current, wants_count=True), 5)()
    assert turns.raw_ids(raw, 5) == turns.query(q("RUN-481", current), 5).memory_ids
    got = turns.fetch(["N1", "nope", "M1", "M6", "N1"])
    assert got.columns == list(base.MEMORY_SCHEMA) and dict(got.schema) == base.MEMORY_SCHEMA
    assert got["memory_id"].to_list() == ["N1", "M1", "M6"]
    n1, m1, m6 = got.rows(named=True)
    assert (n1["session_id"], n1["created_day"], n1["kind"]) == ("S3", 400, "episodic")
    assert n1["tokens"] == 11
    assert (m1["superseded_by"], m1["entity_ids"], m1["fact_id"]) == (
        "M5", ["CFG-799", "SVC-5345"], "F1",
    )  # fmt: skip
    assert (m6["superseded_by"], m6["entity_ids"], m6["form"]) == (
        "N1",
        ["RUN-481", "SVC-77"],
        None,
    )


def test_remember_one_by_one_equals_ingest_turn(turns: ThreeTierArm) -> None:
    turns.reset()
    corpus, vectors = make_tiny()
    for row in base.with_supersedes(corpus.memories.sort("seq")).iter_slices(1):
        turns.remember(row, vectors)
    assert l1_ids(turns) == ["M6"] and l3_ids(turns) == ["M1", "M2", "M3", "M4", "M5"]
    assert [n[2] for n in l2_nodes(turns)] == [["M1", "M2", "M3"], ["M4"], ["M5"]]
    assert superseded_by(turns, "M2") == {"L1": [], "L2": ["M5"], "L3": ["M5"]}


def test_remember_refuses_bad_batches_before_writing(turns: ThreeTierArm) -> None:
    turns.reset()
    for row, vec in tiny_rows():
        turns.ingest_turn(row, vec)
    before = turns.tier_stats()
    bad = [
        ({"memory_id": "M3", "body": "again", "created_day": 1}, "'M3' is already stored"),  # L3
        ({"memory_id": "M6", "body": "again", "created_day": 1}, "'M6' is already stored"),  # L1
        ({"memory_id": "N1", "body": "x", "created_day": 1, "supersedes": ["gone"]}, "'gone'"),
        ({"memory_id": "N1", "body": "a\x00b", "created_day": 1}, "NUL"),
        ({"memory_id": "N1", "body": "x", "created_day": 1, "session_id": "S\x00"}, "NUL"),
    ]
    for row, match in bad:
        with pytest.raises(base.ArmError, match=match):
            turns.remember(*_batch(row))
        assert turns.tier_stats() == before
    with pytest.raises(base.ArmError, match="'M1'"):  # the batch's second row is stored: nothing
        turns.remember(*_batch({"memory_id": "N1", "body": "x", "created_day": 1},
                               {"memory_id": "M1", "body": "y", "created_day": 1}))  # fmt: skip
    assert turns.tier_stats() == before and turns.fetch(["N1"]).height == 0


# ------------------------------------------------------------------------------ scope
#: scopes of the scoped tiny store; session S1 holds two scopes (M1, M2: u1; M3: u2), so
#: the first compaction (M1, M2, M3 evicted) writes two S1 nodes, one per scope:
#: (S1, u1) = [M1, M2], (S1, u2) = [M3], then (S2, u2) = [M4], (S3, u1) = [M5]; L1 = {M6}.
TIER_SCOPE_OF = {"M1": "u1", "M2": "u1", "M3": "u2", "M4": "u2", "M5": "u1", "M6": "u2"}
SCOPED_ARGS = {"l1_max_tokens": CAP, "summary_tokens": 200, "l2_search_nodes": 1}


def scoped(
    text: str, scope: str, pred: base.Predicate | None = None, count: bool = False
) -> base.Query:
    """A query in ``scope`` whose embedding is the fake vector of ``text``."""
    return base.Query("qs", text, fake_vector(text), pred, count, scope=scope)


@pytest.fixture(scope="module")
def scoped_built(root: Path):
    """The tiny corpus with the scopes of ``TIER_SCOPE_OF``, one summary node searched."""
    corpus, vectors = make_tiny()
    mem = corpus.memories.with_columns(
        scope_id=pl.col("memory_id").replace_strict(TIER_SCOPE_OF, return_dtype=pl.String)
    )
    arm = ThreeTierArm(**SCOPED_ARGS)
    arm.build(base.Corpus(mem), vectors, root / "scoped")
    pid = pg.postmaster_pid(root / "scoped" / pg.PGDATA_DIRNAME)
    yield arm
    arm.close()
    assert wait_dead(pid)


def test_compaction_never_mixes_scopes(scoped_built: ThreeTierArm) -> None:
    assert l2_nodes(scoped_built) == [
        ("S1", 0, ["M1", "M2"]),
        ("S1", 0, ["M3"]),  # epochs count per (scope, session)
        ("S2", 0, ["M4"]),
        ("S3", 0, ["M5"]),
    ]
    scopes = scoped_built._sqlite().execute("SELECT scope_id FROM l2_nodes ORDER BY node_id")
    assert [r[0] for r in scopes] == ["u1", "u2", "u2", "u1"]
    assert l1_ids(scoped_built) == ["M6"]
    fetched = scoped_built.fetch(["M6", "M1", "M3"])  # L1, then L3 twice
    assert fetched["scope_id"].to_list() == ["u2", "u1", "u2"]


@pytest.mark.parametrize(
    ("scope", "pred", "expected"),
    [
        ("u1", None, {"M1", "M2", "M5"}),  # all in L3
        ("u2", None, {"M3", "M4", "M6"}),  # M6 from L1
        ("u1", base.Predicate("superseded_by", "is_null"), {"M5"}),
        ("u2", base.Predicate("session_id", "=", "S3"), {"M6"}),
        ("u2", base.Predicate("session_id", "=", "S1"), {"M3"}),
    ],
)
def test_scope_in_every_tier_and_the_count(
    scoped_built: ThreeTierArm, scope: str, pred: base.Predicate | None, expected: set[str]
) -> None:
    r = scoped_built.query(scoped("CFG-799 timeout", scope, pred, True), 10)
    assert set(r.memory_ids) == expected and r.count == len(expected)


def test_l2_search_is_inside_the_scope(scoped_built: ThreeTierArm) -> None:
    """One node searched: u2's is its own (S1, u2) node, whatever u1's nodes score."""
    (st,) = [
        s
        for s in scoped_built._statements(scoped("CFG-799", "u2"), 10)
        if s.label == "L2 summaries"
    ]
    assert "n.scope_id = :scope" in st.text
    assert [r[0] for r in scoped_built._run(st)] == ["M3"]
    (st,) = [
        s
        for s in scoped_built._statements(scoped("CFG-799", "u1"), 10)
        if s.label == "L2 summaries"
    ]
    assert {r[0] for r in scoped_built._run(st)} in ({"M1", "M2"}, {"M5"})


def test_assemble_context_in_a_scope(scoped_built: ThreeTierArm) -> None:
    ctx = scoped_built.assemble_context("CFG-799", fake_vector("CFG-799"), 5, scope="u2")
    assert [it.ref for it in ctx.items if it.tier == "L1"] == ["M6"]
    assert [it.memory_ids for it in ctx.items if it.tier == "L2"] == [("M3",)]
    assert {it.ref for it in ctx.items if it.tier == "L3"} == {"M3", "M4"}
    ctx = scoped_built.assemble_context("CFG-799", fake_vector("CFG-799"), 5, scope="u1")
    assert [it.tier for it in ctx.items if it.tier == "L1"] == []  # u1 has no working memory
    assert {it.ref for it in ctx.items if it.tier == "L3"} == {"M1", "M2", "M5"}
    assert ctx.memory_ids() <= {"M1", "M2", "M5"}


def test_hostile_scopes_and_hooks(scoped_built: ThreeTierArm) -> None:
    for hostile in ("u1' OR '1'='1", "u1\x00", "%", *[t for t in HOSTILE_TEXTS if t][:4]):
        r = scoped_built.query(scoped("CFG-799 timeout", hostile, count=True), 10)
        assert r == base.Result(memory_ids=[], count=0), hostile
    query = scoped("CFG-799 timeout", "u2", None, True)
    for k in (0, 1, 10):
        got = scoped_built.raw_ids(scoped_built.raw_query_call(query, k)(), k)
        assert got == scoped_built.query(query, k).memory_ids
    plans = scoped_built.explain(query)
    assert plans.count("m.scope_id = :pv0") == 4  # L1 keyword, L1 recency, L2, count L1
    assert plans.count('"scope_id" = %(pv0)s') == 2  # L3 vector, count L1 ∪ L3


def test_layout_version_is_checked_on_open(scoped_built: ThreeTierArm, root: Path) -> None:
    from agentmem.arms.three_tier import LAYOUT_VERSION

    db = scoped_built._sqlite()
    db.execute("UPDATE meta SET value = '1' WHERE key = 'layout_version'")
    try:
        with pytest.raises(
            base.ArmError, match=f"layout_version: stored '1', arm has '{LAYOUT_VERSION}'"
        ):
            ThreeTierArm(**SCOPED_ARGS).open(root / "scoped")
    finally:
        db.execute("UPDATE meta SET value = ? WHERE key = 'layout_version'", (LAYOUT_VERSION,))
    assert LAYOUT_VERSION == "2"


def test_remembered_scope_filters(turns: ThreeTierArm) -> None:
    turns.reset()
    body = "QRX-5150 is user u7's key."
    turns.remember(*_batch({"memory_id": "N1", "body": body, "created_day": 1, "scope_id": "u7"}))
    assert turns.query(scoped("QRX-5150", "u7", count=True), 5) == base.Result(["N1"], 1)
    assert turns.query(scoped("QRX-5150", "u8", count=True), 5) == base.Result([], 0)
    assert turns.fetch(["N1"])["scope_id"].to_list() == ["u7"]
