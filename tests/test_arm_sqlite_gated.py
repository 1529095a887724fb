"""sqlite-gated on the tiny corpus (tests/support/tiny.py): keys, gate, fusion, quantisation.

Expectations are hand-computed from the tiny corpus:

- ``CFG-799`` is linked to M1, M2, M3, M5 (``memory_entities``); its text occurs in M1,
  M3, M5, whose bm25 order is M3 (9 tokens) > M1 (10) > M5 (12).
- M5 supersedes M1 and M2; days: M1 10, M2 12, M3 15, M4 200, M5 320, M6 320.
- ``SVC-5345`` is named ``ledger-gateway`` in the entities table given here; it is linked
  to M1, M2, M4, M5.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from support.tiny import fake_query as q, fake_vector, make_tiny

from agentmem.arms.base import ArmError, Corpus, Embeddings, Predicate, Query
from agentmem.arms.sqlite import SqliteGatedArm
from agentmem.arms.sqlite.gated_sql import json_words
from agentmem.arms.sqlite.keys import name_key, quantise, text_keys

ENTITIES = pl.DataFrame(
    {
        "entity_id": ["SVC-5345", "SVC-77", "CFG-799"],
        "type": ["service", "service", "config"],
        "name": ["ledger-gateway", "key-vault", "timeout of ledger-gateway"],
        "service_id": [None, None, "SVC-5345"],
    }
)


@pytest.fixture(scope="module")
def tiny_gated(tmp_path_factory):
    """Stores of the tiny corpus (with ENTITIES): the defaults, and three other weightings."""
    corpus, vectors = make_tiny()
    corpus = Corpus(memories=corpus.memories, entities=ENTITIES)
    arms = {
        "default": SqliteGatedArm(),
        # bm25 and keys alone: the order is hand-computable
        "text": SqliteGatedArm(dense_weight=0, correction_weight=0, recency_weight=0),
        "no-dense": SqliteGatedArm(dense_weight=0),
        "no-correction": SqliteGatedArm(correction_weight=0),
    }
    for label, arm in arms.items():
        arm.build(corpus, vectors, tmp_path_factory.mktemp(label))
    yield arms
    for arm in arms.values():
        arm.close()


def test_quantise_keeps_cosine_and_uses_the_int8_range():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((50, 384)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    codes = quantise(m)
    assert codes.dtype == np.int8 and codes.shape == (50, 384)
    assert (np.abs(codes.astype(np.int16)).max(axis=1) == 127).all()
    c = codes.astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    assert (np.sum(c * m, axis=1) > 0.9999).all()  # each code's cosine to its vector
    assert quantise(np.zeros((1, 384), dtype=np.float32)).tolist() == [[0] * 384]
    with pytest.raises(ValueError, match="NaN or infinite"):
        quantise(np.full((1, 384), np.nan, dtype=np.float32))


def test_query_code_is_quantise_within_one_step(tiny_gated):
    """The query's code scales in one float32 product, quantise() in two: one step apart at most."""
    rng = np.random.default_rng(1)
    m = rng.standard_normal((2000, 384)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    arm = tiny_gated["default"]
    codes = np.array(
        [np.frombuffer(arm._query_code(Query("q", "x", row)), dtype=np.int8) for row in m]
    )
    step = np.abs(codes.astype(np.int16) - quantise(m).astype(np.int16))
    assert step.max() <= 1
    assert (np.abs(codes.astype(np.int16)).max(axis=1) == 127).all()
    zero = arm._query_code(Query("q", "x", np.zeros(384, dtype=np.float32)))
    assert zero == bytes(384)
    # a peak so small that 127 / peak overflows float32 still scales to 127
    tiny = np.zeros(384, dtype=np.float32)
    tiny[:2] = (1e-40, -5e-41)
    assert np.frombuffer(arm._query_code(Query("q", "x", tiny)), dtype=np.int8)[:3].tolist() == [
        127,
        -64,
        0,
    ]


def test_non_finite_query_embedding_is_an_arm_error(tiny_gated):
    with pytest.raises(ArmError, match="'q' embedding holds NaN or inf"):
        tiny_gated["default"].query(Query("q", "CFG-799", np.full(384, np.inf)), 10)


def test_text_keys_names_and_ids():
    names, ids = text_keys("For ADR-297, ask the Billing API team")
    assert "billing api" in names and "adr 297" in names and "billing api team" in names
    assert "the" not in names and "for" not in names  # a lone stopword names nothing
    assert "the billing" in names  # a run of several words may start with one
    assert {"ADR-297", "adr-297", "Billing", "BILLING", "billing"} <= set(ids)
    assert "the" not in ids and "THE" not in ids
    assert name_key("Billing_API") == name_key("billing-api") == "billing api"
    assert text_keys("") == ([], [])


def test_text_keys_name_starts_keep_every_run_that_can_match():
    text = "For ADR-297, ask the Billing API team about the billing api"
    names, ids = text_keys(text)
    kept, kept_ids = text_keys(text, frozenset({"billing", "the"}))
    assert kept_ids == ids  # ids are not filtered
    # exactly the runs whose first word is a stored name's first word, in the same order
    assert kept == [n for n in names if n.split(" ")[0] in {"billing", "the"}]
    assert kept[:4] == ["billing", "the billing", "billing api", "the billing api"]
    assert "ask the billing" not in kept and "api team" not in kept
    assert text_keys(text, frozenset())[0] == []


def test_text_keys_read_an_ascii_text_as_any_other():
    # an ASCII text takes a shorter path; a trailing em dash (no word, no hyphen) sends the
    # same text down the general one
    for text in (
        "For ADR-297, ask the Billing API team",
        "What do we know about INC-689 and SVC-5345 in billing-api?",
        "ADR--12 x-y-z THE the Ledger-Gateway timeout of ledger-gateway",
        "",
    ):
        assert text_keys(text + " \u2014", frozenset({"billing", "ledger"})) == text_keys(
            text, frozenset({"billing", "ledger"})
        )
        assert text_keys(text + " \u2014") == text_keys(text)


@pytest.mark.parametrize(
    "text",
    [
        "For ADR-297, ask the Billing API team",
        'Say "x\\y"\t\u00e9t\u00e9 \ud800 na\u00efve-caf\u00e9',
        "",
    ],
)
def test_the_keys_bind_as_the_json_arrays_json_dumps_writes(text):
    for words in text_keys(text):
        assert json.loads(json_words(words)) == words
        assert json_words(words) == json.dumps(words, ensure_ascii=False, separators=(",", ":"))


def test_keys_then_bm25_order(tiny_gated):
    # named: CFG-799 -> M1, M2, M3, M5 (e = 1 each), no dense scan; bm25: M3 > M1 > M5
    r = tiny_gated["text"].query(q("What do we know about CFG-799?"), 10)
    assert r.memory_ids == ["M3", "M1", "M5", "M2"]


def test_correction_and_recency_lift_the_newest_word(tiny_gated):
    # + 0.5 for M5 (it supersedes M1, M2) and + 1 x its day scaled over the candidates
    # (M5 day 320 -> 1, M3 day 15 -> 0.016): M5 = 2 + t + 0.5 + 1 > M3 = 2 + 1 + 0.016
    r = tiny_gated["no-dense"].query(q("What do we know about CFG-799?"), 10)
    assert r.memory_ids[:2] == ["M5", "M3"]
    assert set(r.memory_ids) == {"M1", "M2", "M3", "M5"}


def test_predicate_is_a_hard_filter_in_every_branch(tiny_gated):
    for arm in tiny_gated.values():
        r = arm.query(q("CFG-799 timeout", Predicate("superseded_by", "is_null"), True), 10)
        assert "M1" not in r.memory_ids and "M2" not in r.memory_ids  # superseded
        assert r.count == 4  # M3, M4, M5, M6: SELECT count(*), the text plays no part
    r = tiny_gated["default"].query(q("anything", Predicate("session_id", "=", "S2")), 10)
    assert r.memory_ids == ["M4"]  # the dense branch runs inside the filter


def test_entity_name_resolves_to_its_memories(tiny_gated):
    # "ledger-gateway" names SVC-5345 (M1, M2, M4, M5); the gate keeps the dense scan off,
    # so M3 and M6 (not linked, no term in common) are not candidates
    r = tiny_gated["default"].query(q("notes on the ledger-gateway"), 10)
    assert set(r.memory_ids) == {"M1", "M2", "M4", "M5"}
    # spelled with a space and capitals it is the same name
    r2 = tiny_gated["default"].query(q("notes on the Ledger Gateway"), 10)
    assert set(r2.memory_ids) == {"M1", "M2", "M4", "M5"}


def test_the_dense_branch_runs_when_nothing_is_named(tiny_gated):
    arm = tiny_gated["default"]
    r = arm.query(q("rotate keys drain traffic"), 10)  # names no entity: dense scan
    assert set(r.memory_ids) == {"M1", "M2", "M3", "M4", "M5", "M6"}  # dense_k 50 > 6
    assert r.memory_ids[0] == "M6"  # bm25 and cosine both favour the runbook
    # text of stopwords only (no search terms, no name): cosine alone (without the lift of
    # corrections), ties newest first
    corpus, vectors = make_tiny()
    text = "what is it about"
    mem = corpus.memories
    cos = vectors.get(mem["memory_id"].to_list()) @ fake_vector(text)
    order = sorted(
        zip(mem["memory_id"], cos.round(4), mem["created_day"], mem["seq"], strict=True),
        key=lambda r: (-r[1], -r[2], -r[3]),
    )
    assert cos.round(4).tolist().count(0) == 5  # only M3 shares a word ("about")
    got = tiny_gated["no-correction"].query(q(text), 10).memory_ids
    assert got == [r[0] for r in order]


def test_remembered_entity_found_by_its_id(tiny_gated, tmp_path):
    corpus, vectors = make_tiny()
    arm = SqliteGatedArm()
    arm.build(Corpus(memories=corpus.memories, entities=ENTITIES), vectors, tmp_path)
    body = "Noted the new quota for the archive bucket."
    new = pl.DataFrame(
        {"memory_id": ["N1"], "body": [body], "created_day": [400], "entity_ids": [["QTA-12"]]}
    )
    arm.remember(new, Embeddings(["N1"], fake_vector(body).reshape(1, -1)))
    r = arm.query(q("what is qta-12 set to?"), 10).memory_ids
    assert r[0] == "N1" and set(r) == {"N1", "M1", "M5"}  # M1, M5: bm25 of "set" alone
    arm.close()
    again = SqliteGatedArm()
    again.open(tmp_path)
    assert again.query(q("QTA-12"), 1).memory_ids == ["N1"]
    again.close()


def test_a_correction_inherits_the_links_of_what_it_corrects(tmp_path):
    corpus, vectors = make_tiny()
    arm = SqliteGatedArm()
    arm.build(corpus, vectors, tmp_path)
    body = "Out of date: the chat question was answered after all."  # names no entity
    new = pl.DataFrame({"memory_id": ["N1"], "body": [body], "created_day": [400]})
    new = new.with_columns(supersedes=pl.lit(["M3"]))
    arm.remember(new, Embeddings(["N1"], fake_vector(body).reshape(1, -1)))
    body2 = "Out of date again: it was never answered."
    new2 = pl.DataFrame({"memory_id": ["N2"], "body": [body2], "created_day": [401]})
    new2 = new2.with_columns(supersedes=pl.lit(["N1"]))
    arm.remember(new2, Embeddings(["N2"], fake_vector(body2).reshape(1, -1)))
    # N1 and N2 carry no entity and no "CFG-799"; M3 is linked to CFG-799, N1 supersedes
    # M3 and N2 supersedes N1: both inherit the link (without it the gate would leave N2
    # out: no term, no entity); the current memories about CFG-799 are N2 and M5
    current = arm.query(q("CFG-799", Predicate("superseded_by", "is_null")), 10).memory_ids
    assert set(current) == {"N2", "M5"}  # M1, M2 (superseded by M5), M3, N1: superseded
    everything = arm.query(q("CFG-799"), 10).memory_ids
    assert {"N1", "N2", "M3"} <= set(everything)
    # the newest word on the chain ranks above the words it replaced
    assert everything.index("N2") < everything.index("N1") < everything.index("M3")
    arm.close()


def test_params_are_checked():
    bad = [{"key_k": 0}, {"text_k": 2.5}, {"dense_k": None}, {"key_k": True}]
    bad += [{"text_weight": -1}, {"dense_weight": float("inf")}, {"key_weight": "2"}]
    bad += [{"recency_weight": float("nan")}, {"keys": 1}, {"gate": "no"}, {"text_weight": True}]
    for params in bad:
        with pytest.raises(ValueError, match=next(iter(params))):
            SqliteGatedArm(**params)


def test_without_keys_or_gate(tiny_gated, tmp_path):
    corpus, vectors = make_tiny()
    corpus = Corpus(memories=corpus.memories, entities=ENTITIES)
    no_keys = SqliteGatedArm(keys=False)
    no_keys.build(corpus, vectors, tmp_path / "no-keys")
    always = SqliteGatedArm(gate=False)
    always.open(tmp_path / "no-keys")  # the parameters do not change the store
    # "ledger-gateway": with keys the gate keeps the dense scan off (4 linked memories);
    # without the keys branch, or without the gate, the scan adds every memory
    text = "notes on the ledger-gateway"
    assert len(tiny_gated["default"].query(q(text), 10).memory_ids) == 4
    assert len(no_keys.query(q(text), 10).memory_ids) == 6
    assert len(always.query(q(text), 10).memory_ids) == 6
    assert "-- keys" not in no_keys.explain(q(text)) and "-- keys" in always.explain(q(text))
    no_keys.close()
    always.close()


def test_a_zero_vector_scores_cosine_zero(tmp_path):
    corpus, vectors = make_tiny()
    arm = SqliteGatedArm()
    arm.build(corpus, vectors, tmp_path)
    new = pl.DataFrame({"memory_id": ["Z1"], "body": ["blank"], "created_day": [1]})
    arm.remember(new, Embeddings(["Z1"], np.zeros((1, 384), dtype=np.float32)))
    r = arm.query(q("blank"), 10)  # Z1 by bm25; its cosine (undefined) counts as 0
    assert r.memory_ids[0] == "Z1" and len(r.memory_ids) == 7
    zero = Query("z", "what is it about", np.zeros(384, dtype=np.float32))
    assert len(arm.query(zero, 10).memory_ids) == 7  # every cosine 0
    # the correction M5 (+0.5), then newest first: M6 (day 320), M4 (day 200)
    assert arm.query(zero, 3).memory_ids == ["M5", "M6", "M4"]
    arm.close()


def test_explain_names_every_branch(tiny_gated):
    plan = tiny_gated["default"].explain(q("CFG-799", wants_count=True))
    for label in ("-- keys", "-- text", "-- dense", "-- count"):
        assert label in plan
    assert "memory_entities_entity_idx" in plan  # the keys branch reads the entity index
