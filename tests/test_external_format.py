"""The agentmem-memory format: a hand-made dataset, hand-computed scores, bad inputs.

``tests/data/tiny-memory``: 14 memories of two scopes (alice, bob) and one without scope,
in six sessions; six queries in three categories; memory a2-3 covers three evidence units
(a1-1, a1-2, a1-3) and a3-2 two (itself and a1-3); b2-2 covers none; qrel q1/a2-2 has
score 0.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import shutil
from pathlib import Path

import ir_measures
import numpy as np
import polars as pl
import pytest
from ir_measures import RR, R, nDCG
from support.paths import REPO

from agentmem.corpus.io import load_corpus, load_qrels, load_queries
from agentmem.external import (
    ISSUE_KINDS,
    PREPARED_FILES,
    SCORE_COLUMNS,
    DatasetError,
    prepare_dataset,
    read_dataset,
    score_dataset,
    validate_dataset,
    write_dataset,
)
from agentmem.external.score import (
    FILL_COLUMNS,
    METRIC_COLUMNS,
    evidence_scores,
    fill_scores,
    group_ranking,
    per_query_scores,
)
from agentmem.types import MEMORY_SCHEMA, Embeddings

TINY = REPO / "tests" / "data" / "tiny-memory"
log2 = math.log2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    return d, prepare_dataset(TINY, d)


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "ds"
    shutil.copytree(TINY, d)
    return d


def _edit(d: Path, name: str, line: int, text: str | None) -> None:
    """Replace 1-based ``line`` of ``name`` with ``text`` (None: delete; 0: append)."""
    p = d / name
    lines = p.read_text().splitlines()
    if line == 0:
        lines.append(str(text))
    elif text is None:
        del lines[line - 1]
    else:
        lines[line - 1] = text
    p.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------ reading


def test_tiny_dataset_reads_with_defaults():
    ds = validate_dataset(TINY)
    assert ds.name == "tiny-memory" and ds.issues == [] and ds.skipped_queries == []
    assert ds.categories == ["fact", "temporal", "multi-hop"]
    m = {r["_id"]: r for r in ds.memories}
    assert len(m) == 14
    assert m["a1-2"] | {"text": ""} == {
        "_id": "a1-2",
        "text": "",
        "session": "a1",
        "day": 0,
        "scope": "alice",
        "kind": "episodic",  # default
        "source": "Alice",
        "turn": 1,  # default: second line of session a1
        "evidence": ["a1-2"],  # default: the memory itself
        "line": 2,
    }
    assert (m["g-1"]["scope"], m["g-1"]["source"], m["g-1"]["kind"]) == (None, "", "procedural")
    assert m["a2-3"]["evidence"] == ["a1-1", "a1-2", "a1-3"]
    assert m["b2-2"]["evidence"] == []
    assert (m["a3-1"]["turn"], m["a3-2"]["turn"]) == (1, 0)  # given
    q = {r["_id"]: r for r in ds.queries}
    # q1: from its relevant memory a1-1 only (a2-2 has score 0)
    assert (q["q1"]["evidence"], q["q1"]["evidence_given"]) == (["a1-1"], False)
    assert (q["q3"]["evidence"], q["q3"]["evidence_given"]) == (["a1-1", "a2-1", "a3-1"], True)
    # q4: union over a3-2 (a3-2, a1-3) and a1-3 (a1-3), in qrels order
    assert q["q4"]["evidence"] == ["a3-2", "a1-3"]
    assert len(ds.qrels) == 10 and ("q1", "a2-2", 0, 3) in ds.qrels


def test_tiny_prepared_tables(tiny):
    d, m = tiny
    assert sorted(p.name for p in d.iterdir()) == sorted(PREPARED_FILES.values())
    mem = pl.read_parquet(d / "memories.parquet")
    assert dict(mem.schema) == MEMORY_SCHEMA
    # seq: by (day, session, turn, line); a3-2 (turn 0) before a3-1 (turn 1)
    assert mem["memory_id"].to_list() == [
        "a1-1", "a1-2", "a1-3", "g-1", "b1-1", "b1-2", "b1-3",
        "a2-1", "a2-2", "a2-3", "b2-1", "b2-2", "a3-2", "a3-1",
    ]  # fmt: skip
    assert mem["seq"].to_list() == list(range(14))
    assert mem["created_day"].to_list() == [0, 0, 0, 0, 1, 1, 1, 3, 3, 3, 5, 5, 10, 10]
    assert mem["turn_no"].to_list() == [0, 1, 2, 0, 0, 1, 2, 0, 1, 2, 0, 1, 0, 1]
    assert mem["scope_id"].to_list()[3] is None and mem["scope_id"].null_count() == 1
    assert set(mem["form"]) == {"note"} and set(mem["confidence"]) == {1.0}
    assert mem["kind"].to_list()[3] == "procedural" and mem["kind"].to_list()[9] == "semantic"
    assert mem["body"][0] == "Alice adopted a grey cat named Pixel."  # title is not the body
    assert mem["fact_id"].null_count() == 14 and mem["superseded_by"].null_count() == 14
    assert mem["entity_ids"].to_list() == [[]] * 14 and (mem["tokens"] > 3).all()

    corpus = load_corpus(d)  # what the runner hands every arm
    assert corpus.sessions.rows() == [
        ("a1", None, 0, 0, 3, "alice"),
        ("g", None, 0, 0, 1, None),
        ("b1", None, 1, 1, 3, "bob"),
        ("a2", None, 3, 3, 3, "alice"),
        ("b2", None, 5, 5, 2, "bob"),
        ("a3", None, 10, 10, 2, "alice"),
    ]
    assert corpus.facts.height == 0 and corpus.entities.height == 0
    ids = [f"q{i}" for i in range(1, 7)]
    vectors = Embeddings(ids, np.eye(6, 384, dtype=np.float32))
    qs = load_queries(d, vectors)
    assert [(q.query_id, q.query_class, q.scope) for q in qs] == [
        ("q1", "fact", "alice"),
        ("q2", "fact", "alice"),
        ("q3", "temporal", "alice"),
        ("q4", "multi-hop", "alice"),
        ("q5", "fact", "bob"),
        ("q6", "multi-hop", "bob"),
    ]
    assert {q.scope for q in load_queries(d, vectors, scoped=False)} == {None}
    assert all(q.predicate is None and not q.wants_count for q in qs)

    qr = load_qrels(d)
    assert qr.rows() == [
        ("q1", "a1-1", 2), ("q2", "a1-3", 1), ("q3", "a2-1", 1), ("q3", "a3-1", 1),
        ("q4", "a3-2", 1), ("q4", "a1-3", 1), ("q5", "b1-2", 1), ("q6", "b1-1", 1),
        ("q6", "b2-1", 1),
    ]  # fmt: skip
    assert qr.schema["grade"] == pl.Int8
    assert pl.read_parquet(d / "qrels_group.parquet").rows() == [
        ("q1", "a1"), ("q2", "a1"), ("q3", "a2"), ("q3", "a3"), ("q4", "a3"), ("q4", "a1"),
        ("q5", "b1"), ("q6", "b1"), ("q6", "b2"),
    ]  # fmt: skip
    ev = pl.read_parquet(d / "evidence.parquet")
    assert ev.height == 16 and "b2-2" not in ev["memory_id"].to_list()
    assert ev.filter(pl.col("memory_id") == "a2-3")["evidence_id"].to_list() == [
        "a1-1", "a1-2", "a1-3",
    ]  # fmt: skip
    qe = pl.read_parquet(d / "query_evidence.parquet")
    assert qe.filter(pl.col("query_id") == "q3")["evidence_id"].to_list() == [
        "a1-1", "a2-1", "a3-1",
    ]  # fmt: skip
    assert qe.height == 10
    with open(d / "issues.csv", newline="") as fh:
        assert list(csv.reader(fh)) == [["file", "line", "kind", "id", "detail"]]

    c = m["counts"]
    assert (c["memories"], c["sessions"], c["scopes"], c["memories_without_scope"]) == (14, 6, 2, 1)
    assert c["queries"] == 6 and c["queries_skipped"] == 0
    assert c["queries_by_category"] == {"fact": 3, "temporal": 1, "multi-hop": 2}
    assert (c["qrels"], c["qrels_score_0"], c["qrels_group"]) == (9, 1, 9)
    assert (c["evidence"], c["query_evidence"], c["max_evidence_per_memory"]) == (16, 10, 3)
    assert c["days_span"] == 10
    assert m["issues"] == dict.fromkeys(ISSUE_KINDS, 0)
    assert (m["format"], m["format_version"], m["dataset"], m["unit"]) == (
        "agentmem-memory", 1, "tiny-memory", "note",
    )  # fmt: skip
    assert m["categories"] == ["fact", "temporal", "multi-hop"]
    assert set(m["source"]["sha256"]) == {
        "dataset.json",
        "corpus.jsonl",
        "queries.jsonl",
        "qrels.tsv",
    }
    assert json.loads((d / "manifest.json").read_text()) == json.loads(json.dumps(m))


def test_prepare_is_deterministic(tiny, tmp_path):
    _, m = tiny
    assert prepare_dataset(TINY, tmp_path / "again")["files"] == m["files"]


def test_write_dataset_round_trip(tmp_path):
    ds = read_dataset(TINY)
    keys = ("_id", "text", "session", "day", "scope", "kind", "source", "turn", "evidence")
    out = write_dataset(
        tmp_path / "copy",
        {k: v for k, v in ds.meta.items() if k not in ("format", "version")},
        [{k: r[k] for k in keys} for r in ds.memories],
        [
            {k: r[k] for k in ("_id", "text", "category", "scope")}
            | ({"evidence": r["evidence"]} if r["evidence_given"] else {})
            for r in ds.queries
        ],
        [(q, m, s) for q, m, s, _ in ds.qrels],
    )
    again = read_dataset(out)
    assert again.meta == ds.meta and again.memories == ds.memories
    assert [q["evidence"] for q in again.queries] == [q["evidence"] for q in ds.queries]
    assert again.qrels == ds.qrels


def test_write_dataset_refuses_a_lone_surrogate_naming_file_and_line(tmp_path):
    """A converter's record with a lone surrogate: an error naming where, not a traceback."""
    memories = [
        {"_id": "m1", "text": "fine", "session": "s1", "day": 0},
        {"_id": "m2", "text": "half a pair \ud800 here", "session": "s1", "day": 0},
    ]
    with pytest.raises(DatasetError) as err:
        write_dataset(tmp_path / "out", {"name": "x"}, memories, [], [])
    assert (err.value.path.name, err.value.line, err.value.field) == ("corpus.jsonl", 2, "text")
    assert "lone surrogate" in str(err.value)
    assert not (tmp_path / "out" / "corpus.jsonl").exists()


# ------------------------------------------------------------------ scoring

RUN_SCOPED = {
    "q1": ["a2-3", "a2-2", "a1-1"],
    "q2": ["a3-2", "a1-2", "a1-3"],
    "q3": ["a2-2", "a1-1", "a1-2", "a1-3", "a2-3", "a3-2", "a3-1", "a2-1"],
    "q4": ["a2-3", "a1-2"],
    "q5": ["b1-2", "b1-3", "b2-1"],
    "q6": ["b2-2", "b2-1", "b1-2", "b1-1"],
}
RUN_UNSCOPED = RUN_SCOPED | {"q2": ["a1-3", "g-1"], "q4": []}


def _runs(rows: dict[str, list[str]]) -> pl.DataFrame:
    out = []
    for qid, ids in rows.items():
        if not ids:
            out.append((qid, None, None))
        out.extend((qid, r, m) for r, m in enumerate(ids, start=1))
    return pl.DataFrame(
        out, schema={"query_id": pl.String, "rank": pl.Int32, "memory_id": pl.String}, orient="row"
    )


N3 = 1 + 1 / log2(3)  # ideal DCG of two relevant items
#: hand-computed per-query scores of RUN_SCOPED: (r5, r10, r25, r50, ndcg10, ndcg5, mrr, hit)
MEMORY = {
    "q1": (1, 1, 1, 1, 1 / log2(4), 1 / log2(4), 1 / 3, 0),  # a1-1 at rank 3
    "q2": (1, 1, 1, 1, 0.5, 0.5, 1 / 3, 0),  # a1-3 at rank 3
    "q3": (0, 1, 1, 1, (1 / log2(8) + 1 / log2(9)) / N3, 0, 1 / 7, 0),  # ranks 7 and 8
    "q4": (0, 0, 0, 0, 0, 0, 0, 0),
    "q5": (1, 1, 1, 1, 1, 1, 1, 1),
    "q6": (1, 1, 1, 1, (1 / log2(3) + 1 / log2(5)) / N3, (1 / log2(3) + 1 / log2(5)) / N3, 0.5, 0),
}
NAN = math.nan
EVIDENCE = {
    "q1": (1, 1, 1, 1, NAN, NAN, 1, 1),  # a2-3 at rank 1 covers a1-1
    "q2": (1, 1, 1, 1, NAN, NAN, 1, 1),  # a3-2 at rank 1 covers a1-3
    # E = a1-1, a2-1, a3-1: a1-1 at rank 2, a3-1 at 7, a2-1 at 8
    "q3": (1 / 3, 1, 1, 1, NAN, NAN, 0.5, 0),
    "q4": (0.5, 0.5, 0.5, 0.5, NAN, NAN, 1, 1),  # E = a3-2, a1-3: a2-3 covers a1-3
    "q5": (1, 1, 1, 1, NAN, NAN, 1, 1),
    "q6": (1, 1, 1, 1, NAN, NAN, 0.5, 0),  # b2-2 covers nothing, b2-1 at 2, b1-1 at 4
}
GROUP = {
    "q1": (1, 1, 1, 1, 1 / log2(3), 1 / log2(3), 0.5, 0),  # sessions a2, a1
    "q2": (1, 1, 1, 1, 1 / log2(3), 1 / log2(3), 0.5, 0),  # a3, a1
    "q3": (1, 1, 1, 1, 1.5 / N3, 1.5 / N3, 1, 1),  # a2, a1, a3: gold a2, a3
    "q4": (0.5, 0.5, 0.5, 0.5, (1 / log2(3)) / N3, (1 / log2(3)) / N3, 0.5, 0),  # a2, a1
    "q5": (1, 1, 1, 1, 1, 1, 1, 1),  # b1, b2
    "q6": (1, 1, 1, 1, 1, 1, 1, 1),  # b2, b1: both gold
}
HAND = {"memory": MEMORY, "evidence": EVIDENCE, "group": GROUP}
METRICS = METRIC_COLUMNS
#: hand-computed fill of RUN_SCOPED, the same at every level: (f5, f10, f25, f50, short50);
#: alice's scope holds 8 memories, bob's 5, so the slots are min(k, 8) and min(k, 5)
FILL = {
    "q1": (3 / 5, 3 / 8, 3 / 8, 3 / 8, 1),
    "q2": (3 / 5, 3 / 8, 3 / 8, 3 / 8, 1),
    "q3": (1, 1, 1, 1, 0),  # 8 returned: the whole scope
    "q4": (2 / 5, 2 / 8, 2 / 8, 2 / 8, 1),
    "q5": (3 / 5, 3 / 5, 3 / 5, 3 / 5, 1),
    "q6": (4 / 5, 4 / 5, 4 / 5, 4 / 5, 1),
}


def _close(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)


def test_per_query_scores_are_the_hand_values(tiny):
    d, _ = tiny
    pq = per_query_scores(d, _runs(RUN_SCOPED), setting="scoped", arm="hand")
    assert pq.height == 18
    for r in pq.iter_rows(named=True):
        want = dict(zip(METRICS, HAND[r["level"]][r["query_id"]], strict=True))
        want |= dict(zip(FILL_COLUMNS, FILL[r["query_id"]], strict=True))
        for m in (*METRICS, *FILL_COLUMNS):
            assert _close(r[m], want[m]), (r["level"], r["query_id"], m, r[m], want[m])


def test_fill_counts_the_scope_in_the_scoped_setting_only(tiny):
    d, _ = tiny
    # unscoped, every query searches the 14 memories: slots min(k, 14)
    pq = per_query_scores(d, _runs(RUN_SCOPED), setting="unscoped", arm="hand")
    q3 = pq.filter((pl.col("query_id") == "q3") & (pl.col("level") == "memory")).row(0, named=True)
    assert (q3["fill_at_5"], q3["fill_at_10"], q3["fill_at_50"]) == (1.0, 0.8, 8 / 14)
    assert q3["short_at_50"] == 1.0
    # the setting's name decides unless told
    told = per_query_scores(d, _runs(RUN_SCOPED), setting="mine", arm="hand", scoped=False)
    assert told["fill_at_50"].to_list() == pq["fill_at_50"].to_list()
    assert fill_scores(40, 5000) == {
        "fill_at_5": 1.0, "fill_at_10": 1.0, "fill_at_25": 1.0, "fill_at_50": 0.8,
        "short_at_50": 1.0,
    }  # fmt: skip
    assert fill_scores(7, 7)["short_at_50"] == 0.0  # the scope holds 7: all of it
    assert fill_scores(0, None)["fill_at_10"] == 0.0  # unknown scope: k slots


def test_score_dataset_tables(tiny, tmp_path):
    d, _ = tiny
    paths = {}
    for setting, run in (("scoped", RUN_SCOPED), ("unscoped", RUN_UNSCOPED)):
        paths[(setting, "hand")] = tmp_path / f"{setting}.parquet"
        _runs(run).write_parquet(paths[(setting, "hand")])
    out, ci = tmp_path / "scores.csv", tmp_path / "scores_ci.csv"
    t = score_dataset(d, paths, out, ci, n_boot=200)
    assert t.columns == list(SCORE_COLUMNS)
    assert pl.read_csv(out).columns == list(SCORE_COLUMNS)
    assert t.height == 2 * 3 * 4
    assert t.filter((pl.col("setting") == "scoped") & (pl.col("level") == "memory"))[
        "category"
    ].to_list() == ["fact", "temporal", "multi-hop", "all"]
    cats = {"fact": ("q1", "q2", "q5"), "temporal": ("q3",), "multi-hop": ("q4", "q6")}
    cats["all"] = tuple(f"q{i}" for i in range(1, 7))
    for r in t.filter(pl.col("setting") == "scoped").iter_rows(named=True):
        qs = cats[r["category"]]
        assert r["n_queries"] == len(qs)
        for j, m in enumerate(METRICS):
            want = sum(HAND[r["level"]][q][j] for q in qs) / len(qs)
            assert _close(r[m], want), (r["level"], r["category"], m)
        for j, m in enumerate(FILL_COLUMNS):
            want = sum(FILL[q][j] for q in qs) / len(qs)
            assert _close(r[m], want), (r["level"], r["category"], m)
    row = t.filter(
        (pl.col("setting") == "scoped")
        & (pl.col("level") == "evidence")
        & (pl.col("category") == "all")
    ).row(0, named=True)
    # LoCoMo's proportional evidence recall, by hand: (1 + 1 + 1/3 + 1/2 + 1 + 1) / 6
    assert row["recall_at_5"] == pytest.approx(29 / 36)
    assert row["recall_at_10"] == pytest.approx(11 / 12)
    assert math.isnan(row["ndcg_at_10"])  # a2-3 and a3-2 cover several units
    # unscoped: q2 finds a1-3 first (memory hit), q4 returns nothing
    u = t.filter(
        (pl.col("setting") == "unscoped")
        & (pl.col("level") == "memory")
        & (pl.col("category") == "all")
    ).row(0, named=True)
    assert u["hit_at_1"] == pytest.approx(2 / 6) and u["mrr"] == pytest.approx(
        (1 / 3 + 1 + 1 / 7 + 0 + 1 + 0.5) / 6
    )
    # every scoped answer but q3's is short of its scope: (0 + 5 * 1) / 6
    assert row["short_at_50"] == pytest.approx(5 / 6)
    assert row["fill_at_50"] == pytest.approx((3 / 8 + 3 / 8 + 1 + 2 / 8 + 3 / 5 + 4 / 5) / 6)
    c = pl.read_csv(ci)
    assert c.columns[:5] == list(SCORE_COLUMNS[:5])
    assert not {c_ for c_ in c.columns if c_.startswith(("fill", "short"))}  # no intervals
    assert {f"{m}{s}" for m in METRICS for s in ("", "_lo", "_hi")} <= set(c.columns)
    r = c.filter((pl.col("level") == "group") & (pl.col("category") == "all")).row(0, named=True)
    assert r["mrr_lo"] <= r["mrr"] <= r["mrr_hi"]
    ev = c.filter((pl.col("level") == "evidence") & (pl.col("category") == "all")).row(
        0, named=True
    )
    assert math.isnan(ev["ndcg_at_5_lo"]) and not math.isnan(ev["recall_at_5_lo"])


def test_tuning_scopes_add_a_held_out_row(tiny, tmp_path, caplog):
    from agentmem.external.score import HELD_OUT
    from agentmem.report.external_tables import external_tables, vs_dragon

    d, _ = tiny
    run = tmp_path / "scoped.parquet"
    _runs(RUN_SCOPED).write_parquet(run)
    out, ci = tmp_path / "scores.csv", tmp_path / "ci.csv"
    t = score_dataset(d, {("scoped", "hand"): run}, out, ci, n_boot=20, tuning_scopes=["alice"])
    ev = t.filter(pl.col("level") == "evidence")
    assert ev["category"].to_list() == ["fact", "temporal", "multi-hop", HELD_OUT, "all"]
    held = ev.filter(pl.col("category") == HELD_OUT).row(0, named=True)
    assert held["n_queries"] == 2  # bob's q5 and q6; alice's q1-q4 were tuned on
    for j, m in enumerate(METRICS):
        assert _close(held[m], sum(HAND["evidence"][q][j] for q in ("q5", "q6")) / 2), m
    # every query tuned on, or a scope no query has: no held-out row (the latter warned)
    both = score_dataset(
        d, {("scoped", "hand"): run}, out, ci, n_boot=20, tuning_scopes=["alice", "bob"]
    )
    assert HELD_OUT not in both["category"].to_list()
    with caplog.at_level("WARNING"):
        none = score_dataset(
            d, {("scoped", "hand"): run}, out, ci, n_boot=20, tuning_scopes=["carol"]
        )
    assert HELD_OUT not in none["category"].to_list()
    assert "tuning scopes ['carol']: no query has them" in caplog.text
    # the report's sentence against DRAGON, for all questions and the held-out ones
    score_dataset(d, {("scoped", "hand"): run}, out, ci, n_boot=20, tuning_scopes=["alice"])
    view = external_tables("tiny", out, "turns")
    # q5 and q6 find all their evidence at every k: 1.0 against each DRAGON figure
    assert view["versus"][1] == (
        f"At or above DRAGON, scoped, {HELD_OUT} (2 questions): R@5 (DRAGON 0.567): hand "
        "1.000; R@10 (DRAGON 0.662): hand 1.000; R@25 (DRAGON 0.767): hand 1.000; R@50 "
        "(DRAGON 0.827): hand 1.000."
    )
    assert view["versus"][0].startswith("At or above DRAGON, scoped, all (6 questions): R@5")
    from agentmem.external.published import write_comparison_md

    md = write_comparison_md(out, tmp_path / "vs.md", "turns")
    assert "| hand | scoped, held-out | 2 | 1.000 | 1.000 | 1.000 | 1.000 | — | — |" in md
    key = {("scoped", "hand", "evidence", "all"): {"recall_at_10": 0.70, "n_queries": 9}}
    line = vs_dragon(key, ["hand"], {("all", "recall_at_10"): 0.662, ("all", "recall_at_50"): 0.9})
    assert line == "At or above DRAGON, scoped, all (9 questions): R@10 (DRAGON 0.662): hand 0.700."
    key[("scoped", "hand", "evidence", "all")]["recall_at_50"] = 0.85
    line = vs_dragon(key, ["hand"], {("all", "recall_at_10"): 0.662, ("all", "recall_at_50"): 0.9})
    assert line.endswith("R@10 (DRAGON 0.662): hand 0.700; R@50 (DRAGON 0.900): none.")
    assert vs_dragon(key, ["hand"], {}) is None


ALICE = ["a1-1", "a1-2", "a1-3", "a2-1", "a2-2", "a2-3", "a3-1", "a3-2"]
BOB = ["b1-1", "b1-2", "b1-3", "b2-1", "b2-2"]
#: every query answered with its whole scope: fill 1 at every k
RUN_FULL = {q: ALICE if q in ("q1", "q2", "q3", "q4") else BOB for q in RUN_SCOPED}


def test_report_tables_mark_recall_of_short_answers(tiny, tmp_path):
    from agentmem.report.external_tables import SHORT_MARK, external_tables, fill_markdown

    d, _ = tiny
    paths = {}
    for arm, run in (("short", RUN_SCOPED), ("full", RUN_FULL)):
        paths[("scoped", arm)] = tmp_path / f"{arm}.parquet"
        _runs(run).write_parquet(paths[("scoped", arm)])
    scores = tmp_path / "scores.csv"
    score_dataset(d, paths, scores, tmp_path / "ci.csv", n_boot=50)
    view = external_tables("tiny", scores, None)
    evidence, memory, fill = view["tables"]
    rows = {r["label"]: r["values"] for r in evidence["rows"]}
    # "short" answered five of six questions with fewer memories than their scope holds:
    # every recall cell is marked but temporal's (q3 got its whole scope); "full" has none
    assert evidence["groups"] == ["fact", "temporal", "multi-hop", "all"]
    marks = [isinstance(v, str) and v.endswith(f" {SHORT_MARK}") for v in rows["short"]]
    assert marks == [True] * 4 + [False] * 4 + [True] * 8
    assert all(isinstance(v, float) for v in rows["full"])
    # the all-category R@5 of "short", by hand: (1 + 1 + 1/3 + 1/2 + 1 + 1) / 6
    assert rows["short"][-4] == f"{29 / 36:.3f} {SHORT_MARK}"
    assert SHORT_MARK in evidence["caption"] and "hnsw.ef_search = 40" in evidence["caption"]
    mem = {r["label"]: r["values"] for r in memory["rows"]}
    assert isinstance(mem["short"][0], str) and isinstance(mem["short"][1], float)  # MRR
    assert fill["metrics"] == ["fill@5", "fill@10", "fill@25", "fill@50", "short@50"]
    f = {r["label"]: r["values"] for r in fill["rows"]}
    assert f["full"] == [1.0, 1.0, 1.0, 1.0, 0.0]
    assert f["short"][3] == pytest.approx((3 / 8 + 3 / 8 + 1 + 2 / 8 + 3 / 5 + 4 / 5) / 6)
    assert f["short"][4] == pytest.approx(5 / 6)
    md = fill_markdown(scores)
    assert "| short | scoped | 6 | 0.667 | 0.567 | 0.567 | 0.567 | 0.833 |" in md
    assert "| full | scoped | 6 | 1.000 | 1.000 | 1.000 | 1.000 | 0.000 |" in md
    assert "short (scoped: R@5, R@10, R@25, R@50)" in md and "full (" not in md
    # a scores table written before the fill columns is shown unmarked, without the fill
    old = tmp_path / "old.csv"
    pl.read_csv(scores).drop(FILL_COLUMNS).write_csv(old)
    assert len(external_tables("tiny", old, None)["tables"]) == 2 and fill_markdown(old) == ""


def test_memory_and_group_levels_match_trec_eval(tiny):
    """Memory and group levels against trec_eval through ir-measures (same conventions as
    tests/test_metrics.py: binary gains, the run as scores -rank, score-0 qrels judged
    non-relevant)."""
    d, _ = tiny
    pq = per_query_scores(d, _runs(RUN_SCOPED), arm="hand")
    qrels = pl.read_parquet(d / "qrels.parquet")
    judged: dict[str, dict[str, int]] = {"q1": {"a2-2": 0}}
    for q, m in qrels.select("query_id", "memory_id").iter_rows():
        judged.setdefault(q, {})[m] = 1
    session_of = dict(
        pl.read_parquet(d / "memories.parquet").select("memory_id", "session_id").iter_rows()
    )
    judged_group: dict[str, dict[str, int]] = {}
    for q, s in pl.read_parquet(d / "qrels_group.parquet").iter_rows():
        judged_group.setdefault(q, {})[s] = 1
    runs = {
        "memory": (judged, RUN_SCOPED),
        "group": (judged_group, {q: group_ranking(r, session_of) for q, r in RUN_SCOPED.items()}),
    }
    measures = {
        "recall_at_5": R @ 5, "recall_at_10": R @ 10, "recall_at_25": R @ 25,
        "recall_at_50": R @ 50, "ndcg_at_5": nDCG @ 5, "ndcg_at_10": nDCG @ 10, "mrr": RR,
    }  # fmt: skip
    compared = 0
    for level, (qr, ranked) in runs.items():
        run = {q: {m: -float(i) for i, m in enumerate(r, 1)} for q, r in ranked.items() if r}
        lib: dict[tuple[str, str], float] = {}
        for mm in ir_measures.pytrec_eval.iter_calc(list(measures.values()), qr, run):
            lib[(mm.query_id, str(mm.measure))] = mm.value
        for r in pq.filter(pl.col("level") == level).iter_rows(named=True):
            for col, meas in measures.items():
                want = lib.get((r["query_id"], str(meas)), 0.0)  # no run rows: 0
                assert r[col] == pytest.approx(want, abs=1e-9), (level, r["query_id"], col)
                compared += 1
    assert compared == 2 * 6 * 7


def test_evidence_scores_single_unit_ndcg():
    # every memory covers one unit; y duplicates x's unit: its rank keeps no gain
    cover = {"x": ["u1"], "y": ["u1"], "z": ["u2"], "w": ["u9"]}
    s = evidence_scores(["w", "x", "y", "z"], cover, {"u1", "u2"}, single_unit=True)
    assert s["ndcg_at_5"] == pytest.approx((1 / log2(3) + 1 / log2(5)) / N3)
    assert (s["recall_at_5"], s["mrr"], s["hit_at_1"]) == (1.0, 0.5, 0.0)
    assert evidence_scores([], cover, {"u1"}, single_unit=True)["recall_at_50"] == 0.0
    with pytest.raises(ValueError):
        evidence_scores(["x"], cover, set(), single_unit=True)


def test_scoring_rejects_mismatched_runs(tiny):
    d, _ = tiny
    missing = dict(RUN_SCOPED)
    del missing["q6"]
    with pytest.raises(ValueError, match="q6 has no rows"):
        per_query_scores(d, _runs(missing), arm="x")
    with pytest.raises(ValueError, match="nope is not a memory"):
        per_query_scores(d, _runs(RUN_SCOPED | {"q6": ["nope"]}), arm="x")
    with pytest.raises(ValueError, match="not in"):
        per_query_scores(d, _runs(RUN_SCOPED | {"q9": []}), arm="x")
    with pytest.raises(ValueError, match="at least one run"):
        score_dataset(d, {}, d / "x.csv", d / "y.csv")


# ------------------------------------------------------------------ bad input

BAD = [
    # (file, line, replacement, expected message after the path)
    ("corpus.jsonl", 3, '{"_id": "a1-3", "text": "x"', r"corpus.jsonl:3: not valid JSON"),
    ("corpus.jsonl", 3, '["a1-3"]', r"corpus.jsonl:3: expected a JSON object, got \[\"a1-3\"\]"),
    (
        "corpus.jsonl", 4,
        '{"_id": "a2-1", "text": "t", "session": "a2", "day": "x"}',
        r'corpus.jsonl:4: day: expected an integer >= 0, got "x"',
    ),
    (
        "corpus.jsonl", 4,
        '{"_id": "a2-1", "text": "t", "session": "a2", "day": -1}',
        r"corpus.jsonl:4: day: expected an integer >= 0, got -1",
    ),
    (
        "corpus.jsonl", 4,
        '{"_id": "a2-1", "text": "t", "session": "a2", "day": 1.5}',
        r"corpus.jsonl:4: day: expected an integer >= 0, got 1.5",
    ),
    (
        "corpus.jsonl", 4,
        '{"_id": "a2-1", "text": "t", "session": "a2", "day": true}',
        r"corpus.jsonl:4: day: expected an integer >= 0, got true",
    ),
    (
        "corpus.jsonl", 5,
        '{"_id": "a2-2", "session": "a2", "day": 3}',
        r"corpus.jsonl:5: text: missing \(required\)",
    ),
    (
        "corpus.jsonl", 5,
        '{"_id": "a2-2", "text": " ", "session": "a2", "day": 3}',
        r"corpus.jsonl:5: text: expected a string \(non-empty\)",
    ),
    (
        "corpus.jsonl", 5,
        '{"_id": "a2-2", "text": "t", "day": 3}',
        r"corpus.jsonl:5: session: missing \(required\)",
    ),
    (
        "corpus.jsonl", 5,
        '{"_id": "a2-2", "text": "t", "session": "a2", "dya": 3}',
        r"corpus.jsonl:5: dya: unknown key .*did you mean 'day'\?",
    ),
    (
        "corpus.jsonl", 5,
        '{"_id": "a2-2", "text": "t", "session": "a2", "day": 3, "day": 4}',
        r"corpus.jsonl:5: not valid JSON \(duplicate key 'day'\)",
    ),
    (
        "corpus.jsonl", 6,
        '{"_id": "a2-2", "text": "t", "session": "a2", "day": 3}',
        r'corpus.jsonl:6: _id: duplicate "a2-2" \(first on line 5\)',
    ),
    (
        "corpus.jsonl", 6,
        '{"_id": "", "text": "t", "session": "a2", "day": 3}',
        r"corpus.jsonl:6: _id: expected a string \(non-empty\), got \"\"",
    ),
    (
        "corpus.jsonl", 6,
        '{"_id": "a2-3", "text": "t", "session": "a2", "day": 3, "kind": "memory"}',
        r'corpus.jsonl:6: kind: expected one of episodic, semantic, procedural, got "memory"',
    ),
    (
        "corpus.jsonl", 6,
        '{"_id": "a2-3", "text": "t", "session": "a2", "day": 3, "scope": ""}',
        r"corpus.jsonl:6: scope: expected a string \(non-empty\) or null",
    ),
    (
        "corpus.jsonl", 6,
        '{"_id": "a2-3", "text": "t", "session": "a2", "day": 3, "scope": "bob"}',
        r'corpus.jsonl:6: scope: "bob", but session "a2" has scope "alice" \(line 4\)',
    ),
    (
        "corpus.jsonl", 6,
        '{"_id": "a2-3", "text": "t", "session": "a2", "day": 3, "evidence": "a1-1"}',
        r"corpus.jsonl:6: evidence: expected a list of non-empty strings",
    ),
    (
        "corpus.jsonl", 6,
        '{"_id": "a2-3", "text": "t", "session": "a2", "day": 3, "evidence": ["a", "a"]}',
        r'corpus.jsonl:6: evidence: "a" is listed twice',
    ),
    (
        "corpus.jsonl", 6,
        '{"_id": "a2-3", "text": "t", "session": "a2", "day": 3, "turn": "2"}',
        r'corpus.jsonl:6: turn: expected an integer >= 0, got "2"',
    ),
    (
        "queries.jsonl", 2,
        '{"_id": "q1", "text": "again"}',
        r'queries.jsonl:2: _id: duplicate "q1" \(first on line 1\)',
    ),
    (
        "queries.jsonl", 2,
        '{"_id": "a1-1", "text": "a query named like a memory"}',
        r'queries.jsonl:2: _id: "a1-1" is also a memory id \(corpus.jsonl line 1\)',
    ),
    (
        "queries.jsonl", 2,
        '{"_id": "q2", "text": "t", "category": "facts"}',
        r'queries.jsonl:2: category: "facts" is not one of the categories of dataset.json',
    ),
    (
        "queries.jsonl", 2,
        '{"_id": "q2", "text": "t", "category": "fact", "evidence": []}',
        r"queries.jsonl:2: evidence: expected a list of non-empty strings \(at least one\)",
    ),
    (
        "queries.jsonl", 2,
        '{"_id": "q2", "text": "t", "category": "fact", "title": "BEIR queries have none"}',
        r"queries.jsonl:2: title: unknown key",
    ),
    ("corpus.jsonl", 3, '{"_id": "a1-3 ", "text": "t", "session": "a1", "day": 0}',
     r'corpus.jsonl:3: _id: expected no tab, line break or surrounding space, got "a1-3 "'),
    ("queries.jsonl", 1, '{"_id": "q\\t1", "text": "t", "category": "fact"}',
     r'queries.jsonl:1: _id: expected no tab, line break or surrounding space, got "q\\t1"'),
    ("qrels.tsv", 1, "query-id\tdoc-id\tscore",
     r'qrels.tsv:1: header: expected "query-id\\tcorpus-id\\tscore"'),
    ("qrels.tsv", 3, "q1\ta2-2\t1.5",
     r'qrels.tsv:3: score: expected an integer 0..127, got "1.5"'),
    ("qrels.tsv", 3, "q1\ta2-2\t-1",
     r'qrels.tsv:3: score: expected an integer 0..127, got "-1"'),
    ("qrels.tsv", 3, "q1\ta2-2", r"qrels.tsv:3: expected 3 tab-separated columns, got 2"),
    ("qrels.tsv", 3, "q1\t\t1", r"qrels.tsv:3: corpus-id: empty"),
    ("qrels.tsv", 3, "q1\ta1-1\t1",
     r"qrels.tsv:3: corpus-id: duplicate pair q1 / a1-1 \(first on line 2\)"),
    ("dataset.json", 2, '  "format": "beir",',
     r'dataset.json:2: format: expected "agentmem-memory", got "beir"'),
    ("dataset.json", 3, '  "version": 2,', r"dataset.json:3: version: expected 1, got 2"),
    ("dataset.json", 4, '  "name": "tiny memory",',
     r"dataset.json:4: name: expected letters, digits"),
    ("dataset.json", 5, '  "units": "note",',
     r"dataset.json:5: units: unknown key .*did you mean 'unit'\?"),
    ("dataset.json", 9, '  "categories": ["fact", "fact"]',
     r'dataset.json:9: categories: "fact" is listed twice'),
    ("dataset.json", 9, '  "categories": ["fact", "all"]',
     r'dataset.json:9: categories: "all" is reserved'),
    ("queries.jsonl", 2, '{"_id": "q2", "text": "t"}',
     r"queries.jsonl:2: category: missing \(required: dataset.json lists categories fact, "
     r"temporal, multi-hop\)"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "line", "text", "message"), BAD)
def test_structural_errors_name_file_line_field(tmp_path, name, line, text, message):
    d = _copy(tmp_path)
    _edit(d, name, line, text)
    with pytest.raises(DatasetError, match=message) as exc:
        prepare_dataset(d, tmp_path / "out")
    assert str(exc.value).startswith(str(d / name))
    assert exc.value.line == line
    assert not (tmp_path / "out").exists()  # nothing written


# ------------------------------------------------------------------ characters no arm can store

#: (file, line, replacement with <C> where the character goes, field, the value as shown)
CHAR_CASES = [
    ("corpus.jsonl", 2,
     '{"_id": "a1-2<C>", "text": "t", "session": "a1", "day": 0, "scope": "alice"}',
     "_id", '"a1-2<C>"'),
    ("corpus.jsonl", 2,
     '{"_id": "a1-2", "text": "Alice works as a nurse <C>at the city hospital.", '
     '"session": "a1", "day": 0, "scope": "alice", "source": "Alice"}',
     "text", '..."ce works as a nurse <C>at the city hospital."'),
    ("corpus.jsonl", 2, '{"_id": "a1-2", "text": "t", "session": "a1<C>", "day": 0}',
     "session", '"a1<C>"'),
    ("corpus.jsonl", 2,
     '{"_id": "a1-2", "text": "t", "session": "a1", "day": 0, "scope": "alice<C>"}',
     "scope", '"alice<C>"'),
    ("corpus.jsonl", 2,
     '{"_id": "a1-2", "text": "t", "session": "a1", "day": 0, "scope": "alice", '
     '"source": "<C>Alice"}',
     "source", '"<C>Alice"'),
    ("corpus.jsonl", 6,
     '{"_id": "a2-3", "text": "t", "session": "a2", "day": 3, "scope": "alice", '
     '"kind": "semantic<C>"}',
     "kind", '"semantic<C>"'),
    ("corpus.jsonl", 6,
     '{"_id": "a2-3", "text": "t", "session": "a2", "day": 3, "scope": "alice", '
     '"evidence": ["a1-1", "a1-2<C>"]}',
     "evidence", '"a1-2<C>"'),
    ("corpus.jsonl", 1,
     '{"_id": "a1-1", "title": "pets<C>", "text": "t", "session": "a1", "day": 0, '
     '"scope": "alice"}',
     "title", '"pets<C>"'),
    ("corpus.jsonl", 1,
     '{"_id": "a1-1", "text": "t", "session": "a1", "day": 0, "scope": "alice", '
     '"metadata": {"origin": ["chat<C>"]}}',
     "metadata", '"chat<C>"'),
    ("queries.jsonl", 1, '{"_id": "q1<C>", "text": "t", "category": "fact"}', "_id", '"q1<C>"'),
    ("queries.jsonl", 1,
     '{"_id": "q1", "text": "What is the name of Alice\'s cat<C>?", "category": "fact"}',
     "text", '..." name of Alice\'s cat<C>?"'),
    ("queries.jsonl", 1, '{"_id": "q1", "text": "t", "category": "fact<C>"}',
     "category", '"fact<C>"'),
    ("queries.jsonl", 1, '{"_id": "q1", "text": "t", "category": "fact", "scope": "alice<C>"}',
     "scope", '"alice<C>"'),
    ("queries.jsonl", 3,
     '{"_id": "q3", "text": "t", "category": "temporal", "evidence": ["a1-1", "<C>"]}',
     "evidence", '"<C>"'),
    ("dataset.json", 4, '  "name": "tiny-memory<C>",', "name", '"tiny-memory<C>"'),
    ("dataset.json", 6,
     '  "description": "Hand-made: two users\' notes<C> in six sessions, six questions.",',
     "description", '..."de: two users\' notes<C> in six sessions, six questions."'),
    ("dataset.json", 9, '  "categories": ["fact", "temporal<C>", "multi-hop"]',
     "categories", '"temporal<C>"'),
]  # fmt: skip
#: qrels.tsv holds raw characters (a lone surrogate there is not UTF-8: refused as such)
QRELS_CHAR_CASES = [
    ("qrels.tsv", 2, "q1<C>\ta1-1\t2", "query-id", '"q1<C>"'),
    ("qrels.tsv", 2, "q1\ta1-1<C>\t2", "corpus-id", '"a1-1<C>"'),
    ("qrels.tsv", 2, "q1\ta1-1\t2<C>", "score", '"2<C>"'),
]
NUL = "expected no NUL character (U+0000; PostgreSQL text cannot hold it)"


def _refused(tmp_path: Path, name: str, line: int, text: str) -> DatasetError:
    d = _copy(tmp_path)
    _edit(d, name, line, text)
    with pytest.raises(DatasetError) as exc:
        prepare_dataset(d, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written
    return exc.value


def _case_id(case: tuple[str, int, str, str, str]) -> str:
    return f"{case[0]}:{case[1]}:{case[3]}"


@pytest.mark.parametrize(
    ("name", "line", "text", "field", "shown"),
    CHAR_CASES + QRELS_CHAR_CASES,
    ids=[_case_id(c) for c in CHAR_CASES + QRELS_CHAR_CASES],
)
def test_nul_character_is_refused_in_every_string_field(tmp_path, name, line, text, field, shown):
    raw = "\x00" if name == "qrels.tsv" else "\\u0000"
    exc = _refused(tmp_path, name, line, text.replace("<C>", raw))
    d = tmp_path / "ds"
    want = f"{d / name}:{line}: {field}: {NUL}, got {shown.replace('<C>', chr(92) + 'u0000')}"
    assert str(exc) == want
    assert (exc.path, exc.line, exc.field) == (d / name, line, field)


SURROGATE = "expected no lone surrogate (U+D800..U+DFFF; not encodable as UTF-8)"


@pytest.mark.parametrize(
    ("name", "line", "text", "field", "shown"), CHAR_CASES, ids=[_case_id(c) for c in CHAR_CASES]
)
def test_lone_surrogate_is_refused_in_every_string_field(tmp_path, name, line, text, field, shown):
    exc = _refused(tmp_path, name, line, text.replace("<C>", "\\ud800"))
    d = tmp_path / "ds"
    want = f"{d / name}:{line}: {field}: {SURROGATE}, got {shown.replace('<C>', chr(92) + 'ud800')}"
    assert str(exc) == want
    assert (exc.path, exc.line, exc.field) == (d / name, line, field)


def test_unknown_key_with_a_lone_surrogate_is_named_escaped(tmp_path):
    exc = _refused(
        tmp_path / "corpus",
        "corpus.jsonl",
        2,
        '{"_id": "a1-2", "te\\udc00xt": "t", "session": "a1", "day": 0, "scope": "alice"}',
    )
    d = tmp_path / "corpus" / "ds"
    assert str(exc) == (
        f"{d / 'corpus.jsonl'}:2: te\\udc00xt: unknown key (allowed: _id, text, session, day, "
        "scope, kind, source, turn, evidence, title, metadata); did you mean 'text'?"
    )
    assert (exc.line, exc.field) == (2, "te\\udc00xt")
    exc = _refused(tmp_path / "meta", "dataset.json", 5, '  "un\\ud800it": "note",')
    d = tmp_path / "meta" / "ds"
    assert str(exc) == (
        f"{d / 'dataset.json'}:5: un\\ud800it: unknown key (allowed: format, version, name, "
        "unit, description, license, source, categories); did you mean 'unit'?"
    )


def test_surrogate_pair_escape_is_one_character(tmp_path):
    d = _copy(tmp_path)
    _edit(
        d,
        "corpus.jsonl",
        2,
        '{"_id": "a1-2", "text": "Alice \\ud83d\\ude00", "session": "a1", "day": 0, '
        '"scope": "alice"}',
    )
    m = prepare_dataset(d, tmp_path / "out")
    assert m["counts"]["memories"] == 14
    body = pl.read_parquet(tmp_path / "out" / "memories.parquet")["body"].to_list()
    assert "Alice \U0001f600" in body


def test_missing_files_and_directory(tmp_path):
    with pytest.raises(DatasetError, match="no such directory"):
        read_dataset(tmp_path / "nowhere")
    d = _copy(tmp_path)
    (d / "qrels.tsv").unlink()
    with pytest.raises(DatasetError, match=r"qrels.tsv: missing \(a dataset needs dataset.json"):
        read_dataset(d)
    (d / "qrels.tsv").write_text("")
    with pytest.raises(DatasetError, match=r"qrels.tsv:1: header: missing"):
        read_dataset(d)
    (d / "corpus.jsonl").write_bytes(b'{"_id": "a", "text": "\xff"}\n')
    with pytest.raises(DatasetError, match=r"corpus.jsonl:1: not UTF-8"):
        read_dataset(d)


def test_referential_problems_are_reported_not_dropped(tmp_path, caplog):
    d = _copy(tmp_path)
    _edit(d, "qrels.tsv", 0, "q2\tnope\t1")  # line 12: unknown memory
    _edit(d, "qrels.tsv", 0, "q9\ta1-1\t1")  # line 13: unknown query
    _edit(d, "qrels.tsv", 0, "q5\ta1-1\t1")  # line 14: relevant memory outside bob's scope
    _edit(
        d,
        "queries.jsonl",
        0,
        '{"_id": "q7", "text": "Who is Carol?", "category": "fact", "scope": "carol"}',
    )
    _edit(
        d,
        "queries.jsonl",
        0,
        '{"_id": "q8", "text": "t", "category": "fact", "scope": "bob", '
        '"evidence": ["b1-1", "zzz"]}',
    )
    with caplog.at_level(logging.WARNING, logger="agentmem.external.format"):
        m = prepare_dataset(d, tmp_path / "out")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "1 unknown-memory, 1 unknown-query, 1 empty-scope, 1 out-of-scope" in warnings[0]
    assert m["issues"] == {
        "unknown-memory": 1,
        "unknown-query": 1,
        "empty-scope": 1,
        "out-of-scope": 1,
        "uncovered-evidence": 2,  # q8's zzz, and q5's a1-1 (from the out-of-scope qrel)
        "no-qrels": 1,
        "no-relevant": 1,
    }
    with open(tmp_path / "out" / "issues.csv", newline="") as fh:
        rows = [(r["file"], r["line"], r["kind"], r["id"]) for r in csv.DictReader(fh)]
    assert rows == [
        ("queries.jsonl", "5", "uncovered-evidence", "q5"),
        ("queries.jsonl", "7", "empty-scope", "q7"),
        ("queries.jsonl", "7", "no-relevant", "q7"),
        ("queries.jsonl", "8", "no-qrels", "q8"),
        ("queries.jsonl", "8", "uncovered-evidence", "q8"),
        ("qrels.tsv", "12", "unknown-memory", "nope"),
        ("qrels.tsv", "13", "unknown-query", "q9"),
        ("qrels.tsv", "14", "out-of-scope", "a1-1"),
    ]
    assert m["counts"]["queries"] == 7 and m["counts"]["queries_skipped"] == 1
    q = pl.read_parquet(tmp_path / "out" / "queries.parquet")
    assert "q7" not in q["query_id"].to_list() and "q8" in q["query_id"].to_list()
    qr = pl.read_parquet(tmp_path / "out" / "qrels.parquet")
    assert "nope" not in qr["memory_id"].to_list() and ("q5", "a1-1", 1) in qr.rows()
    assert m["counts"]["qrels"] == 10
    # q8 is scored at evidence level only; its evidence keeps the uncovered unit
    qe = pl.read_parquet(tmp_path / "out" / "query_evidence.parquet")
    assert qe.filter(pl.col("query_id") == "q8")["evidence_id"].to_list() == ["b1-1", "zzz"]
    runs = _runs(RUN_SCOPED | {"q8": ["b1-1"]})
    pq = per_query_scores(tmp_path / "out", runs)
    q8 = pq.filter(pl.col("query_id") == "q8")
    assert q8["level"].to_list() == ["evidence"] and q8["recall_at_5"].item() == 0.5


def test_external_figure_draws_a_scores_table(tmp_path):
    """The external dataset's figure (constrained layout, three panels) from a scores table."""
    from agentmem.report.figures.external import plot

    rows = [
        {"setting": s, "arm": a, "level": "evidence", "category": c, "n_queries": 4}
        | {f"recall_at_{k}": min(1.0, 0.1 * i + 0.02 * k) for k in (5, 10, 25, 50)}
        for s in ("scoped", "unscoped")
        for i, a in enumerate(("sqlite-fts", "pg-hnsw"))
        for c in ("single-hop", "all")
    ]
    pl.DataFrame(rows).write_csv(tmp_path / "scores.csv")
    plot(tmp_path / "scores.csv", tmp_path / "external.svg", dataset="tiny")
    svg = (tmp_path / "external.svg").read_text()
    assert "sqlite-fts" in svg and "Evidence recall@10 by category (scoped; 4 questions)" in svg
    assert (tmp_path / "external.png").stat().st_size > 0
