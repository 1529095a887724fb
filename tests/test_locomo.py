"""LoCoMo adapter and scoring: a hand-made dirty file, hand-computed scores, the real file.

The real file is read in place from ../shared/data/locomo/locomo10.json (CC BY-NC 4.0, never
copied into the repository); tests that need it skip with the reason when it is absent.
"""

from __future__ import annotations

import csv
import json
import math

import polars as pl
import pytest
from support.paths import LOCOMO, REPO

from agentmem.corpus.io import load_corpus, load_qrels
from agentmem.external.locomo import (
    SCORE_COLUMNS,
    LocomoFormatError,
    LocomoMissing,
    anchors,
    normalise_label,
    parse_evidence,
    parse_session_datetime,
    per_query_scores,
    prepare_locomo,
    score_locomo,
    session_ranking,
    write_comparison_md,
)

DIRTY = REPO / "tests" / "data" / "locomo_dirty.json"
needs_locomo = pytest.mark.skipif(
    not LOCOMO.is_file(),
    reason=f"LoCoMo file not at {LOCOMO} (a clone without ../shared); see "
    "agentmem.external.locomo.missing_message for where to get it",
)
# memory columns and dtypes of the synthetic corpus (agentmem.corpus.generate)
SYNTHETIC_MEMORY_SCHEMA = {
    "memory_id": pl.String,
    "session_id": pl.String,
    "turn_no": pl.Int32,
    "seq": pl.Int64,
    "kind": pl.String,
    "body": pl.String,
    "fact_id": pl.String,
    "created_day": pl.Int32,
    "source": pl.String,
    "confidence": pl.Float64,
    "superseded_by": pl.String,
    "tokens": pl.Int32,
    "entity_ids": pl.List(pl.String),
    "form": pl.String,
}


@pytest.fixture(scope="module")
def dirty(tmp_path_factory):
    d = tmp_path_factory.mktemp("locomo_dirty")
    return d, prepare_locomo(DIRTY, d)


# ------------------------------------------------------------------ parsing helpers


def test_normalise_label_each_dirty_kind():
    assert normalise_label("D3:13") == ("D3:13", [])
    assert normalise_label("D:11:26") == ("D11:26", ["extra colon after D"])
    assert normalise_label("D30:05") == ("D30:5", ["leading zero"])
    assert normalise_label("D")[0] is None
    assert normalise_label("11:26")[0] is None


def test_parse_evidence_splits_repairs_and_skips():
    turns = {"D8:6", "D9:17", "D11:26", "D30:5"}
    labels, issues = parse_evidence(["D8:6; D9:17"], turns)
    assert labels == ["D8:6", "D9:17"]
    assert issues == [
        {
            "raw_label": "D8:6; D9:17",
            "action": "repaired",
            "repaired_to": "D8:6 D9:17",
            "reason": "2 labels in one string",
        }
    ]
    labels, issues = parse_evidence(["D:11:26", "D30:05", "D", "D1:1", "D30:5"], turns)
    assert labels == ["D11:26", "D30:5"]
    assert [(i["raw_label"], i["action"]) for i in issues] == [
        ("D:11:26", "repaired"),
        ("D30:05", "repaired"),
        ("D", "skipped"),
        ("D1:1", "skipped"),
        ("D30:5", "skipped"),  # repeats D30:05 once repaired
    ]
    assert parse_evidence([], turns) == ([], [])


def test_session_datetime_parsing():
    dt = parse_session_datetime("1:56 pm on 8 May, 2023")
    assert (dt.year, dt.month, dt.day, dt.hour, dt.minute) == (2023, 5, 8, 13, 56)
    assert parse_session_datetime("12:19 am  on 4 January, 2024").hour == 0
    with pytest.raises(LocomoFormatError, match="unparseable session date"):
        parse_session_datetime("yesterday")


# ------------------------------------------------------------------ the dirty file


def test_dirty_counts_and_label_report(dirty):
    d, m = dirty
    assert m["conversations"] == 2
    assert m["sessions"] == 4  # session_4_date_time without a session_4 is ignored
    assert m["memories"] == 9
    assert m["image_captions"] == 2
    assert m["qa_total"] == 11
    assert m["qa_by_category"] == {
        "multi-hop": 2,
        "temporal": 2,
        "open-domain": 2,
        "single-hop": 4,
        "adversarial": 1,
    }
    assert m["adversarial_excluded"] == 1
    assert m["queries"] == 8
    assert m["queries_by_class"] == {
        "multi-hop": 2,
        "temporal": 2,
        "open-domain": 1,
        "single-hop": 3,
    }
    assert m["queries_skipped"] == 2
    assert m["labels"] == {"raw": 11, "repaired": 4, "skipped": 3}
    assert m["qrels"] == 10 and m["qrels_session"] == 10
    rep = [
        (r["query_id"], r["raw_label"], r["action"], r["repaired_to"]) for r in m["labels_report"]
    ]
    assert rep == [
        ("dirty-a:Q1", "D1:2; D2:1", "repaired", "D1:2 D2:1"),
        ("dirty-a:Q2", "D:2:2", "repaired", "D2:2"),
        ("dirty-a:Q3", "D3:01", "repaired", "D3:1"),
        ("dirty-a:Q4", "[]", "query-skipped", ""),
        ("dirty-a:Q5", "D9:9", "skipped", ""),
        ("dirty-a:Q6", "D", "skipped", ""),
        ("dirty-a:Q6", '["D"]', "query-skipped", ""),
        ("dirty-a:Q8", "D2:2 D3:1", "repaired", "D2:2 D3:1"),
        ("dirty-a:Q9", "D1:3", "skipped", ""),
    ]
    reasons = {r["query_id"]: r["reason"] for r in m["labels_report"] if r["action"] != "repaired"}
    assert reasons["dirty-a:Q4"] == "empty evidence"
    assert reasons["dirty-a:Q5"] == "no turn D9:9 in this conversation"
    assert reasons["dirty-a:Q9"] == "D1:3 repeats an earlier label"
    with open(d / "labels.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 9 and rows[1]["raw_label"] == "D:2:2"
    assert json.loads((d / "manifest.json").read_text())["labels_report"] == m["labels_report"]


def test_dirty_memories_contract_ids_days_bodies(dirty):
    d, _ = dirty
    mem = pl.read_parquet(d / "memories.parquet")
    assert dict(mem.schema) == SYNTHETIC_MEMORY_SCHEMA
    assert mem["memory_id"].to_list() == [
        "dirty-b:D1:1",
        "dirty-b:D1:2",
        "dirty-a:D1:1",
        "dirty-a:D1:2",
        "dirty-a:D1:3",
        "dirty-a:D2:1",
        "dirty-a:D2:2",
        "dirty-a:D3:1",
        "dirty-a:D3:2",
    ]
    assert mem["seq"].to_list() == list(range(9))
    # earliest session date in the data set: 1 May 2023 (dirty-b); 8 May, 20 May, 9 June
    assert mem["created_day"].to_list() == [0, 0, 7, 7, 7, 19, 19, 39, 39]
    assert mem["turn_no"].to_list() == [0, 1, 0, 1, 2, 0, 1, 0, 1]
    assert mem["session_id"].to_list()[2:6] == ["dirty-a:S1"] * 3 + ["dirty-a:S2"]
    row = mem.row(4, named=True)
    assert (
        row["body"]
        == "Ann: Here is Biscuit at the park. [image: a photo of a small brown dog on grass]"
    )
    assert row["source"] == "Ann" and row["kind"] == "episodic" and row["form"] == "turn"
    assert row["fact_id"] is None and row["superseded_by"] is None
    assert row["confidence"] == 1.0 and row["entity_ids"] == [] and row["tokens"] > 10
    assert mem.row(1, named=True)["body"].endswith("[image: a red bicycle leaning on a wall]")
    corpus = load_corpus(d)  # the same loader every arm's runner uses
    assert corpus.facts.height == 0 and corpus.entities.height == 0
    assert corpus.sessions["session_id"].to_list() == [
        "dirty-a:S1",
        "dirty-a:S2",
        "dirty-a:S3",
        "dirty-b:S1",
    ]
    agents = pl.read_parquet(d / "agents.parquet")
    assert agents["agent_id"].to_list() == [
        "dirty-a:Ann",
        "dirty-a:Bob",
        "dirty-b:Cara",
        "dirty-b:Dan",
    ]


def test_dirty_queries_and_qrels(dirty):
    d, _ = dirty
    q = pl.read_parquet(d / "queries.parquet")
    assert q["query_id"].to_list() == [
        "dirty-a:Q0",
        "dirty-a:Q1",
        "dirty-a:Q2",
        "dirty-a:Q3",
        "dirty-a:Q5",
        "dirty-a:Q8",
        "dirty-a:Q9",
        "dirty-b:Q0",
    ]
    assert q["class"].to_list()[:4] == ["single-hop", "multi-hop", "temporal", "single-hop"]
    assert q["predicate_field"].null_count() == 8 and q["expected_count"].null_count() == 8
    assert q["similarity_expressible"].all()
    qr = load_qrels(d)
    got = sorted(zip(qr["query_id"], qr["memory_id"], strict=True))
    assert got == sorted(
        [
            ("dirty-a:Q0", "dirty-a:D1:1"),
            ("dirty-a:Q1", "dirty-a:D1:2"),
            ("dirty-a:Q1", "dirty-a:D2:1"),
            ("dirty-a:Q2", "dirty-a:D2:2"),
            ("dirty-a:Q3", "dirty-a:D3:1"),
            ("dirty-a:Q5", "dirty-a:D1:1"),
            ("dirty-a:Q8", "dirty-a:D2:2"),
            ("dirty-a:Q8", "dirty-a:D3:1"),
            ("dirty-a:Q9", "dirty-a:D1:3"),
            ("dirty-b:Q0", "dirty-b:D1:2"),
        ]
    )
    assert set(qr["grade"].to_list()) == {1}
    qs = pl.read_parquet(d / "qrels_session.parquet")
    assert qs.filter(pl.col("query_id") == "dirty-a:Q8")["session_id"].to_list() == [
        "dirty-a:S2",
        "dirty-a:S3",
    ]
    assert qs.height == 10


def test_adversarial_included_on_request_and_deterministic(tmp_path, dirty):
    d, m = dirty
    m2 = prepare_locomo(DIRTY, tmp_path / "again")
    assert m2["files"] == m["files"]
    m3 = prepare_locomo(DIRTY, tmp_path / "adv", include_adversarial=True)
    assert m3["queries"] == 9 and m3["adversarial_excluded"] == 0
    assert m3["queries_by_class"]["adversarial"] == 1
    m4 = prepare_locomo(DIRTY, tmp_path / "one", limit_conversations=1)
    assert m4["conversations"] == 1 and m4["memories"] == 7
    assert m4["earliest_date"] == "2023-05-08"


def test_missing_file_says_where_to_get_it_and_put_it(tmp_path):
    where = tmp_path / "data" / "external" / "locomo10.json"
    with pytest.raises(LocomoMissing) as exc:
        prepare_locomo(where, tmp_path / "out")
    msg = str(exc.value)
    for part in ("snap-research/LoCoMo", "data/locomo10.json", "CC BY-NC 4.0", str(where)):
        assert part in msg
    assert "external.locomo.path" in msg and "data/external/locomo10.json" in msg
    assert isinstance(exc.value, FileNotFoundError)
    assert not (tmp_path / "out").exists()


def test_bad_file_shape_is_named(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"not": "a list"}')
    with pytest.raises(LocomoFormatError, match="list of conversations"):
        prepare_locomo(p, tmp_path / "out")


# ------------------------------------------------------------------ scoring


def _runs(rows: dict[str, list[str]]) -> pl.DataFrame:
    out = []
    for qid, ids in rows.items():
        if not ids:
            out.append((qid, None, None))
        out.extend((qid, r, m) for r, m in enumerate(ids, start=1))
    return pl.DataFrame(
        out, schema={"query_id": pl.String, "rank": pl.Int32, "memory_id": pl.String}, orient="row"
    )


HAND_RUN = {
    "dirty-a:Q0": ["dirty-a:D1:1"],
    # gold turns D1:2, D2:1 (sessions S1, S2); sessions ranked S3, S2, S1
    "dirty-a:Q1": ["dirty-a:D3:1", "dirty-a:D3:2", "dirty-a:D2:1", "dirty-a:D1:1"],
    "dirty-a:Q2": [],
    "dirty-a:Q3": [],
    "dirty-a:Q5": [],
    # gold turns D2:2, D3:1 (S2, S3); D3:2 is not gold but puts gold session S3 first
    "dirty-a:Q8": ["dirty-a:D3:2", "dirty-a:D3:1", "dirty-a:D1:1"],
    "dirty-a:Q9": [],
    "dirty-b:Q0": [],
}


def test_session_ranking_keeps_best_turn():
    sess = {"a": "S1", "b": "S2", "c": "S1", "d": "S3"}
    assert session_ranking(["b", "a", "c", "d"], sess) == ["S2", "S1", "S3"]


def test_hand_computed_scores(dirty, tmp_path):
    d, _ = dirty
    runs_path = tmp_path / "hand.parquet"
    _runs(HAND_RUN).write_parquet(runs_path)
    pq = per_query_scores(d, pl.read_parquet(runs_path), arm="hand")
    s = {(r["query_id"], r["level"]): r for r in pq.iter_rows(named=True)}
    log2 = math.log2
    # Q1 session: S3 (miss), S2 (hit), S1 (hit) over 2 gold sessions
    q1 = s[("dirty-a:Q1", "session")]
    assert q1["hit_at_1"] == 0.0 and q1["recall_at_5"] == 1.0 and q1["recall_at_1"] == 0.0
    assert q1["ndcg_at_5"] == pytest.approx((1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3)))
    assert q1["mrr"] == pytest.approx(1 / 2)
    # Q1 turn: only D2:1 at rank 3 is gold
    t1 = s[("dirty-a:Q1", "turn")]
    assert (t1["recall_at_1"], t1["recall_at_5"], t1["recall_at_10"]) == (0.0, 0.5, 0.5)
    assert t1["mrr"] == pytest.approx(1 / 3)
    assert t1["ndcg_at_10"] == pytest.approx((1 / log2(4)) / (1 + 1 / log2(3)))
    # Q8 session: S3 first (its best turn D3:2 is not gold, the session is), S1 second
    q8 = s[("dirty-a:Q8", "session")]
    assert q8["hit_at_1"] == 1.0 and q8["recall_at_5"] == 0.5
    assert q8["ndcg_at_5"] == pytest.approx(1 / (1 + 1 / log2(3)))
    t8 = s[("dirty-a:Q8", "turn")]
    assert t8["hit_at_1"] == 0.0 and t8["mrr"] == 0.5 and t8["recall_at_5"] == 0.5
    # empty result: zeros
    assert s[("dirty-b:Q0", "session")]["hit_at_1"] == 0.0

    out = tmp_path / "scores.csv"
    md = tmp_path / "comparison.md"
    table = score_locomo(d, {"hand": runs_path}, out, n_boot=200, comparison_md=md)
    assert table.columns == list(SCORE_COLUMNS)
    assert pl.read_csv(out).columns == list(SCORE_COLUMNS)
    cats = table.filter(pl.col("level") == "session")["category"].to_list()
    assert cats == ["multi-hop", "temporal", "open-domain", "single-hop", "all"]
    row = table.filter((pl.col("level") == "session") & (pl.col("category") == "all")).row(
        0, named=True
    )
    assert row["n_queries"] == 8
    assert row["hit_at_1"] == pytest.approx((1 + 0 + 1) / 8)
    assert row["recall_at_5"] == pytest.approx((1 + 1 + 0.5) / 8)
    assert row["ndcg_at_5"] == pytest.approx(
        (1 + (1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3)) + 1 / (1 + 1 / log2(3))) / 8
    )
    od = table.filter((pl.col("level") == "session") & (pl.col("category") == "open-domain"))
    assert od["n_queries"].item() == 1 and od["recall_at_5"].item() == 0.5
    ci = pl.read_csv(tmp_path / "scores_ci.csv")
    assert {"hit_at_1_lo", "hit_at_1_hi", "ndcg_at_5_lo"} <= set(ci.columns)
    allci = ci.filter((pl.col("level") == "session") & (pl.col("category") == "all")).row(
        0, named=True
    )
    assert allci["hit_at_1_lo"] <= allci["hit_at_1"] <= allci["hit_at_1_hi"]
    text = md.read_text()
    assert "| hand | 8 | 0.250 | 0.312 |" in text
    assert "BM25 (published)* | 1,978 | 0.640 | 0.833 | 0.746" in text
    assert "0.752 | 0.894 | 0.829" in text
    assert write_comparison_md(out, tmp_path / "again.md") == text


def test_scoring_rejects_mismatched_runs(dirty, tmp_path):
    d, _ = dirty
    missing = dict(HAND_RUN)
    del missing["dirty-b:Q0"]
    with pytest.raises(ValueError, match="dirty-b:Q0 has no rows"):
        per_query_scores(d, _runs(missing), arm="x")
    with pytest.raises(ValueError, match="not a memory"):
        per_query_scores(d, _runs({**HAND_RUN, "dirty-b:Q0": ["M000001"]}), arm="x")
    with pytest.raises(ValueError, match="not in"):
        per_query_scores(d, _runs({**HAND_RUN, "other:Q1": []}), arm="x")


def test_anchors_are_the_published_values():
    a = anchors()
    assert a["system"].to_list() == [
        "BM25 (published)",
        "BM25 + dense max-sim fusion (published)",
    ]
    assert a.select("hit_at_1", "recall_at_5", "ndcg_at_5").rows() == [
        (0.640, 0.833, 0.746),
        (0.752, 0.894, 0.829),
    ]


def test_figure_writes_svg_and_png(dirty, tmp_path):
    from agentmem.report.figures.locomo import plot

    d, _ = dirty
    runs_path = tmp_path / "hand.parquet"
    _runs(HAND_RUN).write_parquet(runs_path)
    score_locomo(d, {"a": runs_path, "b": runs_path}, tmp_path / "s.csv", n_boot=50)
    plot(tmp_path / "s.csv", tmp_path / "fig.svg")
    assert (tmp_path / "fig.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "fig.png").stat().st_size > 1000


# ------------------------------------------------------------------ the real file


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo file not at {LOCOMO} (a clone without ../shared)")
    d = tmp_path_factory.mktemp("locomo_real")
    return d, prepare_locomo(LOCOMO, d)


@needs_locomo
def test_real_counts(real):
    d, m = real
    assert m["conversations"] == 10
    assert m["sessions"] == 272
    assert m["memories"] == 5882
    assert m["qa_total"] == 1986
    assert m["qa_by_category"] == {
        "multi-hop": 282,
        "temporal": 321,
        "open-domain": 96,
        "single-hop": 841,
        "adversarial": 446,
    }
    assert m["queries"] == 1536  # 1,986 - 446 adversarial - 4 with empty evidence
    assert m["queries_by_class"] == {
        "multi-hop": 282,
        "temporal": 321,
        "open-domain": 92,
        "single-hop": 841,
    }
    assert m["queries_skipped"] == 4
    assert m["labels"] == {"raw": 2355, "repaired": 6, "skipped": 4}
    assert m["qrels"] == 2360 and m["qrels_session"] == 2112
    assert m["earliest_date"] == "2022-01-21"
    assert m["image_captions"] == 1226
    by = {(r["query_id"], r["raw_label"]): r for r in m["labels_report"]}
    assert by[("conv-43:Q18", "D:11:26")]["repaired_to"] == "D11:26"
    assert by[("conv-50:Q69", "D30:05")]["repaired_to"] == "D30:5"
    assert by[("conv-26:Q37", "D8:6; D9:17")]["repaired_to"] == "D8:6 D9:17"
    assert by[("conv-42:Q88", "D")]["action"] == "skipped"
    assert by[("conv-42:Q58", "D10:19")]["reason"] == "no turn D10:19 in this conversation"
    qr = load_qrels(d)
    pairs = set(zip(qr["query_id"], qr["memory_id"], strict=True))
    assert ("conv-43:Q18", "conv-43:D11:26") in pairs and ("conv-50:Q69", "conv-50:D30:5") in pairs
    mem = pl.read_parquet(d / "memories.parquet")
    assert dict(mem.schema) == SYNTHETIC_MEMORY_SCHEMA
    assert mem["memory_id"].n_unique() == 5882
    first = mem.filter(pl.col("memory_id") == "conv-26:D1:1").row(0, named=True)
    assert first["body"].startswith("Caroline: Hey Mel!") and first["created_day"] == 472


@needs_locomo
def test_real_end_to_end_sqlite_fts(tmp_path):
    """First conversation only (419 turns): embeddings, the real runner, scoring."""
    from agentmem.embeddings import embed_corpus
    from agentmem.runner import run_arm

    c = tmp_path / "corpus"
    m = prepare_locomo(LOCOMO, c, limit_conversations=1)
    assert m["memories"] == 419 and m["sessions"] == 19
    emb = tmp_path / "emb.parquet"
    embed_corpus(c, emb, tmp_path / "cache", progress=False)
    runs = tmp_path / "runs" / "sqlite-fts.parquet"
    run_arm(
        "sqlite-fts",
        None,
        c,
        emb,
        tmp_path / "store",
        runs,
        tmp_path / "build.json",
        tmp_path / "plans.json",
        warmup=0,
        repeats=1,
        progress=False,
    )
    t = score_locomo(c, {"sqlite-fts": runs}, tmp_path / "scores.csv", n_boot=100)
    assert t.height == 2 * 5
    allrow = {r["level"]: r for r in t.filter(pl.col("category") == "all").iter_rows(named=True)}
    assert allrow["session"]["n_queries"] == m["queries"]
    # BM25 over one conversation's 19 sessions finds a gold session in the top 5 most of the time
    assert allrow["session"]["recall_at_5"] > 0.7
    assert allrow["turn"]["recall_at_10"] > 0.4
    assert allrow["session"]["hit_at_1"] >= allrow["turn"]["hit_at_1"]
