"""The study's own corpus read into the corpus layout (agentmem.corpus.study)."""

import json
import lzma
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from agentmem.corpus.study import StudyCorpusError, import_study_corpus, study_tables
from agentmem.report.reference.study import CORPUS, SUPERSEDED_FACTS

REPO = Path(__file__).resolve().parents[1]
STUDY_FILE = REPO.parent / "shared" / "study-corpus" / "corpus.json.xz"


TINY = REPO / "tests" / "data" / "study-corpus-tiny.json"


def tiny() -> dict:
    """The generator's layout in small: two sessions, one corrected fact (M2 by M4), a
    paraphrase (M3), a distractor (M1), one query per class."""
    return json.loads(TINY.read_text())


def test_tables_of_a_tiny_study_corpus():
    t = study_tables(tiny())
    mem = t["memories"]
    assert mem["memory_id"].to_list() == ["M1", "M2", "M3", "M4"]  # in the study's seq order
    assert mem["form"].to_list() == ["distractor", "id", "para", "correction"]
    assert mem["superseded_by"].to_list() == [None, "M4", None, None]
    assert mem["created_day"].to_list() == [5, 6, 7, 41]
    assert mem["scope_id"].null_count() == 4 and (mem["tokens"] > 0).all()
    q = {r["query_id"]: r for r in t["queries"].iter_rows(named=True)}
    assert (q["Q-tmp"]["predicate_field"], q["Q-tmp"]["predicate_op"]) == ("created_day", "<=")
    assert q["Q-tmp"]["predicate_value"] == "10"
    assert (q["Q-agg"]["predicate_field"], q["Q-agg"]["predicate_value"]) == (
        "fact_id",
        "F-inc-INC-7",
    )
    assert q["Q-agg"]["expected_count"] == 2
    assert (q["Q-prv"]["predicate_field"], q["Q-prv"]["predicate_value"]) == ("session_id", "S-1")
    assert (q["Q-cur"]["predicate_op"], q["Q-cur"]["predicate_value"]) == ("is_null", None)
    assert q["Q-sem"]["predicate_field"] is None and q["Q-sem"]["similarity_expressible"]
    qrels = t["qrels"].filter(pl.col("query_id") == "Q-agg")
    assert qrels["memory_id"].to_list() == ["M2", "M4"]  # the repeated id once
    facts = {r["fact_id"]: r for r in t["facts"].iter_rows(named=True)}
    inc = facts["F-inc-INC-7"]
    assert (inc["subject_id"], inc["subject_type"], inc["service_id"]) == (
        "INC-7",
        "incident",
        "SVC-1",
    )
    assert (inc["corrected_value"], inc["corrected_day"], inc["correction_memory_id"]) == (
        "pool exhaustion",
        41,
        "M4",
    )
    adr = facts["F-adr-ADR-3"]
    assert (adr["object_value"], adr["corrected_value"], adr["service_id"]) == (
        "250",
        None,
        "SVC-1",
    )
    sessions = t["sessions"].rows()
    assert sessions == [("S-1", "gpt-mini", 5, 7, 3), ("S-2", "claude-opus", 40, 41, 1)]
    ents = {r[0]: r for r in t["entities"].rows()}
    assert ents["ADR-3"] == ("ADR-3", "decision", "queues", "SVC-1")
    assert ents["SVC-1"] == ("SVC-1", "service", "checkout", "SVC-1")
    assert t["agents"]["agent_id"].to_list() == ["gpt-mini", "claude-opus"]


def test_plain_and_xz_files_give_the_same_corpus(tmp_path):
    plain = tmp_path / "corpus.json"
    plain.write_text(json.dumps(tiny()))
    packed = tmp_path / "corpus.json.xz"
    with lzma.open(packed, "wt") as fh:
        json.dump(tiny(), fh)
    a = import_study_corpus(plain, tmp_path / "a")
    b = import_study_corpus(packed, tmp_path / "b")
    assert a["files"] == b["files"]  # byte-identical tables
    assert (a["memories"], a["queries"], a["qrels"], a["distractors"], a["corrections"]) == (
        4,
        8,
        12,  # 1 + 2 (one id repeated) + 3 + 1 + 1, then lexical 2, negation 1, hybrid 1
        1,
        1,
    )
    assert (a["superseded"], a["superseded_facts"]) == (1, 1)
    assert a["options"]["study_corpus"]["generator_options"] == {"seed": 1}
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(
        [f"{n}.parquet" for n in ("memories", "facts", "entities", "sessions", "agents")]
        + ["queries.parquet", "qrels.parquet", "manifest.json"]
    )


def _broken(path: Path, edit) -> Path:
    data = tiny()
    edit(data)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["memories"][1].pop("day"), r"memories\[1\]\.day: Field required"),
        (lambda d: d["memories"][0].update(seq="x"), r"memories\[0\]\.seq: Input should be"),
        (lambda d: d["queries"][4].update(relevant=["M9"]), r"queries\[4\] \(Q-sem\)\.relevant"),
        (
            lambda d: d["queries"][0]["predicate"].update(op=">="),
            r"queries\[0\] \(Q-tmp\)\.predicate day >=: not one of",
        ),
        (
            lambda d: d["queries"][0]["predicate"].update(value="soon"),
            r"predicate day <=: needs an integer value, got 'soon'",
        ),
        (lambda d: d["memories"][1].update(sessionId="S-9"), r"memories\[1\]\.sessionId 'S-9'"),
        (lambda d: d["memories"][2].update(id="M1"), "memories: duplicate ids"),
        (lambda d: d.pop("supersessions"), "supersessions: Field required"),
        (lambda d: d["supersessions"][0].update(current="M8"), r"supersessions\[0\] names"),
    ],
)
def test_malformed_files_name_the_record(tmp_path, edit, message):
    path = _broken(tmp_path / "corpus.json", edit)
    with pytest.raises(StudyCorpusError, match=message):
        import_study_corpus(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written


def test_unreadable_files(tmp_path):
    with pytest.raises(StudyCorpusError, match="not found"):
        import_study_corpus(tmp_path / "absent.json", tmp_path / "out")
    bad = tmp_path / "corpus.json"
    bad.write_text("{not json")
    with pytest.raises(StudyCorpusError, match="not the study's corpus JSON"):
        import_study_corpus(bad, tmp_path / "out")
    fake_xz = tmp_path / "corpus.json.xz"
    fake_xz.write_bytes(b"plain bytes")
    with pytest.raises(StudyCorpusError, match="not the study's corpus JSON"):
        import_study_corpus(fake_xz, tmp_path / "out")
    bad.write_text("[1, 2]")
    with pytest.raises(StudyCorpusError, match="not a JSON object"):
        import_study_corpus(bad, tmp_path / "out")


@pytest.mark.skipif(not STUDY_FILE.is_file(), reason="the study's corpus is not beside the repo")
def test_the_study_corpus_has_the_published_counts(tmp_path):
    manifest = import_study_corpus(STUDY_FILE, tmp_path / "c")
    for key in (
        "facts",
        "memories",
        "rendered",
        "distractors",
        "superseded",
        "sessions",
        "queries",
    ):
        assert manifest[key] == CORPUS[key], key
    assert manifest["tokens"] == CORPUS["tokens"]  # o200k_base, as the study counted
    assert manifest["superseded_facts"] == SUPERSEDED_FACTS
    assert manifest["queries_by_class"]["temporal"] == 33
    with lzma.open(STUDY_FILE, "rt") as fh:
        raw = json.load(fh)
    qrels = pl.read_parquet(tmp_path / "c" / "qrels.parquet")
    got = {
        q: g["memory_id"].to_list() for (q,), g in qrels.group_by("query_id", maintain_order=True)
    }
    assert got == {q["id"]: list(dict.fromkeys(q["relevant"])) for q in raw["queries"]}
    queries = pl.read_parquet(tmp_path / "c" / "queries.parquet")
    shapes = queries.group_by("class", "predicate_field", "predicate_op").len().rows()
    assert set(shapes) == {
        ("lexical", None, None, 40),
        ("semantic", None, None, 40),
        ("hybrid", None, None, 40),
        ("temporal", "created_day", "<=", 33),
        ("provenance", "session_id", "=", 40),
        ("currency", "superseded_by", "is_null", 40),
        ("negation", "superseded_by", "is_null", 40),
        ("aggregate", "fact_id", "=", 40),
    }


@pytest.mark.skipif(not STUDY_FILE.is_file(), reason="the study's corpus is not beside the repo")
@pytest.mark.parametrize("name", ["file-jsonl", "sqlite-btree", "pg-btree"])
def test_the_scan_arms_reproduce_every_published_cell_under_the_studys_choices(tmp_path, name):
    """The three scan arms rank by term counts alone: with the study's term extraction and
    tie-break, each of their eight published nDCG@10 cells comes out to the third decimal
    (as shipped, they differ: lexical by +.11, temporal by −.09)."""
    from agentmem.arms import ARMS
    from agentmem.choices import choice_overrides
    from agentmem.corpus.io import load_corpus, load_queries
    from agentmem.metrics import per_query, query_filters, searchable_counts, superseded_ids
    from agentmem.report.reference import published_lookup
    from agentmem.report.tables import by_class_frame
    from agentmem.runner import RUN_SCHEMA, opened, run_rows
    from agentmem.types import Embeddings

    corpus_dir = tmp_path / "c"
    import_study_corpus(STUDY_FILE, corpus_dir)
    corpus = load_corpus(corpus_dir)
    qs = pl.read_parquet(corpus_dir / "queries.parquet")
    ids = corpus.memories["memory_id"].to_list() + qs["query_id"].to_list()
    unit = np.zeros((len(ids), 384), dtype=np.float32)
    unit[:, 0] = 1.0  # the scan arms store and read no vector
    vectors = Embeddings(ids=ids, matrix=unit)
    store = tmp_path / "store"
    arm = ARMS[name]()
    try:
        arm.build(corpus, vectors, store)
    finally:
        arm.close()
    rows: list[dict] = []
    with opened(name, choice_overrides(ARMS[name].study_choices, "study"), store) as study:
        for q in load_queries(corpus_dir, vectors):
            rows.extend(run_rows(q.query_id, study.query(q, 10), 0.0, 10))
    mem = pl.read_parquet(corpus_dir / "memories.parquet")
    scores = per_query(
        pl.DataFrame(rows, schema=RUN_SCHEMA),
        pl.read_parquet(corpus_dir / "qrels.parquet"),
        qs,
        k=10,
        superseded=superseded_ids(mem),
        searchable=searchable_counts(mem, query_filters(qs)),
    )
    got = dict(by_class_frame(name, scores).select("query_class", "ndcg_at_10").iter_rows())
    published = {
        key[2]: v
        for key, v in published_lookup().items()
        if key[:2] == ("by_class", name) and key[3] == "ndcg_at_10" and key[2] != "all"
    }
    assert len(published) == 8
    for cls, want in published.items():
        assert got[cls] == pytest.approx(want, abs=0.0005), cls
