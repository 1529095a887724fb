"""Update anomaly (issue 4): restatement statistics and the top-k repair probe.

The probe runs on a small real corpus (60 facts) with real all-MiniLM-L6-v2 vectors and
real sqlite-fts / file-vec stores, reopened from disk as the pipeline does.
"""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from agentmem.arms import ARMS
from agentmem.arms.base import ArmError
from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import load_corpus, write_corpus
from agentmem.embeddings import embed_corpus, encode, load_embeddings
from agentmem.trials import TrialError
from agentmem.trials.anomaly import (
    ANOMALY_COLUMNS,
    REPAIR_QUESTION,
    _probe_vectors,
    embed_repair_questions,
    repair_probe,
    restatement_counts,
    restatement_stats,
    run_anomaly_probe,
    select_facts,
    write_restatement_stats,
)

K = 10

# --- restatement statistics on a hand-made table --------------------------------------

# restatements per fact: F01..F10 -> 1,1,2,2,2,3,3,4,6,10 (sum 34)
_COUNTS = {
    "F01": 1,
    "F02": 1,
    "F03": 2,
    "F04": 2,
    "F05": 2,
    "F06": 3,
    "F07": 3,
    "F08": 4,
    "F09": 6,
    "F10": 10,
}


def _hand_memories() -> pl.DataFrame:
    fact_ids: list[str | None] = []
    forms: list[str] = []
    for fid, n in _COUNTS.items():
        for j in range(n):
            fact_ids.append(fid)
            forms.append("id" if j == 0 else ("para" if j % 2 else "correction"))
    # distractors: null fact_id, and one that (wrongly) carries a fact_id -> still excluded
    fact_ids += [None, None, "F01"]
    forms += ["distractor", "distractor", "distractor"]
    return pl.DataFrame(
        {
            "memory_id": [f"M{i:03d}" for i in range(len(fact_ids))],
            "fact_id": fact_ids,
            "form": forms,
        },
        schema={"memory_id": pl.String, "fact_id": pl.String, "form": pl.String},
    )


def test_restatement_counts_exclude_distractors():
    counts = dict(restatement_counts(_hand_memories()).iter_rows())
    assert counts == _COUNTS


def test_restatement_stats_hand_computed():
    s = restatement_stats(_hand_memories())
    assert s["facts"] == 10
    assert s["mean"] == pytest.approx(3.4)  # 34 / 10
    assert s["median"] == pytest.approx(2.5)  # (2 + 3) / 2
    assert s["p90"] == 6.0  # nearest rank: ceil(0.9 * 10) = 9th of the sorted counts
    assert s["max"] == 10
    assert s["rows_to_update_normalised"] == 1
    assert s["rows_to_update_denormalised"] == pytest.approx(3.4)


def test_restatement_stats_without_form_column_and_empty():
    mem = _hand_memories().filter(pl.col("form") != "distractor").drop("form")
    assert restatement_stats(mem)["mean"] == pytest.approx(3.4)
    empty = restatement_stats(mem.clear())
    assert empty["facts"] == 0 and empty["rows_to_update_denormalised"] == 0.0
    with pytest.raises(ValueError, match="fact_id"):
        restatement_stats(mem.drop("fact_id"))


def test_select_facts_deterministic_and_eligible():
    mem = _hand_memories()
    eligible = [f for f, n in _COUNTS.items() if n >= 2]
    a = select_facts(mem, 4, seed=7)
    assert a == select_facts(mem, 4, seed=7)
    assert len(a) == 4 and a == sorted(a) and set(a) <= set(eligible)
    assert select_facts(mem, 100, seed=7) == eligible  # fewer eligible than asked: all
    # some seed picks a different subset (the seed matters)
    assert any(select_facts(mem, 4, seed=s) != a for s in range(1, 20))
    with pytest.raises(ValueError, match="at least one"):
        select_facts(mem, 0)
    only_single = mem.filter(pl.col("fact_id").is_in(["F01", "F02"]))
    with pytest.raises(ValueError, match="two or more"):
        select_facts(only_single, 5)


# --- the repair probe on a real small corpus ------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """60-fact corpus, real embeddings, sqlite-fts and file-vec stores built then closed."""
    d = tmp_path_factory.mktemp("anomaly")
    write_corpus(d / "corpus", SizeConfig(facts=60, queries_per_class=3), CorpusConfig())
    embed_corpus(d / "corpus", d / "emb.parquet", d / "cache", progress=False)
    corpus = load_corpus(d / "corpus")
    vectors = load_embeddings(d / "emb.parquet")
    for name in ("sqlite-fts", "file-vec"):
        arm = ARMS[name]()
        arm.build(corpus, vectors, d / "stores" / name)
        arm.close()
    gc.collect()
    return d


def _probe(small: Path, name: str, out: str = "x.csv", **kw) -> dict:
    return run_anomaly_probe(
        name,
        None,
        small / "stores" / name,
        small / "corpus",
        small / "emb.parquet",
        small / "out" / name / out,
        **{"facts": 120, "k": K, "seed": 7, **kw},
    )


def test_probe_bounds_and_csv(small):
    for name in ("sqlite-fts", "file-vec"):
        row = _probe(small, name)
        assert row["arm"] == name
        assert row["facts_probed"] == len(select_facts(load_corpus(small / "corpus").memories, 120))
        assert 0 <= row["mean_reached"] <= row["mean_total"]
        assert row["mean_total"] >= 2  # only facts with >= 2 restatements are probed
        assert 0.0 <= row["stale_fraction"] <= 1.0
        df = pl.read_csv(small / "out" / name / "x.csv")
        assert tuple(df.columns) == ANOMALY_COLUMNS
        assert df.height == 1 and df["arm"][0] == name
        assert df["stale_fraction"][0] == pytest.approx(row["stale_fraction"])


def test_fts_reaches_exactly_the_identifier_bearing_copies(small):
    """FTS finds every copy naming the identifier (id forms, corrections), no paraphrase.

    Paraphrases share no identifier with the question, so for a full-text arm the stale
    share is the paraphrase share of the probed facts' restatements.
    """
    mem = load_corpus(small / "corpus").memories
    chosen = select_facts(mem, 120, seed=7)
    sub = mem.filter(pl.col("fact_id").is_in(chosen) & (pl.col("form") != "distractor"))
    para_share = (sub["form"] == "para").sum() / sub.height
    row = _probe(small, "sqlite-fts")
    assert row["stale_fraction"] == pytest.approx(para_share, abs=1e-6)
    assert row["mean_total"] == pytest.approx(sub.height / len(chosen), abs=1e-6)


def test_dense_repair_leaves_more_stale_than_fts(small):
    fts = _probe(small, "sqlite-fts")
    vec = _probe(small, "file-vec")
    assert fts["mean_total"] == vec["mean_total"]  # same facts probed
    assert vec["stale_fraction"] > fts["stale_fraction"]
    assert vec["mean_reached"] < fts["mean_reached"]


def test_probe_deterministic(small):
    a = _probe(small, "file-vec", out="a.csv")
    b = _probe(small, "file-vec", out="b.csv")
    assert a == b
    out = small / "out" / "file-vec"
    assert (out / "a.csv").read_bytes() == (out / "b.csv").read_bytes()
    fewer = _probe(small, "sqlite-fts", facts=5)
    assert fewer["facts_probed"] == 5


def test_repair_probe_on_open_arm_and_k(small):
    arm = ARMS["sqlite-fts"]()
    arm.open(small / "stores" / "sqlite-fts")
    try:
        r1 = repair_probe(arm, small / "corpus", small / "emb.parquet", facts=120, k=1)
        r10 = repair_probe(arm, small / "corpus", small / "emb.parquet", facts=120, k=10)
        with pytest.raises(ValueError, match="k must be"):
            repair_probe(arm, small / "corpus", small / "emb.parquet", k=0)
    finally:
        arm.close()
    assert r1["mean_reached"] <= 1.0  # one result reaches at most one copy
    assert r1["mean_reached"] <= r10["mean_reached"]
    assert r1["stale_fraction"] >= r10["stale_fraction"]


def test_probe_vectors_reuse_cached_and_encode_the_rest(small):
    q = pl.read_parquet(small / "corpus" / "queries.parquet")
    known = q["text"][0]
    novel = REPAIR_QUESTION.format(subject_id="CFG-0000000")
    vecs, encoded = _probe_vectors([known, novel, known], small / "emb.parquet", None)
    assert encoded == 1 and vecs.shape == (3, 384) and vecs.dtype == np.float32
    stored = load_embeddings(small / "emb.parquet").get([q["query_id"][0]])[0]
    assert np.array_equal(vecs[0], stored) and np.array_equal(vecs[2], stored)
    assert float(vecs[1] @ encode([novel])[0]) == pytest.approx(1.0, abs=1e-5)
    # from the cache directory alone: both texts of the corpus are already there
    vecs2, encoded2 = _probe_vectors([known], None, small / "cache")
    assert encoded2 == 0 and np.allclose(vecs2[0], stored)
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        _probe_vectors([known], small / "nope.parquet", None)


def test_missing_empty_or_wrong_store_is_a_clear_error(small, tmp_path):
    missing = tmp_path / "no-such-store"
    with pytest.raises(TrialError, match="no-such-store.*does not exist"):
        run_anomaly_probe(
            "sqlite-fts", None, missing, small / "corpus", small / "emb.parquet", tmp_path / "o.csv"
        )
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TrialError, match="empty"):
        run_anomaly_probe(
            "sqlite-fts", None, empty, small / "corpus", small / "emb.parquet", tmp_path / "o.csv"
        )
    # a file-vec store is not an SQLite store: the arm's own error names the path
    with pytest.raises(ArmError, match=str(small / "stores" / "file-vec")):
        run_anomaly_probe(
            "sqlite-fts",
            None,
            small / "stores" / "file-vec",
            small / "corpus",
            small / "emb.parquet",
            tmp_path / "o.csv",
        )
    with pytest.raises(KeyError, match="unknown arm"):
        run_anomaly_probe(
            "no-arm", None, small / "stores", small / "corpus", None, tmp_path / "o.csv"
        )
    assert not (tmp_path / "o.csv").exists()


def test_write_restatement_stats(small, tmp_path):
    import json

    s = write_restatement_stats(small / "corpus", tmp_path / "stats.json")
    assert json.loads((tmp_path / "stats.json").read_text()) == s
    mem = load_corpus(small / "corpus").memories
    rendered = mem.filter(pl.col("form") != "distractor")
    assert s["facts"] == 60
    assert s["mean"] == pytest.approx(rendered.height / 60)
    assert s["max"] >= s["p90"] >= s["median"] >= 1


def test_repair_questions_embedded_once_then_probes_encode_nothing(small, tmp_path, caplog):
    """The per-size rule embeds the questions; every arm's probe then only reads them."""
    corpus = load_corpus(small / "corpus")
    chosen = select_facts(corpus.memories, 120, 7)
    subject = dict(zip(corpus.facts["fact_id"], corpus.facts["subject_id"], strict=True))
    out = tmp_path / "repair.parquet"
    stats = embed_repair_questions(small / "corpus", out, small / "cache", facts=120, seed=7)
    assert stats["texts"] == len(chosen)
    assert stats["cached"] + stats["encoded"] == len(chosen)
    df = pl.read_parquet(out)
    assert df["id"].to_list() == [f"repair-{f}" for f in chosen]
    again = embed_repair_questions(small / "corpus", tmp_path / "r2.parquet", small / "cache")
    assert again == {"texts": len(chosen), "cached": len(chosen), "encoded": 0}
    vecs = load_embeddings(out).get([f"repair-{chosen[0]}"])
    want = encode([REPAIR_QUESTION.format(subject_id=subject[chosen[0]])])[0]
    assert float(vecs[0] @ want) == pytest.approx(1.0, abs=1e-5)
    # a probe given this file finds every question there: nothing is encoded
    with caplog.at_level("INFO", logger="agentmem.trials.anomaly"):
        row = run_anomaly_probe(
            "sqlite-fts",
            None,
            small / "stores" / "sqlite-fts",
            small / "corpus",
            out,
            tmp_path / "probe.csv",
            facts=120,
            k=K,
            seed=7,
        )
    assert "(0 texts encoded)" in caplog.text
    assert row == _probe(small, "sqlite-fts", out="same.csv")
