"""Corpus generator: determinism, sizes, the definitional qrels of every class, and the
study's specification (Table 5, restatements, counts) at the main size."""

import json

import polars as pl
import pytest
from support.corpora import embedding_cache, encoder_options
from support.paths import REPO

from agentmem.config import CorpusConfig, SizeConfig, load_config
from agentmem.corpus import write_corpus
from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.corpus.spec import corpus_spec_table, restatement_stats
from agentmem.corpus.templates import DISTRACTORS

SMALL = SizeConfig(facts=300, queries_per_class=10)
CONFIG = load_config(REPO / "config" / "config.yaml")
MAIN = CONFIG.sizes[CONFIG.main_size]


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


def test_paraphrases_name_the_service_or_spell_it_out(corpus_dir):
    """Questions use the hyphenated service name; memories write it so or spell it out."""
    t = _load(corpus_dir)
    ents = pl.read_parquet(corpus_dir / "entities.parquet").filter(pl.col("type") == "service")
    names = ents["name"].to_list()
    assert all("-" in n and " " not in n for n in names)
    para = t["memories"].filter(pl.col("form") == "para")["body"].to_list()
    hyphenated = sum(any(n in b for n in names) for b in para) / len(para)
    spelled = sum(any(n.replace("-", " ") in b for n in names) for b in para) / len(para)
    assert 0.6 < hyphenated < 0.85 and hyphenated + spelled == pytest.approx(1.0, abs=0.02)
    sem = t["queries"].filter(pl.col("class") == "semantic")["text"].to_list()
    assert all(any(n in q for n in names) for q in sem)


# --- the study's specification at the main size (a property of the generator) ---------


@pytest.fixture(scope="module")
def main_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("main")
    write_corpus(d, MAIN, CONFIG.corpus)
    return d


def test_main_size_restatements_tokens_and_counts_match_the_study(main_dir):
    mem = pl.read_parquet(main_dir / "memories.parquet")
    manifest = json.loads((main_dir / "manifest.json").read_text())
    spec = corpus_spec_table(mem, manifest)
    failing = spec.filter(~pl.col("pass").fill_null(False))
    assert failing.is_empty(), f"outside the study's tolerance:\n{failing}"
    s = restatement_stats(mem)
    assert (s["median"], s["max"]) == (3, 15)
    assert abs(s["mean"] - 3.69) <= 0.3 and abs(s["p90"] - 8) <= 1
    assert abs(s["single_memory_facts"] - 805) <= 80.5
    assert abs(manifest["tokens_per_memory"] - 25.4) <= 2.54
    assert manifest["queries_by_class"] == dict.fromkeys(QUERY_CLASSES, 40)


def test_main_size_table5_matches_the_study(main_dir, request, tmp_path):
    """Every Table 5 cell within the study's tolerance, with real all-MiniLM-L6-v2 vectors.

    Only the texts the table reads are embedded (queries, their relevant memories, the
    memories of the random pairs), through a cache kept in pytest's cache directory (the
    session's embedding cache without one), with the tests' encoder.
    """
    from agentmem.arms.base import Embeddings
    from agentmem.corpus.validation import (
        STATISTICS,
        ValidationInput,
        random_pair_indices,
        validation_table_from,
    )
    from agentmem.embeddings import embed_texts, load_embeddings

    mem = pl.read_parquet(main_dir / "memories.parquet")
    q = pl.read_parquet(main_dir / "queries.parquet")
    qrels = pl.read_parquet(main_dir / "qrels.parquet")
    a, b = random_pair_indices(mem.height, 1000, CONFIG.corpus.seed)
    ids = mem["memory_id"].to_list()
    need = set(qrels["memory_id"].to_list()) | {ids[i] for i in (*a.tolist(), *b.tolist())}
    sub = mem.filter(pl.col("memory_id").is_in(sorted(need)))
    # pytest's cache directory keeps the vectors between runs; without it (-p no:cacheprovider)
    # they go to the session's embedding cache
    store = getattr(request.config, "cache", None)
    cache = store.mkdir("agentmem-embeddings") if store is not None else embedding_cache()
    embed_texts(
        q["query_id"].to_list() + sub["memory_id"].to_list(),
        q["text"].to_list() + sub["body"].to_list(),
        tmp_path / "emb.parquet",
        cache,
        progress=False,
        **encoder_options(),
    )
    vec = load_embeddings(tmp_path / "emb.parquet")
    data = ValidationInput(mem, q, qrels, Embeddings(ids=vec.ids, matrix=vec.matrix))
    table = validation_table_from(data, random_pairs=1000, seed=CONFIG.corpus.seed)
    bad = [
        (r["query_class"], s, r[s], r[f"{s}_study"])
        for r in table.iter_rows(named=True)
        for s in STATISTICS
        if r[f"{s}_pass"] is False or (r[f"{s}_study"] is not None and r[s] is None)
    ]
    assert not bad, f"(class, statistic, ours, study) outside tolerance: {bad}"
    assert table["all_pass"].all()
    rows = {r["query_class"]: r for r in table.iter_rows(named=True)}
    # the contrasts the study draws from the table (docs/STUDY.md §7, finding 12)
    assert abs(rows["lexical"]["mean_cosine"] - rows["random_pairs"]["mean_cosine"]) < 0.05
    assert rows["semantic"]["mean_cosine"] > rows["random_pairs"]["mean_cosine"] + 0.4
    assert rows["semantic"]["identifier_overlap"] == 0.0


def test_light_only_restatements_and_stale_restatements_after_the_correction():
    from agentmem.config import variant_options
    from agentmem.corpus.generate import generate

    light = generate(
        SMALL, variant_options(CorpusConfig(), {"restatements": {"every_nth_heavy": 0}})
    )
    per_fact = light.memories.filter(pl.col("form").is_in(["id", "para"])).group_by("fact_id").len()
    assert per_fact["len"].max() <= CorpusConfig().restatements.light_max
    opts = variant_options(CorpusConfig(), {"restated_after_correction": 1.0})
    g = generate(SMALL, opts)
    mem = g.memories
    corrected = g.facts.filter(pl.col("correction_memory_id").is_not_null())
    late = mem.filter(
        pl.col("superseded_by").is_not_null() & (pl.col("created_day") > opts.correction_day)
    )
    # share 1.0: every corrected fact gets one stale restatement, newer than its correction,
    # identifier-bearing, and superseded by that correction
    assert late.height == corrected.height > 0
    assert set(late["form"]) == {"id"}
    joined = late.join(corrected, on="fact_id")
    assert (joined["superseded_by"] == joined["correction_memory_id"]).all()
    assert (
        joined.join(
            mem.select("memory_id", pl.col("created_day").alias("fixed")),
            left_on="superseded_by",
            right_on="memory_id",
        )
        .select((pl.col("created_day") > pl.col("fixed")).all())
        .item()
    )
    # the default share draws nothing extra: no memory after the correction is superseded
    default = generate(SMALL, CorpusConfig()).memories
    assert default.filter(
        pl.col("superseded_by").is_not_null() & (pl.col("created_day") > 320)
    ).is_empty()
