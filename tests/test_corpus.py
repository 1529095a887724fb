"""Corpus generator: determinism, sizes, and the definitional qrels of every class."""

import json

import polars as pl
import pytest

from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus
from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.corpus.templates import DISTRACTORS

SMALL = SizeConfig(facts=300, queries_per_class=10)


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    write_corpus(d, SMALL, CorpusConfig())
    return d


def _load(d):
    return {
        n: pl.read_parquet(d / f"{n}.parquet")
        for n in ("memories", "facts", "queries", "qrels", "sessions")
    }


def test_same_seed_same_bytes_other_seed_differs(tmp_path, corpus_dir):
    a = json.loads((corpus_dir / "manifest.json").read_text())["files"]
    write_corpus(tmp_path / "again", SMALL, CorpusConfig())
    b = json.loads((tmp_path / "again" / "manifest.json").read_text())["files"]
    assert a == b
    assert (corpus_dir / "manifest.json").read_bytes() == (
        tmp_path / "again" / "manifest.json"
    ).read_bytes()
    write_corpus(tmp_path / "other", SMALL, CorpusConfig(seed=1))
    c = json.loads((tmp_path / "other" / "manifest.json").read_text())["files"]
    assert all(a[f] != c[f] for f in ("memories.parquet", "queries.parquet", "qrels.parquet"))


def test_manifest_counts_match_files(corpus_dir):
    m = json.loads((corpus_dir / "manifest.json").read_text())
    t = _load(corpus_dir)
    for key in ("memories", "facts", "sessions", "queries", "distractors", "superseded"):
        assert key in m
    assert m["memories"] == t["memories"].height
    assert m["queries"] == t["queries"].height
    assert m["superseded"] == t["memories"]["superseded_by"].is_not_null().sum()
    assert m["distractors"] == t["memories"]["fact_id"].is_null().sum()
    assert set(m["queries_by_class"]) == set(QUERY_CLASSES)
    assert sum(m["queries_by_class"].values()) == m["queries"]


def test_memories_ordered_in_time_and_sessions_contiguous(corpus_dir):
    mem = _load(corpus_dir)["memories"]
    days = mem["created_day"].to_list()
    assert days == sorted(days)
    assert mem["seq"].to_list() == list(range(mem.height))
    assert mem["memory_id"].n_unique() == mem.height
    turns = mem.group_by("session_id").agg(pl.col("turn_no").sort())
    for row in turns.iter_rows():
        assert row[1] == list(range(len(row[1])))


def test_qrels_are_definitional(corpus_dir):
    t = _load(corpus_dir)
    mem, q, qrels = t["memories"], t["queries"], t["qrels"]
    by_id = {r["memory_id"]: r for r in mem.iter_rows(named=True)}
    rel = qrels.group_by("query_id").agg(pl.col("memory_id"))
    rel = {r[0]: set(r[1]) for r in rel.iter_rows()}
    for row in q.iter_rows(named=True):
        R = rel[row["query_id"]]
        cls = row["class"]
        assert R, row["query_id"]
        if cls in ("currency", "negation"):
            assert len(R) == 1
            (mid,) = R
            fact = by_id[mid]["fact_id"]
            assert by_id[mid]["form"] == "correction"
            assert by_id[mid]["superseded_by"] is None
            olds = mem.filter((pl.col("fact_id") == fact) & (pl.col("memory_id") != mid))
            assert olds.height >= 1 and (olds["superseded_by"] == mid).all()
        elif cls == "provenance":
            sid = row["predicate_value"]
            assert R == set(mem.filter(pl.col("session_id") == sid)["memory_id"])
        elif cls == "aggregate":
            fact = row["predicate_value"]
            expected = set(mem.filter(pl.col("fact_id") == fact)["memory_id"])
            assert R == expected
            assert row["expected_count"] == len(expected) >= 4
        elif cls in ("lexical", "hybrid"):
            facts = {by_id[m]["fact_id"] for m in R}
            assert len(facts) == 1
            assert R == set(mem.filter(pl.col("fact_id") == facts.pop())["memory_id"])
        elif cls == "semantic":
            assert all(by_id[m]["form"] == "para" for m in R)
            ids = [e for m in R for e in by_id[m]["entity_ids"]]
            assert not any(i in row["text"] for i in ids)  # no identifier in the question
        elif cls == "temporal":
            assert row["predicate_field"] == "created_day"
            cut = int(row["predicate_value"])
            assert all(by_id[m]["created_day"] <= cut for m in R)


def test_distractors_assert_nothing(corpus_dir):
    mem = _load(corpus_dir)["memories"]
    d = mem.filter(pl.col("form") == "distractor")
    assert d.height > 0
    assert d["fact_id"].is_null().all()
    stems = [t.split("{rid}")[0] for t in DISTRACTORS]
    assert all(any(b.startswith(s) for s in stems) or "{" not in b for b in d["body"])


def test_paraphrases_carry_no_identifier(corpus_dir):
    mem = _load(corpus_dir)["memories"]
    para = mem.filter(pl.col("form") == "para")
    assert para.height > 0
    assert not para["body"].str.contains(r"[A-Z]{3}-\d+").any()
    ident = mem.filter(pl.col("form") == "id")
    assert ident["body"].str.contains(r"[A-Z]{3}-\d+").all()
