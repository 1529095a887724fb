"""Tests for the sqlite-graph arm (graph cognitive memory) on real apsw databases.

The ``tiny`` corpus (tests/support/tiny.py) as a graph:

- nodes 1..6 = M1..M6; node types semantic, semantic, episodic, episodic, semantic,
  procedural (the memory kinds);
- entity nodes CFG-799 {M1, M2, M3, M5}, SVC-5345 {M1, M2, M4, M5}, INC-2356 {M4},
  RUN-481 {M6}, SVC-77 {M6}: 11 entity edges;
- temporal edges M1->M2, M2->M3 (S1), M5->M6 (S3); supersedes M5->M1, M5->M2;
  derived_from M2->M1 (F1's first memory is the semantic M1; the correction M5 gets none);
  no causal edge (the only episodic fact, F2, has one memory).
- M1 and M2 are superseded by M5, so they are hidden and replaced by M5.
"""

from __future__ import annotations

import math
import shutil
import threading
import time
from pathlib import Path

import apsw
import numpy as np
import polars as pl
import pytest
from support.hostile import HOSTILE_TEXTS
from support.tiny import fake_query as q, fake_vector, make_tiny, make_tiny_with_adr

from agentmem.arms import base
from agentmem.arms.graph import (
    CORRECTED_CONFIDENCE,
    CORRECTED_DECAY_RATE,
    DB_NAME,
    DECAY_RATES,
    PRUNE_BELOW,
    SqliteGraphArm,
    decayed_confidence,
    node_type_of,
)
from agentmem.arms.sqlite import SqliteFtsArm

ALL_IDS = {"M1", "M2", "M3", "M4", "M5", "M6"}
VISIBLE_IDS = {"M3", "M4", "M5", "M6"}
NOT_SUPERSEDED = base.Predicate("superseded_by", "is_null")
#: scopes of the scoped tiny graph: u1 holds fact F1 (M1, M2 and their correction M5),
#: u2 holds M3 and M4, M6 is nobody's. CFG-799's degree: 4 unscoped, 3 in u1, 1 in u2.
GRAPH_SCOPE_OF = {"M1": "u1", "M2": "u1", "M5": "u1", "M3": "u2", "M4": "u2", "M6": None}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """One read-mostly graph store on tiny (module scope); tests must not write to it."""
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm()
    stats = arm.build(corpus, vectors, tmp_path_factory.mktemp("graph"))
    assert stats.ingest_ms > 0 and stats.index_ms > 0
    yield arm
    arm.close()


@pytest.fixture
def fresh(tmp_path: Path):
    """A graph store on tiny that the test may write to."""
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm()
    arm.build(corpus, vectors, tmp_path)
    yield arm
    arm.close()


@pytest.fixture(scope="module")
def fts_oracle(tmp_path_factory: pytest.TempPathFactory):
    """sqlite-fts on the same corpus: its bm25 order is the graph arm's FTS branch."""
    corpus, vectors = make_tiny()
    arm = SqliteFtsArm()
    arm.build(corpus, vectors, tmp_path_factory.mktemp("fts"))
    yield arm
    arm.close()


def rows(arm: SqliteGraphArm, sql: str, params=()) -> list[tuple]:
    return arm._r().execute(sql, params).fetchall()


# --------------------------------------------------------------------------- the graph


def test_nodes_edges_and_entity_nodes(built):
    types = dict(rows(built, "SELECT memory_id, node_type FROM nodes"))
    assert types == {
        "M1": "semantic",
        "M2": "semantic",
        "M3": "episodic",
        "M4": "episodic",
        "M5": "semantic",
        "M6": "procedural",
    }
    edges = {
        (t, a, b)
        for t, a, b in rows(
            built,
            "SELECT e.type, s.memory_id, d.memory_id FROM edges AS e "
            "JOIN nodes AS s ON s.id = e.src JOIN nodes AS d ON d.id = e.dst "
            "WHERE e.type <> 'entity'",
        )
    }
    assert edges == {
        ("temporal", "M1", "M2"),
        ("temporal", "M2", "M3"),
        ("temporal", "M5", "M6"),
        ("supersedes", "M5", "M1"),
        ("supersedes", "M5", "M2"),
        ("derived_from", "M2", "M1"),
    }
    ent = rows(
        built,
        "SELECT en.entity_id, group_concat(n.memory_id, ',' ORDER BY n.memory_id) "
        "FROM edges AS e JOIN entity_nodes AS en ON en.id = e.dst "
        "JOIN nodes AS n ON n.id = e.src WHERE e.type = 'entity' GROUP BY en.entity_id",
    )
    assert dict(ent) == {
        "CFG-799": "M1,M2,M3,M5",
        "SVC-5345": "M1,M2,M4,M5",
        "INC-2356": "M4",
        "RUN-481": "M6",
        "SVC-77": "M6",
    }
    assert rows(built, "SELECT count(*) FROM edges WHERE type = 'entity'") == [(11,)]
    # memory nodes positive, entity nodes negative: one id space for edges
    assert rows(built, "SELECT min(id) > 0 FROM nodes") == [(1,)]
    assert rows(built, "SELECT max(id) < 0 FROM entity_nodes") == [(1,)]


def test_build_applies_the_correction_rule(built):
    got = {
        r[0]: r[1:]
        for r in rows(
            built,
            "SELECT memory_id, confidence, base_confidence, decay_rate, valid_from, "
            "valid_until, last_access_day FROM nodes",
        )
    }
    # superseded M1, M2: confidence 0.3, decay 0.5, valid until / re-based on day 320
    assert got["M1"] == (
        CORRECTED_CONFIDENCE,
        CORRECTED_CONFIDENCE,
        CORRECTED_DECAY_RATE,
        10,
        320,
        320,
    )
    assert got["M2"] == (0.3, 0.3, 0.5, 12, 320, 320)
    assert got["M3"] == (0.9, 0.9, 0.0, 15, None, 15)  # episodic: rate 0
    assert got["M5"] == (0.9, 0.9, DECAY_RATES["semantic"], 320, None, 320)
    assert got["M6"] == (0.9, 0.9, DECAY_RATES["procedural"], 320, None, 320)


def test_node_type_mapping():
    assert [node_type_of(k) for k in NODE_KINDS] == NODE_KINDS
    assert node_type_of("dialogue_turn") == "episodic"
    assert node_type_of(None) == "episodic"


NODE_KINDS = ["episodic", "semantic", "procedural", "opinion"]


# ------------------------------------------------------------------------- retrieval


def test_superseded_hidden_and_replaced(built):
    r = built.query(q("CFG-799"), 10)
    assert set(r.memory_ids) == VISIBLE_IDS  # M1, M2 hidden; M5 returned
    assert r.memory_ids[:2] in (["M3", "M5"], ["M5", "M3"])
    # only the superseded M2 holds these words: it is replaced by its successor M5
    r = built.query(q("amber ledger gateway half minute"), 10)
    assert r.memory_ids[0] == "M5" and "M2" not in r.memory_ids


def test_replacement_hand_computed(tmp_path):
    # branch_k=1, expand_seeds=0, rrf_k=0 leaves two one-item rankings:
    # FTS top 1 for "amber" = M2 (1/1); vector top 1 = M6 (query vector = M6's body, 1/1).
    # M2 is replaced by M5 with M2's score 1.0: tie with M6 -> newest first; M5 and M6
    # are both day 320, M6 has the larger seq -> [M6, M5].
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm(branch_k=1, rrf_k=0, expand_seeds=0)
    arm.build(corpus, vectors, tmp_path)
    body6 = corpus.memories["body"][5]
    assert arm.query(base.Query("q", "amber", fake_vector(body6)), 10).memory_ids == ["M6", "M5"]
    arm.close()


def reference_graph(
    fts_ranking: list[str],
    text: str,
    pred: base.Predicate | None,
    k: int,
    mode: str = "visible",
    n_seeds: int = 10,
    scope: str | None = None,
) -> list[str]:
    """Independent Python implementation of the retrieval described in the module docs.

    With ``scope`` the memories carry :data:`GRAPH_SCOPE_OF` and only the scope's nodes
    exist for the query: branches, neighbours, successors and entity degrees.
    """
    corpus, vectors = make_tiny()
    rows_ = corpus.memories.to_dicts()
    by_id = {r["memory_id"]: r for r in rows_}

    def in_scope(mid: str) -> bool:
        return scope is None or GRAPH_SCOPE_OF[mid] == scope

    def passes(mid: str) -> bool:
        return in_scope(mid) and (pred is None or pred.matches(by_id[mid]))

    def newest(mid: str) -> tuple[int, int]:
        return (-by_id[mid]["created_day"], -by_id[mid]["seq"])

    def order(score: dict[str, float]) -> list[str]:
        return sorted(score, key=lambda m: (-round(score[m], 12), *newest(m)))

    def rrf(*rankings: list[str]) -> dict[str, float]:
        score: dict[str, float] = {}
        for ranking in rankings:
            for rank, mid in enumerate(ranking, start=1):
                score[mid] = score.get(mid, 0.0) + 1.0 / (60 + rank)
        return score

    qvec = fake_vector(text)
    keep = [r["memory_id"] for r in rows_ if passes(r["memory_id"])]
    cos = {m: float(vectors.get([m])[0] @ qvec) for m in keep}
    vec = sorted(keep, key=lambda m: (-round(cos[m], 5), *newest(m)))[:50]
    fts = [m for m in fts_ranking if in_scope(m)][:50]
    seeds = order(rrf(fts, vec))[:n_seeds]
    members: dict[str, list[str]] = {}
    for r in rows_:
        for e in r["entity_ids"]:
            members.setdefault(e, []).append(r["memory_id"])
    g: dict[str, float] = {}
    for rank, s in enumerate(seeds, start=1):
        for e in by_id[s]["entity_ids"]:
            degree = sum(1 for n in members[e] if in_scope(n))
            for n in members[e]:
                if n != s:
                    g[n] = g.get(n, 0.0) + 1.0 / ((60 + rank) * degree)
        succ = by_id[s]["superseded_by"]
        if succ is not None:
            g[succ] = g.get(succ, 0.0) + 1.0 / (60 + rank)
    graph = order({n: v for n, v in g.items() if passes(n)})[:50]
    fused = rrf(fts, vec, graph)
    final: dict[str, float] = {}
    for mid, score in fused.items():
        chain, cur = [], mid
        while by_id[cur]["superseded_by"] is not None:
            cur = by_id[cur]["superseded_by"]
            chain.append(cur)
        if mode == "always":
            chain = [c for c in chain if by_id[c]["superseded_by"] is None]
        cands = [c for c in chain if passes(c)]
        if cands:
            target = min(cands, key=newest)
        elif chain and mode == "always":
            continue
        else:
            target = mid
        final[target] = max(final.get(target, 0.0), score)
    return order(final)[:k]


CASES = [
    ("CFG-799", None),
    ("CFG-799", NOT_SUPERSEDED),
    ("How long is the timeout set by CFG-799?", None),
    ("amber ledger gateway", None),
    ("SVC-5345 outage disk", base.Predicate("created_day", "<=", 250)),
    ("timeout", base.Predicate("created_day", "<=", 100)),
    ("rotate keys", base.Predicate("session_id", "=", "S3")),
    ("timeout", base.Predicate("fact_id", "=", "F1")),
    ("", None),
]


@pytest.mark.parametrize("text, pred", CASES)
def test_matches_reference_implementation(built, fts_oracle, text, pred):
    fts = fts_oracle.query(q(text, pred), 50).memory_ids
    want = reference_graph(fts, text, pred, 10)
    assert built.query(q(text, pred), 10).memory_ids == want


@pytest.mark.parametrize("text, pred", CASES)
def test_always_mode_matches_reference(tmp_path, fts_oracle, text, pred):
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm(hide_superseded="always")
    arm.build(corpus, vectors, tmp_path)
    fts = fts_oracle.query(q(text, pred), 50).memory_ids
    assert arm.query(q(text, pred), 10).memory_ids == reference_graph(
        fts, text, pred, 10, mode="always"
    )
    arm.close()


def test_predicates_and_superseded_visibility(built, tmp_path):
    # before day 100 the correction (day 320) is not visible, so M1/M2 stay (as-of view)
    r = built.query(q("CFG-799", base.Predicate("created_day", "<=", 100), True), 10)
    assert set(r.memory_ids) == {"M1", "M2", "M3"} and r.count == 3
    # asking for what M5 superseded finds it
    r = built.query(q("timeout", base.Predicate("superseded_by", "=", "M5"), True), 10)
    assert sorted(r.memory_ids) == ["M1", "M2"] and r.count == 2
    # within fact F1 the correction is visible: only it is returned; the count is exact
    r = built.query(q("CFG-799", base.Predicate("fact_id", "=", "F1"), True), 10)
    assert r.memory_ids == ["M5"] and r.count == 3
    r = built.query(q("CFG-799", base.Predicate("session_id", "=", "S2")), 10)
    assert r.memory_ids == ["M4"]
    # "always": superseded nodes never come back, even when the successor is filtered out
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm(hide_superseded="always")
    arm.build(corpus, vectors, tmp_path)
    r = arm.query(q("CFG-799", base.Predicate("created_day", "<=", 100), True), 10)
    assert r.memory_ids == ["M3"] and r.count == 3
    arm.close()


def test_count_is_of_predicate_not_text(built):
    assert built.query(q("nothing zzz", base.Predicate("fact_id", "=", "F1"), True), 10).count == 3
    assert built.query(q("CFG-799", wants_count=True), 10).count == 6
    assert built.query(q("", NOT_SUPERSEDED, wants_count=True), 10).count == 4
    assert built.query(q("CFG-799"), 10).count is None
    assert built.query(q("CFG-799"), 0).memory_ids == []
    assert built.query(q("CFG-799"), 1).memory_ids in (["M3"], ["M5"])


@pytest.mark.parametrize("text", ["CFG-799", "What did we decide in CFG-799?", "cfg-799"])
def test_hyphenated_identifier_finds_its_memories(built, text):
    # M1 (superseded, replaced by M5), M3 and M5 hold CFG-799; both visible ones lead.
    assert set(built.query(q(text), 10).memory_ids[:2]) == {"M3", "M5"}


def test_adr_identifier_alone_and_in_question(tmp_path):
    corpus, vectors = make_tiny_with_adr()
    arm = SqliteGraphArm()
    arm.build(corpus, vectors, tmp_path)
    for text in ("ADR-297", "-ADR-297"):
        assert arm.query(q(text), 10).memory_ids[0] == "M7", text
    # In the question M7 leads FTS (adr-297 + decide) and M3 ("decided", plus the fake
    # vector's shared words "about", "in") leads the vector branch; the seeds tie and
    # M3's CFG-799 neighbours (M1, M2, M5 are seeds too) give it graph votes that
    # M7's single-member entity cannot: graph reinforcement puts M3 first, M7 second.
    ids = arm.query(q("What did we decide in ADR-297 about storage?"), 10).memory_ids
    assert ids[:2] == ["M3", "M7"] and ids.index("M8") > 1
    arm.close()


def test_hostile_texts(built):
    for text in HOSTILE_TEXTS:
        for pred, wants in ((None, False), (NOT_SUPERSEDED, True)):
            query = base.Query("h", text, fake_vector(text), pred, wants)
            r = built.query(query, 5)
            assert isinstance(r, base.Result)
            assert len(r.memory_ids) <= 5 and len(set(r.memory_ids)) == len(r.memory_ids)
            assert set(r.memory_ids) <= VISIBLE_IDS  # superseded never come back
            assert all(isinstance(m, str) for m in r.memory_ids)
            assert r.count == (4 if wants else None)
            assert "QUERY PLAN" in built.explain(query)
    assert built.query(q("", wants_count=True), 5).count == 6  # survived the DROP TABLE text


def test_hostile_bodies_are_stored_verbatim(fresh):
    bodies = [t for t in HOSTILE_TEXTS if t.strip()][:12] + ["'; DROP TABLE nodes; --"]
    for i, body in enumerate(bodies):
        mid = fresh.add_node(
            body, "semantic", day=500 + i, session_id="SH", embedding=fake_vector(body)
        )
        assert rows(fresh, "SELECT body FROM nodes WHERE memory_id = ?", (mid,)) == [(body,)]
    assert fresh.query(q("", base.Predicate("session_id", "=", "SH"), True), 5).count == len(bodies)
    with pytest.raises(ValueError):
        fresh.add_node("   ", day=1)


def test_query_embedding_errors(built):
    with pytest.raises(base.ArmError, match="384"):
        built.query(base.Query("q", "CFG-799", np.ones(3, np.float32)), 5)


# ------------------------------------------------------------------------------ decay


def test_decay_formula_hand_computed():
    # 0.8 * exp(-0.1 * 30 ** 0.8); 30 ** 0.8 = e^(0.8 ln 30) = e^2.72096 = 15.1943;
    # exp(-1.51943) = 0.218824; * 0.8 = 0.175059
    assert decayed_confidence(0.8, 0.1, 30) == pytest.approx(0.8 * math.exp(-0.1 * 30**0.8))
    assert decayed_confidence(0.8, 0.1, 30) == pytest.approx(0.175059, abs=1e-6)
    assert decayed_confidence(0.8, 0.1, 0) == 0.8
    assert decayed_confidence(0.8, 0.1, -5) == 0.8  # an access in the future: no decay
    assert decayed_confidence(0.8, 0.0, 1000) == 0.8


def test_decay_job_prunes_superseded_and_keeps_episodic(fresh):
    out = fresh.decay(350)
    # M1, M2: 0.3 * exp(-0.5 * 30 ** 0.8) = 0.3 * 0.00051 -> pruned; M5, M6 decay; M3, M4 not
    assert out == {"day": 350, "decayed": 4, "pruned": 2, "episodic_kept": 2, "live": 4}
    conf = dict(rows(fresh, "SELECT memory_id, confidence FROM nodes"))
    assert conf["M5"] == pytest.approx(0.9 * math.exp(-0.01 * 30**0.8))
    assert conf["M6"] == pytest.approx(0.9 * math.exp(-0.005 * 30**0.8))
    assert conf["M3"] == conf["M4"] == 0.9
    pruned = rows(fresh, "SELECT memory_id FROM nodes WHERE pruned_day = 350 ORDER BY 1")
    assert pruned == [("M1",), ("M2",)]
    # pruned nodes leave the FTS and vector indexes and are no longer counted
    assert rows(fresh, "SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH 'amber'") == []
    assert rows(fresh, "SELECT count(*) FROM node_vectors") == [(4,)]
    assert fresh.query(q("", base.Predicate("fact_id", "=", "F1"), True), 10).count == 1
    assert (
        fresh.query(q("timeout", base.Predicate("superseded_by", "=", "M5")), 10).memory_ids == []
    )
    # idempotent for the same day (computed from the base, not compounded)
    again = fresh.decay(350)
    assert again["pruned"] == 0 and again["live"] == 4
    assert dict(rows(fresh, "SELECT memory_id, confidence FROM nodes"))["M5"] == conf["M5"]


def test_pruning_threshold(fresh):
    # opinion, rate 0.05, confidence 0.5: 0.5 * exp(-0.05 * 119 ** 0.8) = 0.0508 (kept),
    # 0.5 * exp(-0.05 * 121 ** 0.8) = 0.0492 (< 0.05, pruned)
    assert DECAY_RATES["opinion"] == 0.05 and PRUNE_BELOW == 0.05
    mid = fresh.add_node("Tabs are nicer than spaces.", "opinion", day=1000, confidence=0.5)
    assert fresh.decay(1119)["pruned"] == 2  # the superseded M1, M2 only
    c = rows(fresh, "SELECT confidence FROM nodes WHERE memory_id = ?", (mid,))[0][0]
    assert c == pytest.approx(0.5 * math.exp(-0.05 * 119**0.8)) and c > 0.05
    fresh.decay(1121)
    c, pruned = rows(fresh, "SELECT confidence, pruned_day FROM nodes WHERE memory_id = ?", (mid,))[
        0
    ]
    assert c == pytest.approx(0.5 * math.exp(-0.05 * 121**0.8)) and c < 0.05
    assert pruned == 1121
    assert mid not in fresh.query(q("tabs spaces nicer"), 10).memory_ids


def test_episodic_nodes_never_decay(fresh):
    mid = fresh.add_node("We had a fire drill in building 4.", "episodic", day=10, confidence=0.6)
    out = fresh.decay(100_000)
    assert out["episodic_kept"] == 3  # M3, M4 and the new one
    conf, pruned = rows(
        fresh, "SELECT confidence, pruned_day FROM nodes WHERE memory_id = ?", (mid,)
    )[0]
    assert conf == 0.6 and pruned is None
    assert mid in fresh.query(q("fire drill building"), 10).memory_ids


def test_touch_rebases_and_restarts_the_clock(fresh):
    mid = fresh.add_node("Deploys happen on Tuesdays.", "semantic", day=0, confidence=0.8)
    assert fresh.touch([mid, "no-such-id"], 30) == 1
    rebased, last = rows(
        fresh, "SELECT base_confidence, last_access_day FROM nodes WHERE memory_id = ?", (mid,)
    )[0]
    assert rebased == pytest.approx(0.8 * math.exp(-0.01 * 30**0.8)) and last == 30
    fresh.decay(40)
    c = rows(fresh, "SELECT confidence FROM nodes WHERE memory_id = ?", (mid,))[0][0]
    assert c == pytest.approx(rebased * math.exp(-0.01 * 10**0.8))


# ---------------------------------------------------------------- corrections/conflicts


def test_correct_applies_the_seed_rule(fresh):
    new = fresh.correct(
        "M4",
        "INC-2356: the SVC-5345 outage was a bad config push.",
        330,
        embedding=fake_vector("bad config push"),
    )
    old = rows(
        fresh,
        "SELECT superseded_by, confidence, decay_rate, valid_until, "
        "last_access_day FROM nodes WHERE memory_id = 'M4'",
    )[0]
    assert old == (new, 0.3, 0.5, 330, 330)
    kind, fact = rows(fresh, "SELECT kind, fact_id FROM nodes WHERE memory_id = ?", (new,))[0]
    assert (kind, fact) == ("episodic", "F2")  # inherited from M4
    assert rows(
        fresh,
        "SELECT count(*) FROM edges AS e JOIN nodes AS s ON s.id = e.src "
        "JOIN nodes AS d ON d.id = e.dst WHERE e.type = 'supersedes' "
        "AND s.memory_id = ? AND d.memory_id = 'M4'",
        (new,),
    ) == [(1,)]
    # the entity edges were inherited: INC-2356 and SVC-5345
    assert rows(
        fresh,
        "SELECT count(*) FROM edges AS e JOIN nodes AS n ON n.id = e.src "
        "WHERE n.memory_id = ? AND e.type = 'entity'",
        (new,),
    ) == [(2,)]
    # M4 is episodic (the incident) -> the correction is a later memory of its fact: causal
    assert rows(
        fresh,
        "SELECT count(*) FROM edges AS e JOIN nodes AS n ON n.id = e.dst "
        "WHERE n.memory_id = ? AND e.type = 'causal'",
        (new,),
    ) == [(1,)]
    r = fresh.query(q("INC-2356 outage"), 10)
    assert r.memory_ids[0] == new and "M4" not in r.memory_ids
    # episodic nodes never decay, even when corrected (they stay at 0.3 and hidden)
    fresh.decay(2000)
    assert rows(fresh, "SELECT confidence, pruned_day FROM nodes WHERE memory_id = 'M4'") == [
        (0.3, None)
    ]
    with pytest.raises(base.ArmError, match="no-such"):
        fresh.correct("no-such", "x", 1)


def test_preference_that_changes_twice(fresh):
    bodies = [
        "The user prefers Python for every new project.",
        "The user switched from that to Go for every new project.",
        "The user now writes Rust for every new project.",
    ]
    common = {"embedding": None, "entity_ids": ["USER-1"]}
    a = fresh.add_node(
        bodies[0],
        "opinion",
        day=400,
        session_id="S9",
        fact_id="pref-lang",
        **{**common, "embedding": fake_vector(bodies[0])},
    )
    b = fresh.correct(a, bodies[1], 410, embedding=fake_vector(bodies[1]))
    c = fresh.correct(b, bodies[2], 420, embedding=fake_vector(bodies[2]))
    for text in (
        "Which programming language should I use for the new project?",
        "Does the user prefer Python?",  # matches only the oldest node: replaced by c
        "language Go",
    ):
        ids = fresh.query(q(text), 10).memory_ids
        assert ids[0] == c and a not in ids and b not in ids, (text, ids)
    r = fresh.query(q("which language", base.Predicate("fact_id", "=", "pref-lang"), True), 10)
    assert r.memory_ids == [c] and r.count == 3
    assert rows(
        fresh,
        "SELECT node_type, superseded_by FROM nodes WHERE memory_id IN (?, ?, ?) ORDER BY id",
        (a, b, c),
    ) == [("opinion", b), ("opinion", c), ("opinion", None)]


def test_job_change(fresh):
    a = fresh.add_node(
        "Dana works at Acme as a platform engineer.",
        "semantic",
        day=400,
        fact_id="dana-employer",
        entity_ids=["PER-Dana"],
        embedding=fake_vector("Dana works at Acme as a platform engineer."),
    )
    b = fresh.correct(
        a,
        "Dana joined Globex in March.",
        450,
        embedding=fake_vector("Dana joined Globex in March."),
    )
    # "work" only matches the old node (porter: works -> work); it is replaced by b
    ids = fresh.query(q("Where does Dana work?"), 10).memory_ids
    assert ids[0] == b and a not in ids
    ids = fresh.query(q("Acme platform engineer"), 10).memory_ids
    assert ids[0] == b and a not in ids
    assert fresh.query(
        q("Dana", base.Predicate("fact_id", "=", "dana-employer")), 10
    ).memory_ids == [b]


def test_add_node_links_session_fact_and_entities(fresh):
    x = fresh.add_node(
        "INC-2356 follow-up: disk alerts were added.",
        "semantic",
        day=210,
        session_id="S2",
        fact_id="F2",
        entity_ids=["INC-2356", "NEW-1"],
        embedding=fake_vector("disk alerts"),
    )
    y = fresh.add_node(
        "RUN-481 was rehearsed.",
        "procedural",
        day=330,
        session_id="S3",
        fact_id="F3",
        entity_ids=["RUN-481"],
    )
    got = {
        (t, a, b)
        for t, a, b in rows(
            fresh,
            "SELECT e.type, s.memory_id, d.memory_id FROM edges AS e "
            "JOIN nodes AS s ON s.id = e.src JOIN nodes AS d ON d.id = e.dst "
            "WHERE e.type <> 'entity' AND (s.memory_id IN (?, ?) OR d.memory_id IN (?, ?))",
            (x, y, x, y),
        )
    }
    # x: after M4 in S2; F2's first memory M4 is episodic -> causal M4 -> x
    # y: after M6 in S3; F3's first memory M6 is procedural -> y derived_from M6
    assert got == {
        ("temporal", "M4", x),
        ("causal", "M4", x),
        ("temporal", "M6", y),
        ("derived_from", y, "M6"),
    }
    assert rows(fresh, "SELECT turn_no, seq FROM nodes WHERE memory_id = ?", (y,)) == [(2, 7)]
    assert rows(fresh, "SELECT id < 0 FROM entity_nodes WHERE entity_id = 'NEW-1'") == [(1,)]
    # y has no vector: found by text (and graph), never by the vector branch
    assert rows(fresh, "SELECT count(*) FROM node_vectors") == [(7,)]
    assert y in fresh.query(q("rehearsed"), 10).memory_ids
    with pytest.raises(base.ArmError, match="M1"):
        fresh.add_node("duplicate id", day=1, memory_id="M1")
    with pytest.raises(ValueError, match="384"):
        fresh.add_node("bad vector", day=1, embedding=np.ones(3, np.float32))


# ----------------------------------------------------------------- writer and readers


def test_reader_is_read_only_and_writer_thread_owns_writes(built):
    with pytest.raises(apsw.ReadOnlyError):
        built._r().execute("INSERT INTO entity_nodes(id, entity_id) VALUES (-99, 'x')")
    assert any(t.name == "sqlite-graph-writer" for t in threading.enumerate())
    assert rows(built, "PRAGMA journal_mode") == [("wal",)]


def test_writer_queue_from_many_threads(fresh):
    n_threads, per_thread = 4, 25
    ids: list[list[str]] = [[] for _ in range(n_threads)]
    latencies: list[float] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(i: int) -> None:
        for j in range(per_thread):
            t0 = time.perf_counter()
            body = f"thread {i} note {j} about CFG-799"
            ids[i].append(
                fresh.add_node(
                    body,
                    "semantic",
                    day=500,
                    session_id="SW",
                    entity_ids=["CFG-799"],
                    embedding=fake_vector(body),
                )
            )
            latencies.append((time.perf_counter() - t0) * 1e3)

    def reader() -> None:
        try:
            while not stop.is_set():
                fresh.query(q("CFG-799 note", base.Predicate("session_id", "=", "SW"), True), 5)
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(n_threads)]
    rt = threading.Thread(target=reader)
    rt.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    rt.join()
    assert not errors
    flat = [m for lst in ids for m in lst]
    assert len(flat) == len(set(flat)) == n_threads * per_thread  # no lost or merged writes
    r = fresh.query(q("", base.Predicate("session_id", "=", "SW"), True), 5)
    assert r.count == n_threads * per_thread
    # the temporal chain of SW is one unbroken path: serialised writes saw each other
    assert rows(
        fresh,
        "SELECT count(*), count(DISTINCT e.src), count(DISTINCT e.dst) "
        "FROM edges AS e JOIN nodes AS n ON n.id = e.src "
        "WHERE e.type = 'temporal' AND n.session_id = 'SW'",
    ) == [(99, 99, 99)]
    assert rows(
        fresh,
        "SELECT min(turn_no), max(turn_no), count(DISTINCT turn_no) "
        "FROM nodes WHERE session_id = 'SW'",
    ) == [(0, 99, 100)]
    assert rows(
        fresh,
        "SELECT count(*) FROM edges AS e JOIN entity_nodes AS en "
        "ON en.id = e.dst WHERE en.entity_id = 'CFG-799'",
    ) == [(104,)]
    print(
        f"\nadd_node(): median {sorted(latencies)[len(latencies) // 2]:.2f} ms "
        f"over {len(latencies)} writes from {n_threads} threads"
    )


def test_reopen_from_second_instance(built, fresh):
    second = SqliteGraphArm()
    second.open(fresh._path.parent)  # while the first still holds the store open
    for query in (q("CFG-799"), q("timeout", NOT_SUPERSEDED, wants_count=True)):
        assert second.query(query, 10) == fresh.query(query, 10)
    # a write through the second instance's writer is seen by the first's reader
    body = "Written by the second instance."
    mid = second.add_node(body, day=600, session_id="S2", embedding=fake_vector(body))
    assert fresh.query(q(body), 1).memory_ids == [mid]
    new = fresh.correct(mid, "Corrected by the first instance.", 601)
    assert second.query(q(body), 1).memory_ids == [new]  # the old node is replaced
    assert second.storage().objects.keys() == fresh.storage().objects.keys()
    second.close()
    second.close()  # idempotent
    with pytest.raises(base.ArmError, match="not open"):
        second.query(q("CFG-799"), 10)
    with pytest.raises(base.ArmError, match="not open"):
        second.add_node("x", day=1)


def test_open_errors_name_the_path(tmp_path, fts_oracle):
    with pytest.raises(base.ArmError, match=str(tmp_path)):
        SqliteGraphArm().open(tmp_path / "missing")
    (tmp_path / DB_NAME).write_text("this is not a database\n" * 100)
    with pytest.raises(base.ArmError, match=str(tmp_path)):
        SqliteGraphArm().open(tmp_path)
    # a sqlite-fts store (checkpointed into one file) is not a graph store
    fts_oracle.storage()
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(fts_oracle._path, other / DB_NAME)
    with pytest.raises(base.ArmError, match="lacks tables"):
        SqliteGraphArm().open(other)


def test_rebuild_replaces_store(tmp_path):
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm()
    arm.build(corpus, vectors, tmp_path)
    arm.add_node("extra", day=1)
    arm.build(corpus, vectors, tmp_path)  # rebuild over the same directory
    assert arm.query(q("", wants_count=True), 5).count == 6
    arm.close()


def test_build_errors(tmp_path):
    corpus, vectors = make_tiny()
    with pytest.raises(base.ArmError, match="M6"):
        SqliteGraphArm().build(
            corpus, base.Embeddings(vectors.ids[:5], vectors.matrix[:5]), tmp_path
        )
    corpus.memories = corpus.memories.drop("entity_ids")
    with pytest.raises(base.ArmError, match="entity_ids"):
        SqliteGraphArm().build(corpus, vectors, tmp_path)


# ------------------------------------------------------------ explain/storage/metadata


def test_explain_shows_real_plans(built):
    plan = built.explain(q("CFG-799", base.Predicate("fact_id", "=", "F1"), True))
    assert "-- retrieval: WITH RECURSIVE" in plan and "-- count:" in plan
    assert "nodes_fts VIRTUAL TABLE" in plan and "vec_distance_cosine" in plan
    assert "idx_edges_dst" in plan  # graph expansion and successor chains use the edge index
    assert plan.count("m.fact_id = :pv") >= 4  # fts, vec, graph, successors + count
    assert "vec_distance_cosine" in built.explain(q("?!"))  # no terms: vector + graph remain
    assert "nodes_fts" not in built.explain(q("?!")).split("QUERY PLAN")[0]


def test_storage_from_dbstat(built):
    s = built.storage()
    assert s.source == "dbstat"
    assert s.total_bytes == sum(s.objects.values()) > 0
    want = {"nodes", "edges", "entity_nodes", "node_vectors", "nodes_fts_data", "idx_edges_dst"}
    assert want <= s.objects.keys()
    assert s.objects["node_vectors"] >= 6 * 384 * 4


def test_capabilities_and_params():
    c = SqliteGraphArm.capabilities
    assert SqliteGraphArm.name == "sqlite-graph" and SqliteGraphArm.family == "graph"
    assert c.predicate and c.join and c.aggregate and c.transactions
    assert c.vector_access == "brute-force" and c.text_access == "fts5-bm25"
    for bad in (
        {"branch_k": 0},
        {"rrf_k": -1},
        {"expand_seeds": -1},
        {"graph_k": 0},
        {"hide_superseded": "never"},
    ):
        with pytest.raises(ValueError):
            SqliteGraphArm(**bad)


# ------------------------------------------------------------------ remember / fetch
def _batch(*rows: dict) -> tuple[pl.DataFrame, base.Embeddings]:
    """A remember batch: each memory's vector is the fake vector of its body."""
    frame = pl.DataFrame(list(rows))
    ids = frame["memory_id"].to_list()
    return frame, base.Embeddings(ids, np.stack([fake_vector(b) for b in frame["body"].to_list()]))


GRAPH_TABLES = {
    "nodes": "SELECT * FROM nodes ORDER BY id",
    "entity_nodes": "SELECT * FROM entity_nodes ORDER BY id",
    "edges": "SELECT * FROM edges ORDER BY src, type, dst",
    "node_vectors": "SELECT * FROM node_vectors ORDER BY id",
    "nodes_fts": "SELECT rowid, body FROM nodes_fts ORDER BY rowid",
}


def test_remember_replays_the_corpus_into_the_built_graph(built, tmp_path):
    """The corpus remembered into an empty store (corrections by ``supersedes``) gives the
    very tables build() derives in SQL: nodes, entity nodes, every edge, vectors, FTS."""
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm()
    arm.build(base.Corpus(memories=corpus.memories.head(0)), vectors, tmp_path / "replay")
    try:
        replay = base.with_supersedes(corpus.memories)
        assert replay.filter(pl.col("memory_id") == "M5")["supersedes"].to_list() == [["M1", "M2"]]
        arm.remember(replay, vectors)
        for table, sql in GRAPH_TABLES.items():
            assert rows(arm, sql) == rows(built, sql), table
        for text in ("CFG-799 timeout", "amber ledger", "drain traffic"):
            for pred in (None, NOT_SUPERSEDED):
                assert arm.query(q(text, pred), 6) == built.query(q(text, pred), 6)
    finally:
        arm.close()


def test_remember_supersedes_with_the_effects_of_correct(fresh):
    body = "INC-2356: the SVC-5345 outage was a bad config push."
    fresh.remember(*_batch({"memory_id": "N1", "body": body, "created_day": 330, "kind": "episodic",
                            "fact_id": "F2", "supersedes": ["M4"]}))  # fmt: skip
    old = rows(
        fresh,
        "SELECT superseded_by, confidence, base_confidence, decay_rate, valid_until, "
        "last_access_day FROM nodes WHERE memory_id = 'M4'",
    )
    assert old == [
        ("N1", CORRECTED_CONFIDENCE, CORRECTED_CONFIDENCE, CORRECTED_DECAY_RATE, 330, 330)
    ]
    edges = rows(
        fresh,
        "SELECT e.type, s.memory_id, d.memory_id FROM edges AS e JOIN nodes AS s ON s.id = e.src "
        "JOIN nodes AS d ON d.id = e.dst WHERE e.type <> 'entity' AND 'N1' IN (s.memory_id, "
        "d.memory_id) ORDER BY e.type",
    )
    # M4 (episodic) is F2's first memory: it causes the correction, which supersedes it
    assert edges == [("causal", "M4", "N1"), ("supersedes", "N1", "M4")]
    assert fresh.query(q("INC-2356 outage", NOT_SUPERSEDED), 10).memory_ids[0] == "N1"
    assert "M4" not in fresh.query(q("INC-2356 outage"), 10).memory_ids  # hidden, replaced
    assert fresh.query(q("outage", base.Predicate("superseded_by", "=", "N1")), 10).memory_ids == [
        "M4"
    ]
    got = fresh.fetch(["M4", "N1"])
    assert got["superseded_by"].to_list() == ["N1", None]
    assert got["confidence"].to_list() == [CORRECTED_CONFIDENCE, 1.0]
    # a row that arrives already superseded: by a stored node (edge made), by no node (kept)
    fresh.remember(*_batch({"memory_id": "N2", "body": "an older report", "created_day": 300,
                            "superseded_by": "N1"},
                           {"memory_id": "N3", "body": "orphan", "created_day": 300,
                            "superseded_by": "ghost"}))  # fmt: skip
    assert rows(
        fresh,
        "SELECT s.memory_id FROM edges AS e JOIN nodes AS s ON s.id = e.src JOIN nodes AS d "
        "ON d.id = e.dst WHERE e.type = 'supersedes' AND d.memory_id IN ('N2', 'N3')",
    ) == [("N1",)]
    assert fresh.fetch(["N2", "N3"])["superseded_by"].to_list() == ["N1", "ghost"]
    assert fresh.fetch(["N2"])["confidence"].to_list() == [CORRECTED_CONFIDENCE]


def test_remember_places_memories_in_their_session_by_seq(fresh):
    fresh.remember(*_batch({"memory_id": "N1", "body": "late note", "created_day": 30,
                            "session_id": "S1", "seq": 10}))  # fmt: skip
    fresh.remember(*_batch({"memory_id": "N2", "body": "a note between", "created_day": 20,
                            "session_id": "S1", "seq": 5}))  # fmt: skip
    chain = rows(
        fresh,
        "SELECT s.memory_id, d.memory_id FROM edges AS e JOIN nodes AS s ON s.id = e.src "
        "JOIN nodes AS d ON d.id = e.dst WHERE e.type = 'temporal' AND s.session_id = 'S1' "
        "ORDER BY s.seq",
    )
    assert chain == [("M1", "M2"), ("M2", "M3"), ("M3", "N2"), ("N2", "N1")]  # M3->N1 replaced


def test_remember_is_all_or_nothing(fresh):
    before = {t: rows(fresh, sql) for t, sql in GRAPH_TABLES.items()}
    bad = [
        ([{"memory_id": "N1", "body": "ok", "created_day": 1, "entity_ids": ["NEW-9"]},
          {"memory_id": "M3", "body": "again", "created_day": 1}], "'M3' is already stored"),
        ([{"memory_id": "N1", "body": "x", "created_day": 1, "supersedes": ["gone"]}], "'gone'"),
        ([{"memory_id": "N1", "body": "x", "created_day": 1, "confidence": 1.5}], r"\[0, 1\]"),
        ([{"memory_id": "N1", "created_day": 1}], "body"),
    ]  # fmt: skip
    for batch, match in bad:
        frame = pl.DataFrame(batch)
        vecs = base.Embeddings(
            frame["memory_id"].to_list(), np.ones((frame.height, 384), np.float32)
        )
        with pytest.raises(base.ArmError, match=match):
            fresh.remember(frame, vecs)
        assert {t: rows(fresh, sql) for t, sql in GRAPH_TABLES.items()} == before
    fresh.remember(*_batch({"memory_id": "N1", "body": "fine", "created_day": 1}))
    assert rows(fresh, "SELECT count(*) FROM nodes") == [(7,)]
    fresh.close()
    with pytest.raises(base.ArmError, match="not open"):
        fresh.remember(*_batch({"memory_id": "N2", "body": "x", "created_day": 1}))
    with pytest.raises(base.ArmError, match="not open"):
        fresh.fetch(["M1"])


def test_fetch_rows_in_the_order_asked(built):
    got = built.fetch(["M5", "nope", "M1", "M5", "M6"])
    assert got.columns == list(base.MEMORY_SCHEMA) and dict(got.schema) == base.MEMORY_SCHEMA
    assert got["memory_id"].to_list() == ["M5", "M1", "M6"]
    m5, m1, m6 = got.rows(named=True)
    assert m1["superseded_by"] == "M5" and m1["confidence"] == CORRECTED_CONFIDENCE
    assert m1["entity_ids"] == ["CFG-799", "SVC-5345"]
    assert m6["entity_ids"] == ["RUN-481", "SVC-77"]
    assert (m5["session_id"], m5["turn_no"], m5["seq"], m5["kind"]) == ("S3", 0, 4, "semantic")
    assert (m5["body"], m5["form"]) == (
        "Correction: CFG-799 now sets the timeout of SVC-5345 to 45s.", None,
    )  # fmt: skip
    assert built.fetch([]).height == 0 and built.fetch(["nope"]).columns == list(base.MEMORY_SCHEMA)


def test_raw_ids_are_the_query_answer(built):
    for text, pred, count in (("CFG-799", None, True), ("amber", NOT_SUPERSEDED, False)):
        query = q(text, pred, count)
        for k in (0, 1, 3, 10):
            assert (
                built.raw_ids(built.raw_query_call(query, k)(), k)
                == built.query(query, k).memory_ids
            )


# ------------------------------------------------------------------------------- scope
def scoped(
    text: str, scope: str, pred: base.Predicate | None = None, count: bool = False
) -> base.Query:
    """A query in ``scope`` whose embedding is the fake vector of ``text``."""
    return base.Query("qs", text, fake_vector(text), pred, count, scope=scope)


def scoped_tiny() -> tuple[base.Corpus, base.Embeddings]:
    """The tiny corpus with the scopes of :data:`GRAPH_SCOPE_OF`."""
    corpus, vectors = make_tiny()
    mem = corpus.memories.with_columns(
        scope_id=pl.col("memory_id").replace_strict(GRAPH_SCOPE_OF, return_dtype=pl.String)
    )
    return base.Corpus(mem), vectors


@pytest.fixture(scope="module")
def scoped_built(tmp_path_factory: pytest.TempPathFactory):
    """A read-only graph store of the scoped tiny corpus (module scope)."""
    corpus, vectors = scoped_tiny()
    arm = SqliteGraphArm()
    arm.build(corpus, vectors, tmp_path_factory.mktemp("graph-scoped"))
    yield arm
    arm.close()


@pytest.mark.parametrize("scope", ["u1", "u2"])
@pytest.mark.parametrize("text, pred", CASES)
def test_scoped_retrieval_matches_reference(scoped_built, fts_oracle, text, pred, scope):
    fts = fts_oracle.query(q(text, pred), 50).memory_ids
    want = reference_graph(fts, text, pred, 10, scope=scope)
    got = scoped_built.query(scoped(text, scope, pred), 10).memory_ids
    assert got == want
    assert {GRAPH_SCOPE_OF[m] for m in got} <= {scope}


def test_scoped_retrieval_hand_computed(scoped_built):
    # u1 = M1, M2, M5: M1 and M2 are replaced by their successor M5 (same scope)
    assert scoped_built.query(scoped("CFG-799", "u1"), 10).memory_ids == ["M5"]
    # u2 = M3, M4: FTS M3; vectors M3 (cosine 1/sqrt 8), M4 (0); graph: M3's entity
    # CFG-799 has no other u2 node, so the graph branch is empty: M3 = 2/61, M4 = 1/62
    assert scoped_built.query(scoped("CFG-799", "u2"), 10).memory_ids == ["M3", "M4"]
    # the as-of view inside u1: the correction (day 320) is filtered out, M1, M2 stay
    asof = scoped_built.query(scoped("CFG-799", "u1", base.Predicate("created_day", "<=", 100)), 10)
    assert set(asof.memory_ids) == {"M1", "M2"}


def test_scoped_counts_and_hostile_scopes(scoped_built):
    assert scoped_built.query(scoped("", "u1", count=True), 10).count == 3
    assert scoped_built.query(scoped("x", "u1", NOT_SUPERSEDED, count=True), 10).count == 1
    assert scoped_built.query(scoped("CFG-799", "u2", count=True), 10).count == 2
    for hostile in ("u1' OR '1'='1", "u1\x00", "%", *[t for t in HOSTILE_TEXTS if t][:4]):
        r = scoped_built.query(scoped("CFG-799", hostile, count=True), 10)
        assert r == base.Result(memory_ids=[], count=0), hostile


def test_scope_in_every_branch_and_hooks(scoped_built):
    query = scoped("CFG-799", "u1", NOT_SUPERSEDED, count=True)
    plan = scoped_built.explain(query)
    # fts, vec, graph and successors, then the count; the entity degree has its own
    assert plan.count("m.scope_id = :pv0") == 5 and "d.scope_id = :scope" in plan
    for k in (0, 1, 10):
        assert (
            scoped_built.raw_ids(scoped_built.raw_query_call(query, k)(), k)
            == scoped_built.query(query, k).memory_ids
        )


def test_add_node_correct_and_remember_keep_the_scope(tmp_path):
    corpus, vectors = scoped_tiny()
    arm = SqliteGraphArm()
    arm.build(corpus, vectors, tmp_path)
    body = "QRX-5150 is user u3's key."
    a = arm.add_node(body, day=500, embedding=fake_vector(body), scope_id="u3")
    b = arm.correct(a, "QRX-5150 is user u3's new key.", 510)  # inherits the scope
    arm.remember(*_batch({"memory_id": "N9", "body": "QRX-5150 elsewhere", "created_day": 520,
                          "scope_id": "u4"}))  # fmt: skip
    assert arm.fetch([a, b, "N9", "M6"])["scope_id"].to_list() == ["u3", "u3", "u4", None]
    with pytest.raises(ValueError, match="scope_id must be a non-empty string"):
        arm.add_node(body, day=530, embedding=fake_vector(body), scope_id="")
    arm.close()
    again = SqliteGraphArm()
    again.open(tmp_path)
    assert again.query(scoped("QRX-5150", "u3", count=True), 10) == base.Result([b], 2)
    assert again.query(scoped("QRX-5150", "u4"), 10).memory_ids == ["N9"]
    again.close()


def test_store_without_scope_column_is_refused(tmp_path):
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm()
    arm.build(corpus, vectors, tmp_path)
    arm._w().call(
        lambda c: c.execute("DROP INDEX idx_nodes_scope; ALTER TABLE nodes DROP COLUMN scope_id")
    )
    arm.close()
    with pytest.raises(base.ArmError, match=r"lacks nodes columns \['scope_id'\].*rebuild"):
        SqliteGraphArm().open(tmp_path)
