"""Update anomaly: restatement statistics and the top-k repair probe.

The probe runs on the session's small real corpus (``support.corpora.small_corpus``, 80
facts) with real all-MiniLM-L6-v2 vectors and real sqlite-fts / file-vec stores, reopened
from disk as the pipeline does, and on stub arms whose answers are known exactly.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import polars as pl
import pytest
from support.corpora import SMALL, small_corpus

from agentmem.arms import ARMS
from agentmem.arms.base import ArmError, Result
from agentmem.corpus import load_corpus
from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.embeddings import load_embeddings
from agentmem.trials import TrialError
from agentmem.trials.anomaly import (
    ANOMALY_COLUMNS,
    repair_probe,
    restatement_counts,
    restatement_stats,
    run_anomaly_probe,
    select_probe_queries,
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
    # the study counts over facts with more than one memory: 2,2,2,3,3,4,6,10 (n = 8)
    s = restatement_stats(_hand_memories())
    assert s["facts"] == 8 and s["single_memory_facts"] == 2
    assert s["mean"] == pytest.approx(4.0)  # 32 / 8
    assert s["median"] == 3.0  # sorted[floor(0.5 * 8)] = sorted[4]
    assert s["p90"] == 10.0  # sorted[floor(0.9 * 8)] = sorted[7]
    assert s["max"] == 10
    assert s["rows_to_update_normalised"] == 1
    assert s["rows_to_update_denormalised"] == pytest.approx(4.0)


def test_restatement_stats_without_form_column_and_empty():
    mem = _hand_memories().filter(pl.col("form") != "distractor").drop("form")
    assert restatement_stats(mem)["mean"] == pytest.approx(4.0)
    singles = restatement_stats(mem.filter(pl.col("fact_id").is_in(["F01", "F02"])))
    assert singles["facts"] == 0 and singles["single_memory_facts"] == 2
    assert singles["rows_to_update_denormalised"] == 0.0
    with pytest.raises(ValueError, match="fact_id"):
        restatement_stats(mem.drop("fact_id"))


def _hand_queries() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Questions out of class order; which qualify is known by construction."""
    mem = _hand_memories()
    ids = {f: mem.filter(pl.col("fact_id") == f)["memory_id"].to_list() for f in _COUNTS}
    rows = [
        ("hybrid-001", "hybrid", ids["F10"]),  # qualifies, asked last (class order)
        ("lexical-002", "lexical", ids["F01"][:1]),  # one restatement: skipped
        ("lexical-001", "lexical", ids["F09"]),  # qualifies, first
        ("provenance-001", "provenance", ids["F03"] + ids["F04"]),  # two facts: skipped
        ("temporal-001", "temporal", ids["F08"][:2]),  # part of F08 (4): qualifies
        ("currency-001", "currency", ["M900"]),  # a memory of no fact: skipped
    ]
    queries = pl.DataFrame(
        {"query_id": [r[0] for r in rows], "class": [r[1] for r in rows]},
    )
    qrels = pl.DataFrame(
        [(r[0], m) for r in rows for m in r[2]],
        schema={"query_id": pl.String, "memory_id": pl.String},
        orient="row",
    )
    return queries, qrels


def test_select_probe_queries_in_class_order():
    queries, qrels = _hand_queries()
    mem = _hand_memories()
    assert select_probe_queries(queries, qrels, mem, 10) == [
        ("lexical-001", "F09"),
        ("temporal-001", "F08"),
        ("hybrid-001", "F10"),
    ]
    assert select_probe_queries(queries, qrels, mem, 2) == [
        ("lexical-001", "F09"),
        ("temporal-001", "F08"),
    ]
    with pytest.raises(ValueError, match="at least one"):
        select_probe_queries(queries, qrels, mem, 0)
    with pytest.raises(ValueError, match="two or more"):
        select_probe_queries(queries.filter(pl.col("query_id") == "lexical-002"), qrels, mem, 5)


# --- the repair probe on a real small corpus ------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The small corpus (linked in), real embeddings, sqlite-fts and file-vec stores built
    then closed."""
    d = tmp_path_factory.mktemp("anomaly")
    corpus_dir, emb = small_corpus(tmp_path_factory)
    (d / "corpus").symlink_to(corpus_dir)
    (d / "emb.parquet").symlink_to(emb)
    corpus = load_corpus(corpus_dir)
    vectors = load_embeddings(emb)
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
        {"facts": 120, "k": K, **kw},
    )


def _chosen(small: Path, n: int = 120) -> list[tuple[str, str]]:
    d = small / "corpus"
    return select_probe_queries(
        pl.read_parquet(d / "queries.parquet"),
        pl.read_parquet(d / "qrels.parquet"),
        pl.read_parquet(d / "memories.parquet"),
        n,
    )


class _Stub:
    """An arm answering each question from a fixed list of ids (``answer(query_id)``)."""

    name = "stub"

    def __init__(self, answer) -> None:  # noqa: ANN001
        self.answer = answer
        self.asked: list[tuple[str, int]] = []

    def query(self, q, k):  # noqa: ANN001, ANN201
        self.asked.append((q.query_id, k))
        return Result(memory_ids=self.answer(q.query_id)[:k])


def test_probe_on_stub_arms_is_exact(small):
    mem = load_corpus(small / "corpus").memories
    chosen = _chosen(small)
    ids_of = {
        f: mem.filter((pl.col("fact_id") == f) & (pl.col("form") != "distractor"))[
            "memory_id"
        ].to_list()
        for _, f in chosen
    }
    fact_of_q = dict(chosen)
    totals = [len(ids_of[f]) for _, f in chosen]
    # an oracle returning the fact's restatements (twice, with a distractor in front)
    oracle = _Stub(lambda qid: ["NOPE", *ids_of[fact_of_q[qid]] * 2])
    r = repair_probe(oracle, small / "corpus", small / "emb.parquet", facts=120, k=3)
    reached = [2] * len(totals)  # k = 3: NOPE, then two distinct restatements (all t >= 2)
    assert oracle.asked == [(qid, 3) for qid, _ in chosen]
    assert r["facts_probed"] == len(chosen)
    assert r["mean_total"] == pytest.approx(sum(totals) / len(totals))
    assert r["mean_reached"] == pytest.approx(sum(reached) / len(reached))
    assert r["stale_fraction"] == pytest.approx(1 - sum(reached) / sum(totals))
    big = repair_probe(
        _Stub(lambda qid: ids_of[fact_of_q[qid]]), small / "corpus", small / "emb.parquet", k=99
    )
    assert big["stale_fraction"] == 0.0 and big["mean_reached"] == big["mean_total"]
    none = repair_probe(_Stub(lambda qid: []), small / "corpus", small / "emb.parquet")
    assert none["stale_fraction"] == 1.0 and none["mean_reached"] == 0.0


def test_probe_asks_fact_questions_in_class_order(small):
    chosen = _chosen(small)
    q = pl.read_parquet(small / "corpus" / "queries.parquet")
    cls = dict(zip(q["query_id"], q["class"], strict=True))
    ranks = [QUERY_CLASSES.index(cls[qid]) for qid, _ in chosen]
    assert ranks == sorted(ranks) and "provenance" not in {cls[qid] for qid, _ in chosen}
    counts = dict(restatement_counts(load_corpus(small / "corpus").memories).iter_rows())
    assert all(counts[f] >= 2 for _, f in chosen)
    # every question that targets one fact of >= 2 restatements is asked (fewer than 120)
    assert len(chosen) < 120 and _chosen(small, 5) == chosen[:5]


def test_probe_bounds_and_csv(small):
    for name in ("sqlite-fts", "file-vec"):
        row = _probe(small, name)
        assert row["arm"] == name
        assert row["facts_probed"] == len(_chosen(small))
        assert 0 <= row["mean_reached"] <= min(K, row["mean_total"])
        assert row["mean_total"] >= 2  # only facts with >= 2 restatements are probed
        assert 0.0 < row["stale_fraction"] < 1.0
        df = pl.read_csv(small / "out" / name / "x.csv")
        assert tuple(df.columns) == ANOMALY_COLUMNS
        assert df.height == 1 and df["arm"][0] == name
        assert df["stale_fraction"][0] == pytest.approx(row["stale_fraction"])


def test_probe_deterministic_and_same_facts_for_every_arm(small):
    a = _probe(small, "file-vec", out="a.csv")
    b = _probe(small, "file-vec", out="b.csv")
    assert a == b
    out = small / "out" / "file-vec"
    assert (out / "a.csv").read_bytes() == (out / "b.csv").read_bytes()
    fts = _probe(small, "sqlite-fts")
    assert fts["mean_total"] == a["mean_total"]  # same facts probed
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
    assert r1["mean_reached"] < r10["mean_reached"]
    assert r1["stale_fraction"] > r10["stale_fraction"]


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
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        run_anomaly_probe(
            "sqlite-fts",
            None,
            small / "stores" / "sqlite-fts",
            small / "corpus",
            tmp_path / "nope.parquet",
            tmp_path / "o.csv",
        )
    assert not (tmp_path / "o.csv").exists()


def test_write_restatement_stats(small, tmp_path):
    s = write_restatement_stats(small / "corpus", tmp_path / "stats.json")
    assert json.loads((tmp_path / "stats.json").read_text()) == s
    counts = restatement_counts(load_corpus(small / "corpus").memories)["restatements"]
    multi = counts.filter(counts > 1)
    assert s["facts"] == multi.len() and s["single_memory_facts"] == (counts == 1).sum()
    assert s["facts"] + s["single_memory_facts"] == SMALL.facts
    assert s["mean"] == pytest.approx(multi.mean())
    assert s["max"] >= s["p90"] >= s["median"] >= 2
