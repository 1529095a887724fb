"""Corpus validation table and dense-failure probe: hand-made corpus and a real generated one."""

import math

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.corpora import build_corpus

from agentmem.arms.base import Embeddings
from agentmem.config import SizeConfig
from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.corpus.validation import (
    PROBE_SCHEMA,
    STATISTICS,
    TABLE_SCHEMA,
    ValidationInput,
    dense_failure_probe,
    identifiers,
    random_pair_indices,
    rare_terms,
    study_terms,
    validation_table,
    validation_table_from,
    write_validation,
)

DIM = 384


def e(*pairs):
    """A 384-d vector with the given (axis, value) entries (not normalised)."""
    v = np.zeros(DIM, dtype=np.float32)
    for axis, value in pairs:
        v[axis] = value
    return v


# memory_id, form, body, vector
MEMORIES = [
    ("M1", "id", "CFG-799 sets the timeout of SVC-5345 to 30s.", e((0, 0.6), (1, 0.8))),
    ("M2", "para", "The amber ledger gateway waits half a minute per call.", e((1, 1))),
    ("M3", "distractor", "Someone asked about CFG-799 in chat; nothing decided.", e((0, 1))),
    ("M4", "id", "INC-2356: SVC-5345 outage caused by a full disk.", e((3, 2))),
] + [(f"H{i}", "id", f"host h{i} rebooted after patching", e((3 + i, 1))) for i in range(1, 7)]

# query_id, class, text, vector, relevant memories
QUERIES = [
    ("lexical-001", "lexical", "Summarise CFG-799 for me.", e((0, 1)), ["M1", "M2"]),
    (
        "semantic-001",
        "semantic",
        "How long does the amber ledger gateway wait?",
        e((1, 1), (2, 1)),
        ["M2"],
    ),
    ("provenance-001", "provenance", "?!", e((0, 1)), ["M1"]),
    (
        "currency-001",
        "currency",
        "What caused the SVC-5345 outage on the host yesterday?",
        e((3, 1)),
        ["M4"],
    ),
    ("negation-001", "negation", "CFG-799 and INC-2356 timeout", e((0, 1)), ["M1"]),
]


def write_hand_corpus(d):
    d.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {
            "memory_id": [m[0] for m in MEMORIES],
            "form": [m[1] for m in MEMORIES],
            "body": [m[2] for m in MEMORIES],
        }
    ).write_parquet(d / "memories.parquet")
    pl.DataFrame(
        {
            "query_id": [q[0] for q in QUERIES],
            "class": [q[1] for q in QUERIES],
            "text": [q[2] for q in QUERIES],
            "similarity_expressible": [q[1] in {"lexical", "semantic"} for q in QUERIES],
        }
    ).write_parquet(d / "queries.parquet")
    pl.DataFrame(
        [(q[0], m) for q in QUERIES for m in q[4]],
        schema={"query_id": pl.String, "memory_id": pl.String},
        orient="row",
    ).write_parquet(d / "qrels.parquet")
    ids = [m[0] for m in MEMORIES] + [q[0] for q in QUERIES]
    mat = np.stack([m[3] for m in MEMORIES] + [q[3] for q in QUERIES])
    vec = pa.FixedSizeListArray.from_arrays(pa.array(mat.reshape(-1), pa.float32()), DIM)
    table = pa.table({"id": pa.array(ids), "sha256": pa.array(["x"] * len(ids)), "vector": vec})
    pq.write_table(table, d / "emb.parquet")
    return d, d / "emb.parquet"


@pytest.fixture
def hand(tmp_path):
    return write_hand_corpus(tmp_path / "hand")


def test_helpers():
    assert study_terms("The CFG-799 timeout, the TIMEOUT! a b") == {"cfg-799", "timeout"}
    assert rare_terms("billing-api waits 30s on CFG-799 per max_pool_size") == {
        "billing-api",
        "30s",
        "cfg-799",
        "max_pool_size",
    }
    assert identifiers("CFG-799, SVC-5345, billing-api, cfg-1, ABCD-12, s-0042, S00042") == {
        "cfg-799",
        "svc-5345",
        "cfg-1",
        "s-0042",
    }
    a, b = random_pair_indices(5, 1000, seed=1)
    assert (a != b).all() and a.min() >= 0 and max(a.max(), b.max()) <= 4
    assert set(a.tolist()) == set(range(5)) == set(b.tolist())
    with pytest.raises(ValueError, match="no memory pairs"):
        random_pair_indices(1, 10, seed=1)


def test_hand_made_table(hand):
    t = validation_table(*hand, random_pairs=400, seed=3)
    assert t.columns == list(TABLE_SCHEMA)
    assert t["query_class"].to_list() == [*QUERY_CLASSES, "random_pairs"]
    rows = {r["query_class"]: r for r in t.iter_rows(named=True)}

    # lexical: terms(q) = {summarise, cfg-799} ("for", "me" are stopwords); M1 shares
    # cfg-799, M2 nothing. rare(q) = ids(q) = {cfg-799}. cosine: q = e0; M1 = .6 e0 + .8 e1
    # -> .6; M2 = e1 -> 0.
    lex = rows["lexical"]
    assert (lex["queries"], lex["pairs"]) == (1, 2)
    assert lex["term_overlap"] == pytest.approx(0.25)
    assert lex["rare_term_overlap"] == pytest.approx(0.5)
    assert lex["identifier_overlap"] == pytest.approx(0.5)
    assert lex["mean_cosine"] == pytest.approx(0.3)
    assert lex["relevant_per_query"] == pytest.approx(2.0)
    assert lex["similarity_expressible"] is True
    # beside the study's Table 5: only the cosine is within tolerance (.3 vs .277, ±.05)
    assert lex["term_overlap_study"] == 0.322 and lex["relevant_per_query_study"] == 2.6
    assert [lex[f"{s}_pass"] for s in STATISTICS] == [False, False, False, True, False]
    assert lex["all_pass"] is False

    # semantic: terms(q) = {long, amber, ledger, gateway, wait}; M2 shares amber, ledger,
    # gateway -> 3/5. No rare term, no identifier: both 0 (the study's convention).
    # cosine of (e1 + e2) (not unit) with e1 = 1/sqrt(2).
    sem = rows["semantic"]
    assert sem["term_overlap"] == pytest.approx(0.6)
    assert sem["rare_term_overlap"] == 0.0
    assert sem["identifier_overlap"] == 0.0
    assert sem["mean_cosine"] == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    assert sem["term_overlap_pass"] is True  # .6 vs .586
    assert sem["identifier_overlap_pass"] is True  # 0 vs 0
    assert sem["rare_term_overlap_pass"] is False  # 0 vs .669

    # currency: terms(q) = {caused, svc-5345, outage, host, yesterday}; M4 shares 3 -> 3/5.
    # rare(q) = ids(q) = {svc-5345}, in M4 -> 1. M4's vector is 2·e3 (renormalised) -> 1.
    cur = rows["currency"]
    assert cur["term_overlap"] == pytest.approx(0.6)
    assert cur["rare_term_overlap"] == pytest.approx(1.0)
    assert cur["identifier_overlap"] == pytest.approx(1.0)
    assert cur["mean_cosine"] == pytest.approx(1.0)
    assert cur["similarity_expressible"] is False
    assert [cur[f"{s}_pass"] for s in STATISTICS] == [False, True, True, False, True]

    # negation: two identifiers in the question, one of them in M1 -> 1/2; terms(q) =
    # {cfg-799, inc-2356, timeout}, M1 shares cfg-799 and timeout -> 2/3.
    neg = rows["negation"]
    assert neg["identifier_overlap"] == pytest.approx(0.5)
    assert neg["rare_term_overlap"] == pytest.approx(0.5)
    assert neg["term_overlap"] == pytest.approx(2 / 3)

    # provenance: punctuation-only query has no terms -> 0, not a division error.
    prov = rows["provenance"]
    assert (prov["term_overlap"], prov["rare_term_overlap"], prov["identifier_overlap"]) == (
        0.0,
        0.0,
        0.0,
    )
    assert prov["mean_cosine"] == pytest.approx(0.6)

    # classes without queries: counts 0, means and passes null, flag from the class
    hyb = rows["hybrid"]
    assert (hyb["queries"], hyb["pairs"], hyb["mean_cosine"]) == (0, 0, None)
    assert hyb["relevant_per_query"] is None and hyb["identifier_overlap"] is None
    assert hyb["mean_cosine_pass"] is None and hyb["all_pass"] is False
    assert hyb["similarity_expressible"] is True

    rnd = rows["random_pairs"]
    assert rnd["pairs"] == 400
    assert rnd["queries"] is None and rnd["term_overlap"] is None
    assert 0.0 <= rnd["mean_cosine"] <= 1.0
    assert rnd["mean_cosine_study"] == 0.266 and rnd["term_overlap_study"] is None
    assert rnd["all_pass"] is rnd["mean_cosine_pass"]


def test_random_pairs_never_pair_a_memory_with_itself():
    # two memories e0 and e0 + e1: every pair of distinct memories has cosine 1/sqrt(2);
    # a self-pair would have cosine 1 and pull the mean up.
    data = ValidationInput(
        memories=pl.DataFrame({"memory_id": ["A", "B"], "form": ["id", "id"], "body": ["a", "b"]}),
        queries=pl.DataFrame(
            schema={
                "query_id": pl.String,
                "class": pl.String,
                "text": pl.String,
                "similarity_expressible": pl.Boolean,
            }
        ),
        qrels=pl.DataFrame(schema={"query_id": pl.String, "memory_id": pl.String}),
        vectors=Embeddings(ids=["A", "B"], matrix=np.stack([e((0, 1)), e((0, 1), (1, 1))])),
    )
    t = validation_table_from(data, random_pairs=500, seed=7)
    assert t.filter(pl.col("query_class") == "random_pairs")["mean_cosine"][0] == pytest.approx(
        1 / math.sqrt(2), abs=1e-6
    )
    assert t.filter(pl.col("query_class") != "random_pairs")["pairs"].sum() == 0
    with pytest.raises(ValueError, match="random_pairs must be >= 400"):
        validation_table_from(data, random_pairs=399)


def test_hand_made_probe(hand):
    p = dense_failure_probe(*hand)
    assert p.columns == list(PROBE_SCHEMA)
    # q = e0: M3 (the distractor, = e0) scores 1, M1 scores .6, the rest 0.
    assert p.to_dicts() == [
        {
            "query_id": "lexical-001",
            "first_relevant_rank": 2,
            "memories": 10,
            "top_is_distractor": True,
            "top_memory_id": "M3",
        }
    ]
    assert dense_failure_probe(*hand, n=0).height == 0


def test_missing_inputs_named(tmp_path, hand):
    with pytest.raises(FileNotFoundError, match="memories.parquet"):
        validation_table(tmp_path / "nowhere", hand[1])
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        dense_failure_probe(hand[0], tmp_path / "nope.parquet")


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return build_corpus(
        tmp_path_factory.mktemp("valcorpus"), SizeConfig(facts=150, queries_per_class=8)
    )


def test_real_corpus_has_the_designed_properties(real, tmp_path):
    table_csv, probe_csv = tmp_path / "t" / "validation.csv", tmp_path / "t" / "probe.csv"
    spec_csv = tmp_path / "t" / "spec.csv"
    t, p = write_validation(
        *real, table_csv, probe_csv, random_pairs=1000, seed=0, spec_csv=spec_csv
    )
    assert pl.read_csv(table_csv).columns == list(TABLE_SCHEMA)
    spec = pl.read_csv(spec_csv)
    assert spec.columns == ["statistic", "ours", "study", "tolerance", "pass"]
    facts = spec.filter(pl.col("statistic") == "facts").row(0, named=True)
    assert (facts["ours"], facts["study"], facts["pass"]) == (150, 2500, False)  # not size m
    assert pl.read_csv(probe_csv).height == p.height
    rows = {r["query_class"]: r for r in t.iter_rows(named=True)}
    rnd = rows["random_pairs"]["mean_cosine"]
    assert rows["semantic"]["identifier_overlap"] == 0.0
    assert rows["lexical"]["identifier_overlap"] > 0.5
    assert abs(rows["lexical"]["mean_cosine"] - rnd) < 0.1
    assert rows["semantic"]["mean_cosine"] > 0.6
    assert {r["similarity_expressible"] for c, r in rows.items() if c != "random_pairs"} == {
        True,
        False,
    }
    assert all(rows[c]["queries"] > 0 for c in QUERY_CLASSES)

    memories = pl.read_parquet(real[0] / "memories.parquet").height
    assert p.columns == list(PROBE_SCHEMA)
    assert p.height == rows["lexical"]["queries"]
    assert p["first_relevant_rank"].min() >= 1
    assert p["first_relevant_rank"].max() <= memories
    assert set(p["memories"].to_list()) == {memories}
    # most lexical questions have a distractor as their nearest memory
    assert p["top_is_distractor"].mean() > 0.5


def test_figure_written(real, tmp_path):
    from agentmem.report.figures.validation import plot

    csv = tmp_path / "validation.csv"
    write_validation(*real, csv, tmp_path / "probe.csv")
    plot(csv, tmp_path / "fig" / "validation.svg")
    assert (tmp_path / "fig" / "validation.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "fig" / "validation.png").stat().st_size > 0


def test_study_values_agree_with_the_reference_transcription():
    """The Table 5 values the validation checks are the ones vs_reference compares."""
    from agentmem.corpus.spec import COUNTS, RANDOM_PAIR_COSINE, RESTATEMENTS, TABLE5
    from agentmem.report import reference as R

    assert {c: TABLE5[c]["mean_cosine"] for c in QUERY_CLASSES} == {
        c: R.VALIDATION_COSINE[c] for c in QUERY_CLASSES
    }
    assert RANDOM_PAIR_COSINE == R.VALIDATION_COSINE["random_pairs"]
    assert all(TABLE5[c]["identifier_overlap"] == v for c, v in R.IDENTIFIER_OVERLAP.items())
    assert {k: RESTATEMENTS[k] for k in R.RESTATEMENTS} == R.RESTATEMENTS
    assert COUNTS == R.CORPUS
    assert sum(R.QUERY_COUNTS.values()) == COUNTS["queries"]
