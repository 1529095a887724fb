"""Tests for the decay sweep, its figure, and the graph arm's conflict-resolution cases.

The decay sweep runs on the small generated corpus (``support.corpora.small_corpus``, 80
facts) with real embeddings and a real ``sqlite-graph`` store. Its pruned
fraction and valid-fact recall are checked against an independent Python computation of
the seed's rule: a node's confidence on day ``d`` is ``base * exp(-rate * (d - last) **
0.8)`` with ``(base, rate, last) = (confidence, DECAY_RATES[type], created_day)``, or
``(0.3, 0.5, day of its correction)`` for a superseded node; it is pruned once that is
below 0.05, never when episodic.

The conflict tests drive the graph arm through its public API (add_node / correct /
query) on the ``tiny`` corpus with the deterministic fake vectors of tests/support/tiny.py.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import polars as pl
import pytest
from support.corpora import small_corpus
from support.tiny import fake_vector, make_tiny

from agentmem.arms.base import Query
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
from agentmem.report.figures.decay import plot
from agentmem.sweeps.decay import DECAY_SCHEMA, decay_sweep

LONG_DAYS = list(range(0, 2001, 100))  # long enough for semantic nodes to be pruned


def expected_state(memories: pl.DataFrame, day: int) -> tuple[float, float]:
    """(pruned fraction, valid-fact recall) on ``day`` by the rule in the module docstring."""
    created = dict(zip(memories["memory_id"], memories["created_day"], strict=True))
    pruned = 0
    valid: dict[str, bool] = {}
    for r in memories.iter_rows(named=True):
        ntype = node_type_of(r["kind"])
        if r["superseded_by"] is not None:
            base, rate, last = (
                CORRECTED_CONFIDENCE,
                CORRECTED_DECAY_RATE,
                created[r["superseded_by"]],
            )
        else:
            base, rate, last = r["confidence"], DECAY_RATES[ntype], r["created_day"]
        gone = ntype != "episodic" and decayed_confidence(base, rate, day - last) < PRUNE_BELOW
        pruned += gone
        if r["fact_id"] is not None and r["superseded_by"] is None:
            valid[r["fact_id"]] = valid.get(r["fact_id"], False) or not gone
    return pruned / memories.height, sum(valid.values()) / len(valid)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return small_corpus(tmp_path_factory)


@pytest.fixture(scope="module")
def memories(corpus: tuple[Path, Path]) -> pl.DataFrame:
    return pl.read_parquet(corpus[0] / "memories.parquet")


@pytest.fixture(scope="module")
def year(corpus, tmp_path_factory):
    corpus_dir, emb = corpus
    return decay_sweep(corpus_dir, emb, tmp_path_factory.mktemp("decay-year"))


@pytest.fixture(scope="module")
def long_run(corpus, tmp_path_factory):
    corpus_dir, emb = corpus
    work = tmp_path_factory.mktemp("decay-long")
    # days given out of order and repeated: processed once each, ascending
    days = [*reversed(LONG_DAYS), 300]
    return decay_sweep(corpus_dir, emb, work, days=days), work


def test_columns_and_default_days(year):
    assert year.columns == [
        "day",
        "pruned_fraction",
        "context_tokens_per_query",
        "currency_ndcg",
        "lexical_ndcg",
        "valid_fact_recall",
    ]
    assert dict(year.schema) == DECAY_SCHEMA
    assert year["day"].to_list() == list(range(0, 366, 7))
    for c in ("currency_ndcg", "lexical_ndcg"):
        assert year[c].null_count() == 0 and year[c].is_between(0, 1).all()
    assert (year["context_tokens_per_query"] > 0).all()


def test_within_a_year_only_superseded_nodes_go(year, memories):
    # superseded nodes restart at the correction day (320) with 0.3 / 0.5: pruned from
    # day 325 on (0.3 * exp(-0.5 * 5 ** 0.8) = 0.047); nothing current ever goes
    corr_day = int(memories.filter(pl.col("form") == "correction")["created_day"].min())
    assert corr_day == 320
    before = year.filter(pl.col("day") < corr_day + 2)
    assert (before["pruned_fraction"] == 0).all()
    sup = memories.filter(
        pl.col("superseded_by").is_not_null() & (pl.col("kind") != "episodic")
    ).height
    assert sup > 0
    after = year.filter(pl.col("day") >= corr_day + 7)
    assert after["pruned_fraction"].to_list() == pytest.approx(
        [sup / memories.height] * after.height
    )
    assert (year["valid_fact_recall"] == 1.0).all()
    # hand-computed rule, day by day
    for day, frac, valid in year.select("day", "pruned_fraction", "valid_fact_recall").rows():
        assert (frac, valid) == pytest.approx(expected_state(memories, day))


def test_days_that_prune_nothing_carry_the_measures_of_the_day_before(corpus, year, tmp_path):
    corpus_dir, emb = corpus
    every_day = decay_sweep(corpus_dir, emb, tmp_path, rerun_unchanged=True)
    assert every_day.equals(year)
    # the carried-over days are most of the year: only the first day and the pruning ones ran
    changed = year["pruned_fraction"].diff().fill_null(1.0) != 0
    assert 0 < int(changed.sum()) < year.height // 4


def test_long_horizon_matches_the_formula(long_run, memories):
    table, _ = long_run
    assert table["day"].to_list() == sorted({*LONG_DAYS, 300})
    frac = table["pruned_fraction"].to_list()
    assert all(b >= a for a, b in zip(frac, frac[1:], strict=False))  # non-decreasing
    assert frac[-1] > 0.3  # semantic memories are forgotten within ~900-1,300 days
    rec = table["valid_fact_recall"].to_list()
    assert rec[0] == 1.0 and rec[-1] < 1.0
    for day, f, v in table.select("day", "pruned_fraction", "valid_fact_recall").rows():
        assert (f, v) == pytest.approx(expected_state(memories, day))
    # by day 2000 every semantic memory has decayed away (confidence <= 1, rate 0.01:
    # below 0.05 after 1,248 days unaccessed; written by day 364); episodic ones never go
    semantic = memories.filter(pl.col("kind") == "semantic").height
    episodic = memories.filter(pl.col("kind") == "episodic").height
    assert semantic / memories.height <= frac[-1] <= 1 - episodic / memories.height


def test_episodic_nodes_never_pruned_and_confidence_formula(long_run):
    _, work = long_run
    db = apsw.Connection(str(work / "sqlite-graph" / DB_NAME), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        n_epi, pruned_epi = db.execute(
            "SELECT count(*), count(pruned_day) FROM nodes WHERE node_type = 'episodic'"
        ).fetchall()[0]
        assert n_epi > 0 and pruned_epi == 0
        # every surviving non-episodic node holds the formula's value for the last day
        last = max(LONG_DAYS)
        for base, rate, last_access, conf in db.execute(
            "SELECT base_confidence, decay_rate, last_access_day, confidence FROM nodes "
            "WHERE node_type <> 'episodic' AND pruned_day IS NULL"
        ):
            assert conf == pytest.approx(decayed_confidence(base, rate, last - last_access))
            assert conf >= PRUNE_BELOW
        # pruned nodes left the FTS and vector indexes
        assert db.execute(
            "SELECT count(*) FROM node_vectors WHERE id IN "
            "(SELECT id FROM nodes WHERE pruned_day IS NOT NULL)"
        ).fetchall() == [(0,)]
    finally:
        db.close()


def test_bad_days(corpus, tmp_path):
    corpus_dir, emb = corpus
    with pytest.raises(ValueError):
        decay_sweep(corpus_dir, emb, tmp_path, days=[])
    with pytest.raises(ValueError):
        decay_sweep(corpus_dir, emb, tmp_path, days=[-7, 0])
    with pytest.raises(ValueError):
        decay_sweep(corpus_dir, emb, tmp_path, days=[0], k=0)


def test_figure(long_run, tmp_path):
    csv = tmp_path / "decay.csv"
    long_run[0].write_csv(csv)
    plot(csv, tmp_path / "decay.svg")
    assert (tmp_path / "decay.svg").stat().st_size > 1000
    assert (tmp_path / "decay.png").stat().st_size > 1000


# ------------------------------------------------------------------ conflict resolution
@pytest.fixture
def graph(tmp_path: Path):
    corpus, vectors = make_tiny()
    arm = SqliteGraphArm()
    arm.build(corpus, vectors, tmp_path)
    yield arm
    arm.close()


def ask(arm: SqliteGraphArm, text: str) -> list[str]:
    return arm.query(Query("q", text, fake_vector(text)), 10).memory_ids


def test_preference_changes_twice_only_current_value(graph):
    py = "The user prefers Python."
    go = "The user now writes Go."
    rust = "The user now writes Rust."
    a = graph.add_node(py, "opinion", day=400, fact_id="lang", embedding=fake_vector(py))
    b = graph.correct(a, go, 420, embedding=fake_vector(go))
    c = graph.correct(b, rust, 440, embedding=fake_vector(rust))
    for text in (
        "Which language should I use?",
        "Which language should I use for the user: Python?",
        "Does the user still write Go?",
        "The user prefers Python.",  # the old statement itself
    ):
        ids = ask(graph, text)
        assert c in ids and a not in ids and b not in ids, (text, ids)
    # once decayed, the old values are pruned, and still only the current one is returned
    graph.decay(460)
    assert ask(graph, "Which language should I use?").count(c) == 1
    assert {a, b}.isdisjoint(ask(graph, "The user prefers Python."))


def test_job_change_only_current_value(graph):
    old = "Dana works at Acme."
    new = "Dana now works at Globex."
    a = graph.add_node(old, "semantic", day=400, fact_id="job", embedding=fake_vector(old))
    b = graph.correct(a, new, 450, embedding=fake_vector(new))
    for text in ("Where does Dana work?", "Dana Acme", "Who employs Dana?"):
        ids = ask(graph, text)
        assert ids and ids[0] == b and a not in ids, (text, ids)
