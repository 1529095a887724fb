"""sqlite-gated's session neighbours on a hand-built two-session conversation.

Vectors are unit basis vectors ``e_i`` (or mixes of two), so every cosine is exact:

==== ======= ==== ==== ======================================== ====================
id   session turn day  body                                     vector
==== ======= ==== ==== ======================================== ====================
T0   C1      0    10   Alice: where did you go hiking last week? e0
T1   C1      1    12   Bob: the blue ridge trail, twice          0.6 e0 + 0.8 e1
T2   C1      2    10   Alice: nice                               e2
X0   C2      0    11   Carol: hiking boots are on sale           e3
X1   C2      1    11   Dan: cool                                 0.1 e3 + 0.995 e4
==== ======= ==== ==== ======================================== ====================

The query "hiking last week" carries ``e5``: every cosine to it is 0, so only bm25 and
the neighbours score. bm25 matches T0 (three terms, ``t`` = 1) and X0 (one, ``t`` < 1).
T1 is T0's next turn at cosine 0.6 >= 0.2: it scores 0.8 x (1 x t(T0) + 1 x 0) = 0.8.
X1 is X0's next turn at cosine 0.1 < 0.2: nothing carries.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from agentmem.arms.base import Corpus, Embeddings, Predicate, Query
from agentmem.arms.sqlite import SqliteGatedArm

ROWS = [  # memory_id, session_id, turn_no, created_day, body, entity_ids
    ("T0", "C1", 0, 10, "Alice: where did you go hiking last week?", ["TRL-1"]),
    ("T1", "C1", 1, 12, "Bob: the blue ridge trail, twice", []),
    ("T2", "C1", 2, 10, "Alice: nice", []),
    ("X0", "C2", 0, 11, "Carol: hiking boots are on sale", []),
    ("X1", "C2", 1, 11, "Dan: cool", []),
]


def _basis(i: int) -> np.ndarray:
    v = np.zeros(384, dtype=np.float32)
    v[i] = 1.0
    return v


VECTORS = np.stack(
    [
        _basis(0),
        0.6 * _basis(0) + 0.8 * _basis(1),
        _basis(2),
        _basis(3),
        0.1 * _basis(3) + 0.995 * _basis(4),
    ]
).astype(np.float32)
VECTORS /= np.linalg.norm(VECTORS, axis=1, keepdims=True)


def _query(text: str = "hiking last week", predicate: Predicate | None = None) -> Query:
    return Query("q", text, _basis(5), predicate)


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    """The store of the conversation above, opened by the default arm and two others."""
    cols = list(zip(*ROWS, strict=True))
    n = len(ROWS)
    memories = pl.DataFrame(
        {
            "memory_id": list(cols[0]),
            "session_id": list(cols[1]),
            "turn_no": list(cols[2]),
            "seq": list(range(n)),
            "kind": ["episodic"] * n,
            "body": list(cols[4]),
            "fact_id": [None] * n,
            "created_day": list(cols[3]),
            "source": ["user_message"] * n,
            "confidence": [0.9] * n,
            "superseded_by": [None] * n,
            "tokens": [len(b.split()) for b in cols[4]],
            "entity_ids": list(cols[5]),
        },
        schema_overrides={"turn_no": pl.Int32, "created_day": pl.Int32, "tokens": pl.Int32},
    )
    store = tmp_path_factory.mktemp("conversation")
    arms = {"default": SqliteGatedArm()}
    arms["default"].build(Corpus(memories=memories), Embeddings(list(cols[0]), VECTORS), store)
    for label, params in {
        "off": {"neighbour_weight": 0.0},
        "strict": {"neighbour_min_cosine": 0.7},
        "ungated": {"gate": False},
    }.items():
        arms[label] = SqliteGatedArm(**params)
        arms[label].open(store)  # the parameters do not change the store
    yield arms
    for arm in arms.values():
        arm.close()


def test_the_next_turn_inherits_its_matchs_evidence(conversation):
    # T0 1.0, T1 0.8 (carried), X0 t < 0.8, then the rest at 0, newest first (X1 day 11,
    # T2 day 10)
    got = conversation["default"].query(_query(), 5).memory_ids
    assert got == ["T0", "T1", "X0", "X1", "T2"]
    # without neighbours T1 is one of the zero scores: newest first, so it still leads them
    off = conversation["off"].query(_query(), 5).memory_ids
    assert off == ["T0", "X0", "T1", "X1", "T2"]


def test_a_neighbour_must_be_close_to_its_match(conversation):
    # T0-T1 at cosine 0.6 < 0.7: nothing carries, the order is the one without neighbours
    assert conversation["strict"].query(_query(), 5).memory_ids == ["T0", "X0", "T1", "X1", "T2"]


def test_neighbours_stay_inside_the_filters(conversation):
    # T1 (day 12) fails created_day <= 11: it is never read, even as T0's neighbour
    got = conversation["default"].query(_query(predicate=Predicate("created_day", "<=", 11)), 5)
    assert got.memory_ids == ["T0", "X0", "X1", "T2"]


def test_the_gate_keeps_neighbours_off_when_an_entity_is_named(conversation):
    # TRL-1 names T0: the keys branch returns it, so neither the dense scan nor the
    # neighbours run; T0 (keys, bm25) and X0 (bm25 of "hiking") are the only candidates
    text = "TRL-1 hiking"
    assert conversation["default"].query(_query(text), 5).memory_ids == ["T0", "X0"]
    gated_raw = conversation["default"].raw_query_call(_query(text), 5)()
    assert gated_raw[0]["dense"] == [] and gated_raw[0]["neighbours"] == []
    # without the gate both run: T1 is read as T0's neighbour (and by the dense scan)
    raw = conversation["ungated"].raw_query_call(_query(text), 5)()
    assert sorted((r[0], r[-1]) for r in raw[0]["neighbours"]) == [(1, 2), (2, 1)]
    assert set(conversation["ungated"].query(_query(text), 5).memory_ids) == {
        "T0",
        "T1",
        "T2",
        "X0",
        "X1",
    }


def test_the_bare_call_returns_the_neighbours_query_fuses(conversation):
    arm = conversation["default"]
    raw = arm.raw_query_call(_query(), 5)()
    assert sorted((r[0], r[-1]) for r in raw[0]["neighbours"]) == [
        (1, 2),
        (2, 1),
    ]  # T0-T1 both ways; X0-X1 at 0.1 is not
    assert arm.raw_ids(raw, 5) == arm.query(_query(), 5).memory_ids


def test_neighbour_params_are_checked():
    for params in (
        {"neighbour_weight": -0.1},
        {"neighbour_weight": float("nan")},
        {"neighbour_min_cosine": 1.5},
        {"neighbour_min_cosine": float("nan")},
        {"neighbour_min_cosine": True},
        {"neighbour_k": 0},
    ):
        with pytest.raises(ValueError, match=next(iter(params))):
            SqliteGatedArm(**params)
