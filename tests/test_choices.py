"""The study's implementation choices: declarations, the arms' parameters, the tables.

Expectations are hand-computed on the ``tiny`` corpus (tests/support/tiny.py), here with
its ``seq`` reversed (M1 has seq 5, ..., M6 seq 0) so that "newest first" and "seq
descending" order ties differently: "CFG-799" is in M1 (day 10), M3 (15), M5 (320).
"""

from __future__ import annotations

import polars as pl
import pytest
from support.hostile import HOSTILE_TEXTS
from support.tiny import fake_query as q, make_tiny

from agentmem.arms import ARMS
from agentmem.arms.files import FileJsonlArm
from agentmem.arms.sqlite import SqliteBtreeArm, SqliteFtsArm, SqliteHybridArm
from agentmem.choices import (
    AS_SHIPPED,
    CHOICES,
    CONFIGURATIONS,
    RUNS_BY_KIND,
    arms_with_choices,
    choice_overrides,
    configuration_choices,
)
from agentmem.report.study_cells import cell_counts, study_cells
from agentmem.sweeps.choices import overlay_choices
from agentmem.text import (
    ADDED_STOPWORDS,
    STOPWORDS,
    STUDY_STOPWORDS,
    check_choice,
    postgres_english_stopwords,
    query_terms,
    study_query_terms,
)

#: the arms that declare the study's choices (the study's ten arms that differ from it)
DECLARING = sorted(n for n, cls in ARMS.items() if getattr(cls, "study_choices", {}))


def reversed_seq():
    corpus, vectors = make_tiny()
    n = corpus.memories.height
    corpus.memories = corpus.memories.with_columns(seq=pl.Series([n - 1 - i for i in range(n)]))
    return corpus, vectors


def test_study_terms_by_hand():
    text = "Everything I recorded during session S-0042: over, once; the CFG-799 café CFG-799"
    assert study_query_terms(text) == [
        "everything",
        "recorded",
        "during",
        "session",
        "s-0042",
        "over",
        "once",
        "cfg-799",
        "caf",
        "cfg-799",
    ]
    # ours drops "during", "over", "once", keeps one cfg-799 and the whole "café"
    assert query_terms(text) == ["everything", "recorded", "session", "s-0042", "cfg-799", "café"]
    assert query_terms(text, extraction="study") == study_query_terms(text)
    assert len(STUDY_STOPWORDS) == 48


def test_our_stopwords_are_postgresqls_english_list_plus_the_added_words():
    pg = postgres_english_stopwords()
    # the Snowball English list PostgreSQL 18 ships: 127 words, "s" and "t" among them
    assert len(pg) == 127 and {"s", "t", "against", "yourselves"} <= pg
    assert STOPWORDS == pg | ADDED_STOPWORDS
    assert "recorded" not in STOPWORDS and "know" in STOPWORDS
    # "service's" splits into "service" and "s"; "s" would match almost every body by substring
    assert query_terms("What is the service's timeout, recorded?") == [
        "service",
        "timeout",
        "recorded",
    ]
    assert study_query_terms("x " * 100 + "timeout " * 40) == ["timeout"] * 32


def test_check_choice_names_the_parameter():
    assert check_choice("terms", "study", ("agentmem", "study")) == "study"
    with pytest.raises(ValueError, match="terms must be one of agentmem, study; got 'porter'"):
        check_choice("terms", "porter", ("agentmem", "study"))


def test_configurations_and_overrides():
    assert CONFIGURATIONS == ("as-shipped", "study", "terms", "ties", "normalisation")
    assert configuration_choices("study") == tuple(CHOICES)
    assert configuration_choices("ties") == ("ties",)
    assert configuration_choices(AS_SHIPPED) == ()
    with pytest.raises(ValueError, match="unknown choices configuration 'porter'"):
        configuration_choices("porter")
    declared = {"terms": {"terms": "study"}, "normalisation": {"rank_normalization": 0}}
    assert choice_overrides(declared, "study") == {"terms": "study", "rank_normalization": 0}
    assert choice_overrides(declared, "ties") == {}
    with pytest.raises(ValueError, match="unknown choices"):
        choice_overrides({"stemming": {}}, "study")
    assert set(RUNS_BY_KIND["study-corpus"]) == set(CONFIGURATIONS) - {AS_SHIPPED}


def test_the_study_arms_that_differ_declare_their_choices():
    assert DECLARING == [
        "file-jsonl",
        "pg-btree",
        "pg-gin",
        "pg-hybrid",
        "sqlite-btree",
        "sqlite-fts",
        "sqlite-hybrid",
    ]
    assert arms_with_choices(["pg-hnsw", "pg-gin", "sqlite-fts"], "normalisation") == ["pg-gin"]


@pytest.mark.parametrize("name", DECLARING)
def test_each_declared_configuration_constructs_and_bad_values_are_refused(name):
    cls = ARMS[name]
    for configuration in CONFIGURATIONS:
        arm = cls(**choice_overrides(cls.study_choices, configuration))
        for param, value in choice_overrides(cls.study_choices, configuration).items():
            assert getattr(arm, param) == value
    for param in {p for o in cls.study_choices.values() for p in o}:
        with pytest.raises(ValueError, match=param):
            cls(**{param: "bogus" if param != "rank_normalization" else 64})


@pytest.mark.parametrize("cls", [SqliteBtreeArm, FileJsonlArm])
def test_scan_arms_seq_tie_break_and_repeated_terms(tmp_path, cls):
    corpus, vectors = reversed_seq()
    arms = {
        "shipped": cls(),
        "ties": cls(tie_break="seq"),
        "terms": cls(terms="study"),
    }
    arms["shipped"].build(corpus, vectors, tmp_path)
    for arm in arms.values():
        arm.open(tmp_path)
    try:
        # every CFG-799 memory scores 1: newest first, or seq descending (M1 5, M3 3, M5 1)
        assert arms["shipped"].query(q("CFG-799"), 10).memory_ids == ["M5", "M3", "M1"]
        assert arms["ties"].query(q("CFG-799"), 10).memory_ids == ["M1", "M3", "M5"]
        # "outage" twice: ours counts it once (M4 ties with the CFG-799 memories, newest
        # first), the study's twice (M4 first)
        text = "outage outage CFG-799"
        assert arms["shipped"].query(q(text), 10).memory_ids == ["M5", "M4", "M3", "M1"]
        assert arms["terms"].query(q(text), 10).memory_ids == ["M4", "M5", "M3", "M1"]
    finally:
        for arm in arms.values():
            arm.close()


def test_fts_engine_tie_break_is_the_engines_own_order(tmp_path):
    corpus, vectors = make_tiny()
    # two memories with one body: equal bm25; the newer (M2, day 12) is stored second
    corpus.memories = corpus.memories.with_columns(
        body=pl.when(pl.col("memory_id") == "M2")
        .then(pl.col("body").filter(pl.col("memory_id") == "M1").first())
        .otherwise(pl.col("body"))
    )
    shipped, engine = SqliteFtsArm(), SqliteFtsArm(tie_break="engine")
    shipped.build(corpus, vectors, tmp_path)
    engine.open(tmp_path)
    try:
        text = "amber timeout"
        assert shipped.query(q(text), 10).memory_ids[:2] == ["M2", "M1"]
        got = engine.query(q(text), 10).memory_ids
        assert got[:2] == ["M1", "M2"]
        # the study's statement, ORDER BY bm25 alone, gives the same order here
        plain = [
            r[0]
            for r in engine._db().execute(
                "SELECT m.memory_id FROM memories_fts JOIN memories AS m "
                "ON m.id = memories_fts.rowid WHERE memories_fts MATCH ? "
                "ORDER BY bm25(memories_fts) LIMIT 10",
                ('"amber" OR "timeout"',),
            )
        ]
        assert plain == got
    finally:
        shipped.close()
        engine.close()


def test_hybrid_memory_id_tie_break(tmp_path):
    # "CFG-799": FTS ranks M3, M1, M5; the fake cosine ranks M3 and M1 tied (8 words each),
    # then M5, then the three others tied at 0. RRF: M3 = 2/61, M1 = 2/62, M5 = 2/63, then
    # M2, M4, M6 at 1/64, 1/65, 1/66 by their vector rank. Under the study's tie-break the
    # vector branch's ties go by rowid (M1 before M3; M2, M4, M6), so M1 = 1/61 + 1/62 and
    # M3 = 1/62 + 1/61 tie and go by memory id: M1 first.
    corpus, vectors = make_tiny()
    shipped, study = SqliteHybridArm(), SqliteHybridArm(tie_break="memory-id")
    shipped.build(corpus, vectors, tmp_path)
    study.open(tmp_path)
    try:
        assert shipped.query(q("CFG-799"), 3).memory_ids == ["M3", "M1", "M5"]
        assert study.query(q("CFG-799"), 10).memory_ids == ["M1", "M3", "M5", "M2", "M4", "M6"]
    finally:
        shipped.close()
        study.close()


def _by_class(rows):
    return pl.DataFrame(
        rows, schema=["arm", "query_class", "ndcg_at_10", "p50_ms"], orient="row"
    ).with_columns(pl.col("ndcg_at_10", "p50_ms").cast(pl.Float64))


def test_overlay_takes_quality_from_the_sweep_and_keeps_latency():
    shipped = _by_class(
        [
            ("sqlite-fts", "lexical", 0.9, 1.0),
            ("sqlite-fts", "provenance", 0.1, 1.0),
            ("pg-hnsw", "lexical", 0.2, 3.0),
        ]
    )
    sweep = pl.DataFrame(
        {
            "choices": ["study", "study", "terms"],
            "arm": ["sqlite-fts", "sqlite-fts", "sqlite-fts"],
            "query_class": ["lexical", "provenance", "lexical"],
            "ndcg_at_10": [0.8, 0.5, 0.7],
            "p50_ms": [9.0, 9.0, 9.0],
        }
    )
    out = overlay_choices(shipped, sweep, "study")
    assert out["ndcg_at_10"].to_list() == [0.8, 0.5, 0.2]
    assert out["p50_ms"].to_list() == [1.0, 1.0, 3.0]
    assert overlay_choices(shipped, sweep, "terms")["ndcg_at_10"].to_list() == [0.7, 0.1, 0.2]
    assert overlay_choices(shipped, sweep, AS_SHIPPED).equals(shipped)
    assert overlay_choices(shipped, sweep, "normalisation").equals(shipped)


def test_study_cells_and_counts_by_hand():
    # published (the study's §3 grid): sqlite-fts lexical .791, semantic .653
    shipped = _by_class(
        [("sqlite-fts", "lexical", 0.781, 1.0), ("sqlite-fts", "semantic", 0.548, 1.0)]
    )
    sweep = pl.DataFrame(
        {
            "choices": ["study", "study"],
            "arm": ["sqlite-fts", "sqlite-fts"],
            "query_class": ["lexical", "semantic"],
            "ndcg_at_10": [0.791, 0.608],
        }
    )
    cells = study_cells(shipped, sweep).filter(pl.col("query_class").is_in(["lexical", "semantic"]))
    assert cells.select("query_class", "published", "as_shipped", "study_choices").rows() == [
        ("lexical", 0.791, 0.781, 0.791),
        ("semantic", 0.653, 0.548, 0.608),
    ]
    assert cells["terms"].to_list() == [None, None]
    assert cells["hnsw"].to_list() == [False, False]
    counts = {r["configuration"]: r for r in cell_counts(cells).iter_rows(named=True)}
    assert set(counts) == {"as_shipped", "study_choices"}
    # as shipped |.781 - .791| = .010, |.548 - .653| = .105; the study's 0 and .045
    assert (counts["as_shipped"]["within_0.03"], counts["as_shipped"]["within_0.05"]) == (1, 1)
    assert (counts["study_choices"]["within_0.03"], counts["study_choices"]["within_0.05"]) == (
        1,
        2,
    )
    assert counts["study_choices"]["mean_abs_diff"] == pytest.approx(0.0225)


@pytest.mark.parametrize("name", DECLARING)
def test_hostile_text_under_the_studys_choices(tmp_path, name):
    """The study's term extraction keeps repeats and splits on anything but [a-z0-9_-]: no
    hostile text may crash an arm under it, and "CFG-799" still finds its three memories."""
    corpus, vectors = make_tiny()
    built = ARMS[name]()
    try:
        built.build(corpus, vectors, tmp_path)
    finally:
        built.close()
    arm = ARMS[name](**choice_overrides(ARMS[name].study_choices, "study"))
    arm.open(tmp_path)
    try:
        for text in HOSTILE_TEXTS:
            assert len(arm.query(q(text), 10).memory_ids) <= 10
        assert {"M1", "M3", "M5"} <= set(arm.query(q("CFG-799 CFG-799"), 10).memory_ids)
    finally:
        arm.close()
