"""Tests for agentmem.sweeps (post-filter overfetch, token budget, scaling) and their figures.

One small generated corpus (80 facts, 4 queries per class: ~260 memories, 20 filtered
queries) with real all-MiniLM-L6-v2 embeddings; real stores: hnswlib (file-vec-meta),
embedded PostgreSQL + pgvector (pg-hnsw, pg-hnsw-iterative; one store dir, one server)
and SQLite FTS5 (sqlite-fts). The scaling tests use hand-written build records and
metrics files with hand-computable exponents.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from support.corpora import small_corpus
from support.paths import REPO
from support.postgres import servers_left

from agentmem import pg
from agentmem.arms.base import Predicate, Query
from agentmem.arms.factory import make_arm
from agentmem.corpus.io import load_corpus, load_qrels, load_queries
from agentmem.embeddings import load_embeddings
from agentmem.metrics import ndcg_at_k
from agentmem.sweeps.budget import BUDGET_SCHEMA, budget_per_query, budget_sweep
from agentmem.sweeps.postfilter import (
    POSTFILTER_SCHEMA,
    candidate_value,
    filtered_queries,
    is_reference,
    is_swept,
    postfilter_roles,
    postfilter_sweep,
    predicate_slots,
    relevant_sets,
)
from agentmem.sweeps.scaling import SCALING_SCHEMA, fit_exponents, scaling_table

ARMS = ("file-vec-meta", "pg-hnsw", "pg-hnsw-iterative", "sqlite-fts")
PG_ARMS = ("pg-hnsw", "pg-hnsw-iterative")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """Corpus dir, embeddings path and {arm: store dir}, every arm built and closed."""
    mp = pytest.MonkeyPatch()
    mp.delenv(pg.ENV_DSN, raising=False)  # embedded servers under the temp root
    root = tmp_path_factory.mktemp("sweeps")
    corpus_dir, emb = small_corpus(tmp_path_factory)
    corpus, vectors = load_corpus(corpus_dir), load_embeddings(emb)
    stores = {}
    for name in ARMS:
        # both pg arms share one store dir: one server, one database per arm
        store = root / "stores" / ("pg" if name in PG_ARMS else name)
        arm = make_arm(name)
        try:
            arm.build(corpus, vectors, store)
        finally:
            arm.close()
        stores[name] = store
    assert servers_left(root) == []  # close() stopped the server
    yield corpus_dir, emb, stores
    mp.undo()
    left = servers_left(root)
    assert left == [], f"postgres servers still running under {root}: {left}"


@pytest.fixture(scope="module")
def sweep(built) -> pl.DataFrame:
    corpus_dir, emb, stores = built
    df = postfilter_sweep(
        corpus_dir,
        emb,
        {a: stores[a] for a in ("file-vec-meta", *PG_ARMS)},
        overfetch=(1, 2, 4, 8, 16, 32, 64, 128),
        k=10,
    )
    print(df)
    return df


# ------------------------------------------------------------------------ post-filter
def test_postfilter_roles_come_from_declarations() -> None:
    from agentmem.arms import ARMS as REGISTRY
    from agentmem.config import load_config

    # swept: a declared candidate parameter (overfetch, or an HNSW ef that bounds a filtered
    # search); references: in-search HNSW without text and without one
    roles = (
        ["file-vec-meta", "chroma", "milvus-lite"],
        ["pg-hnsw", "pg-hnsw-iterative", "langgraph-store"],
    )
    assert postfilter_roles(REGISTRY) == roles
    cfg = load_config(REPO / "config" / "config.yaml")
    assert postfilter_roles(cfg.arms) == roles
    # configured order is kept; arms playing neither role are left out
    assert postfilter_roles(["pg-hnsw-iterative", "sqlite-fts", "file-vec", "pg-hnsw"]) == (
        [],
        ["pg-hnsw-iterative", "pg-hnsw"],
    )
    with pytest.raises(KeyError, match="no-such-arm"):
        postfilter_roles(["no-such-arm"])


def test_postfilter_roles_follow_a_new_arms_declarations() -> None:
    """A role is earned by capabilities and candidate_param, not by a name."""
    from dataclasses import replace

    from agentmem.arms.postgres import PgHybridArm
    from agentmem.arms.vector import FileVecArm, FileVecMetaArm

    class OtherPost(FileVecMetaArm):
        name = "other-post"

    class NoCandidate(FileVecArm):
        name = "no-candidate"
        capabilities = replace(FileVecArm.capabilities, filter_stage="post-filter")

    assert is_swept(OtherPost) and not is_reference(OtherPost)
    assert not is_swept(NoCandidate)  # post-filters, but declares no candidate parameter
    assert not is_swept(FileVecArm) and not is_reference(FileVecArm)  # no filter at all
    assert not is_reference(PgHybridArm)  # filters in its search, but also ranks text

    class BoundedInSearch(FileVecArm):
        name = "bounded-in-search"
        capabilities = replace(FileVecArm.capabilities, filter_stage="in-search")
        candidate_param = "ef_search"
        candidate_unit = "list"

    assert is_swept(BoundedInSearch)  # in-search, but its breadth is declared: swept
    assert candidate_value(BoundedInSearch, 4, 10) == 40
    assert candidate_value(OtherPost, 4, 10) == 4


def test_postfilter_columns_and_rows(sweep: pl.DataFrame, built) -> None:
    corpus_dir, _, stores = built
    assert (
        sweep.columns
        == list(POSTFILTER_SCHEMA)
        == [
            "arm",
            "overfetch",
            "fetched",
            "mean_slots_filled",
            "fill_rate",
            "recall_at_10",
            "scan_fraction",
        ]
    )
    n = load_corpus(corpus_dir).memories.height
    meta = sweep.filter(pl.col("arm") == "file-vec-meta")
    assert meta["overfetch"].to_list() == [1, 2, 4, 8, 16, 32, 64, 128]
    assert meta["fetched"].to_list() == [min(10 * x, n) for x in (1, 2, 4, 8, 16, 32, 64, 128)]
    assert meta["scan_fraction"].to_list() == pytest.approx([f / n for f in meta["fetched"]])
    refs = sweep.filter(pl.col("overfetch").is_null())
    assert refs["arm"].to_list() == list(PG_ARMS)
    assert refs["fetched"].to_list() == [10, 10]
    assert refs["scan_fraction"].null_count() == 2
    assert (sweep["mean_slots_filled"] <= 10).all()


def test_postfilter_fill_rises_with_overfetch(sweep: pl.DataFrame) -> None:
    meta = sweep.filter(pl.col("arm") == "file-vec-meta").sort("overfetch")
    fill = meta["fill_rate"].to_list()
    assert fill[0] < 1.0  # underfill at x1
    assert all(b >= a - 1e-12 for a, b in zip(fill, fill[1:], strict=False))
    # fetching the whole corpus (x32 and up: 320 > ~250 memories) with ef >= n is an
    # exact filtered search: every slot fills
    assert fill[-1] == pytest.approx(1.0)
    recall = meta["recall_at_10"].to_list()
    assert all(b >= a - 1e-12 for a, b in zip(recall, recall[1:], strict=False))
    assert meta["mean_slots_filled"].to_list() == sorted(meta["mean_slots_filled"].to_list())


def test_postfilter_iterative_fills_at_least_plain(sweep: pl.DataFrame) -> None:
    by = {r["arm"]: r for r in sweep.filter(pl.col("overfetch").is_null()).iter_rows(named=True)}
    assert by["pg-hnsw-iterative"]["fill_rate"] >= by["pg-hnsw"]["fill_rate"]
    assert by["pg-hnsw-iterative"]["fill_rate"] == pytest.approx(1.0)


def test_postfilter_fill_matches_direct_count_at_x1(built, sweep: pl.DataFrame) -> None:
    """Recompute the x1 fill rate by querying the arm directly (no timing)."""
    corpus_dir, emb, stores = built
    qs = filtered_queries(load_queries(corpus_dir, load_embeddings(emb)))
    slots = predicate_slots(load_corpus(corpus_dir).memories, qs, 10)
    assert len(qs) == 20 and set(slots) == {q.query_id for q in qs}
    arm = make_arm("file-vec-meta", {"overfetch": 1})
    try:
        arm.open(stores["file-vec-meta"])
        fills = [
            min(len(arm.query(q, 10).memory_ids), slots[q.query_id]) / slots[q.query_id] for q in qs
        ]
    finally:
        arm.close()
    got = sweep.filter(pl.col("overfetch") == 1)["fill_rate"][0]
    assert got == pytest.approx(sum(fills) / len(fills))


def test_postfilter_skips_absent_arms(built) -> None:
    corpus_dir, emb, stores = built
    df = postfilter_sweep(
        corpus_dir, emb, {"file-vec-meta": stores["file-vec-meta"]}, overfetch=(2, 1)
    )
    assert df["arm"].to_list() == ["file-vec-meta", "file-vec-meta"]
    assert df["overfetch"].to_list() == [1, 2]
    with pytest.raises(ValueError, match="overfetch"):
        postfilter_sweep(corpus_dir, emb, {}, overfetch=(0,))


# ---------------------------------------------------------------------------- budget
def _one_query_corpus(corpus_dir: Path, out: Path, query_id: str) -> Path:
    """Copy of ``corpus_dir`` whose queries and qrels hold ``query_id`` only."""
    out.mkdir()
    for name in ("memories", "sessions", "facts", "entities"):
        (out / f"{name}.parquet").symlink_to(corpus_dir / f"{name}.parquet")
    for name in ("queries", "qrels"):
        df = pl.read_parquet(corpus_dir / f"{name}.parquet")
        df.filter(pl.col("query_id") == query_id).write_parquet(out / f"{name}.parquet")
    return out


def test_budget_one_query_by_hand(built, tmp_path: Path) -> None:
    corpus_dir, emb, stores = built
    one = _one_query_corpus(corpus_dir, tmp_path / "one", "lexical-001")
    df = budget_sweep("sqlite-fts", None, stores["sqlite-fts"], one, emb, ks=(1, 3, 10))
    assert df.columns == list(BUDGET_SCHEMA)
    assert df.columns[-2:] == ["fill_at_k", "short_at_k"]
    assert df["arm"].to_list() == ["sqlite-fts"] * 3 and df["k"].to_list() == [1, 3, 10]
    # by hand: ask the arm, then binary DCG / IDCG and hit counts
    (q,) = [
        x for x in load_queries(corpus_dir, load_embeddings(emb)) if x.query_id == "lexical-001"
    ]
    rel = set(load_qrels(corpus_dir).filter(pl.col("query_id") == "lexical-001")["memory_id"])
    toks = dict(load_corpus(corpus_dir).memories.select("memory_id", "tokens").iter_rows())
    arm = make_arm("sqlite-fts")
    try:
        arm.open(stores["sqlite-fts"])
        for row in df.iter_rows(named=True):
            k = row["k"]
            ids = arm.query(q, k).memory_ids[:k]
            dcg = sum(1 / math.log2(i + 2) for i, m in enumerate(ids) if m in rel)
            idcg = sum(1 / math.log2(i + 2) for i in range(min(len(rel), k)))
            assert row["ndcg"] == pytest.approx(dcg / idcg)
            assert row["recall"] == pytest.approx(len(rel & set(ids)) / len(rel))
            assert row["mean_tokens"] == sum(toks[m] for m in ids)
            assert row["ndcg_per_100_tokens"] == pytest.approx(
                row["ndcg"] / row["mean_tokens"] * 100
            )
            # no predicate, far more memories than k: the slots are k
            assert row["fill_at_k"] == len(ids) / k
            assert row["short_at_k"] == float(len(ids) < k)
    finally:
        arm.close()
    # full-text search finds the relevant memories that name the record's identifier and
    # never a paraphrase of it (the paraphrases share no term with the question)
    (rid,) = re.findall(r"[A-Z]{3}-\d+", q.text)
    body = dict(load_corpus(corpus_dir).memories.select("memory_id", "body").iter_rows())
    naming = {m for m in rel if rid in body[m]}
    assert naming and df.filter(pl.col("k") == 10)["recall"][0] == len(naming) / len(rel)


def test_budget_tokens_grow_with_k(built) -> None:
    corpus_dir, emb, stores = built
    df = budget_sweep("file-vec-meta", {"overfetch": 4}, stores["file-vec-meta"], corpus_dir, emb)
    assert df["k"].to_list() == [1, 3, 5, 10, 20, 50]
    toks = df["mean_tokens"].to_list()
    assert all(b > a for a, b in zip(toks, toks[1:], strict=False))  # strictly more tokens
    rec = df["recall"].to_list()
    assert all(b >= a - 1e-12 for a, b in zip(rec, rec[1:], strict=False))
    assert (df["ndcg_per_100_tokens"] > 0).all()
    print(df)


def test_budget_per_query_zero_tokens_gives_null(built) -> None:
    corpus_dir, emb, stores = built
    qs = load_queries(corpus_dir, load_embeddings(emb))[:2]
    rel = {q.query_id: {"nonexistent"} for q in qs}
    arm = make_arm("file-vec-meta")
    try:
        arm.open(stores["file-vec-meta"])
        per = budget_per_query(arm, qs, rel, dict.fromkeys(arm._ids, 0), ks=(2,))
    finally:
        arm.close()
    from agentmem.sweeps.budget import summarise_budget

    s = summarise_budget("file-vec-meta", per)
    assert s["mean_tokens"][0] == 0 and s["ndcg_per_100_tokens"][0] is None
    assert s["ndcg"][0] == 0.0


class _Counting:
    """A real arm whose query calls are counted (and whose k values are recorded)."""

    def __init__(self, arm) -> None:
        self.arm, self.ks = arm, []
        self.prefix_stable = arm.prefix_stable

    def query(self, q, k):
        self.ks.append(k)
        return self.arm.query(q, k)


def test_budget_asks_prefix_stable_arms_once_and_others_per_k(built) -> None:
    corpus_dir, emb, stores = built
    qs = load_queries(corpus_dir, load_embeddings(emb))[:6]
    rel = relevant_sets(load_qrels(corpus_dir))
    toks = dict(load_corpus(corpus_dir).memories.select("memory_id", "tokens").iter_rows())
    tables = {}
    for name in ("sqlite-fts", "file-vec-meta"):
        arm = make_arm(name)
        try:
            arm.open(stores[name])
            counted = _Counting(arm)
            tables[name] = budget_per_query(counted, qs, rel, toks, ks=(5, 1, 3))
            if name == "sqlite-fts":  # prefix-stable: one query each, at the largest k
                assert counted.ks == [5] * len(qs)
                # and the cut answers equal fresh answers at each k
                for row in tables[name].iter_rows(named=True):
                    q = next(x for x in qs if x.query_id == row["query_id"])
                    ids = arm.query(q, row["k"]).memory_ids[: row["k"]]
                    assert row["returned"] == len(ids)
                    assert row["tokens"] == sum(toks[m] for m in ids)
                    want = ndcg_at_k(ids, rel[q.query_id], row["k"])
                    assert row["ndcg"] == pytest.approx(want)
            else:  # overfetch grows with k: asked afresh at every k, ascending
                assert counted.ks == [1] * len(qs) + [3] * len(qs) + [5] * len(qs)
        finally:
            arm.close()
    for df in tables.values():
        assert df["k"].to_list() == [1] * 6 + [3] * 6 + [5] * 6


def test_budget_fill_by_hand(built) -> None:
    corpus_dir, emb, stores = built
    qs = load_queries(corpus_dir, load_embeddings(emb))[:4]
    rel = relevant_sets(load_qrels(corpus_dir))
    toks = dict(load_corpus(corpus_dir).memories.select("memory_id", "tokens").iter_rows())
    arm = make_arm("sqlite-fts")
    try:
        arm.open(stores["sqlite-fts"])
        # the first query has 2 memories it may return, the second 6 (3 slots at k = 3);
        # the others' searchable sets are not given (k slots)
        per = budget_per_query(
            arm, qs, rel, toks, ks=(3,), searchable={qs[0].query_id: 2, qs[1].query_id: 6}
        )
    finally:
        arm.close()
    slots = {qs[0].query_id: 2, qs[1].query_id: 3}  # min(k, searchable); k otherwise
    fills = []
    for r in per.iter_rows(named=True):
        s_ = slots.get(r["query_id"], 3)
        assert r["fill"] == pytest.approx(min(r["returned"], s_) / s_)
        fills.append(r["fill"])
    from agentmem.sweeps.budget import summarise_budget

    row = summarise_budget("sqlite-fts", per).row(0, named=True)
    assert row["fill_at_k"] == pytest.approx(sum(fills) / 4)
    assert row["short_at_k"] == pytest.approx(sum(f < 1 for f in fills) / 4)


#: copies of each memory in :func:`grown`: ~260 x 8 ~ 2,100 memories, enough that the planner
#: takes the HNSW index for an unfiltered k = 50 (on ~260 it sorts exact distances)
COPIES = 8


@pytest.fixture(scope="module")
def grown(built, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The small corpus with every memory copied ``COPIES`` times (the copy's vector the
    original's plus noise), same queries and qrels: ``(corpus_dir, embeddings_path)``."""
    corpus_dir, emb, _ = built
    d = tmp_path_factory.mktemp("grown")
    mem = pl.read_parquet(corpus_dir / "memories.parquet")
    copies = [
        mem.with_columns(memory_id=pl.col("memory_id") + f"-c{i}", seq=pl.col("seq") + i * 10**6)
        for i in range(1, COPIES)
    ]
    pl.concat([mem, *copies]).write_parquet(d / "memories.parquet")
    for name in ("sessions", "facts", "entities", "agents", "queries", "qrels"):
        (d / f"{name}.parquet").symlink_to(corpus_dir / f"{name}.parquet")
    vec = pl.read_parquet(emb)
    rng = np.random.default_rng(11)
    extra = []
    for i in range(1, COPIES):
        part = vec.filter(pl.col("id").is_in(mem["memory_id"].implode()))
        x = part["vector"].to_numpy() + rng.normal(0, 0.05, (part.height, 384))
        x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
        extra.append(
            part.with_columns(
                id=pl.col("id") + f"-c{i}", vector=pl.Series(x, dtype=vec.schema["vector"])
            )
        )
    pl.concat([vec, *extra]).write_parquet(d / "emb.parquet")
    return d, d / "emb.parquet"


def test_pg_hnsw_answers_about_ef_search_at_k_50_and_the_tables_say_so(
    grown, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """pgvector's HNSW index scan yields at most ~hnsw.ef_search (40) rows, filtered or
    not: pg-hnsw answers an unfiltered k = 50 with about 40 ids; the run log, the by-class
    table and the budget table say so; pg-hnsw-iterative fills."""
    from agentmem.report.tables import score_run_file, timed_note, write_by_class
    from agentmem.runner import run_arm

    corpus_dir, emb = grown
    corpus = load_corpus(corpus_dir)
    assert corpus.memories.height >= 2000
    runs, store = tmp_path / "runs.parquet", tmp_path / "store"
    with caplog.at_level("WARNING", logger="agentmem.runner"):
        run_arm(
            "pg-hnsw", None, corpus_dir, emb, store, runs, tmp_path / "build.json",
            tmp_path / "plans.json", k=50, warmup=0, repeats=1, progress=False,
        )  # fmt: skip
    qs = load_queries(corpus_dir, load_embeddings(emb))
    plain = {q.query_id for q in qs if q.predicate is None}
    got = dict(pl.read_parquet(runs).group_by("query_id").agg(pl.col("memory_id").count()).rows())
    counts = [got[q] for q in plain]
    assert max(counts) < 50 and min(counts) >= 40, counts
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "agentmem.runner"]
    assert warning.startswith(f"pg-hnsw: {len(plain)} of {len(plain)} queries without a predicate")
    assert f"(fewest: {min(counts)})" in warning
    metrics = tmp_path / "metrics.parquet"
    score_run_file(
        runs, corpus_dir / "queries.parquet", corpus_dir / "qrels.parquet", metrics, k=50,
        memories=corpus_dir / "memories.parquet",
    )  # fmt: skip
    t = write_by_class(
        {"pg-hnsw": metrics},
        tmp_path / "by_class.csv",
        tmp_path / "by_class.md",
        latency_note=timed_note(),
    )
    semantic = t.filter(pl.col("query_class") == "semantic").row(0, named=True)
    assert semantic["short_at_10"] == 1.0  # unfiltered: every answer short of 50
    sem = [got[q] for q in plain if q.startswith("semantic")]
    assert semantic["fill_at_10"] == pytest.approx(sum(sem) / (50 * len(sem)))
    every = t.filter(pl.col("query_class") == "all").row(0, named=True)
    assert every["fill_at_10"] < 1.0 and every["short_at_10"] >= len(plain) / len(qs)
    assert "† |" in (tmp_path / "by_class.md").read_text()
    # the budget table at k = 50: short for pg-hnsw, full for the iterative scan (built
    # into the same store directory: one server, one database per arm)
    iterative = make_arm("pg-hnsw-iterative")
    try:
        iterative.build(corpus, load_embeddings(emb), store)
    finally:
        iterative.close()
    plain_b = budget_sweep("pg-hnsw", None, store, corpus_dir, emb, ks=(50,))
    full_b = budget_sweep("pg-hnsw-iterative", None, store, corpus_dir, emb, ks=(50,))
    assert servers_left(tmp_path) == []
    assert plain_b["fill_at_k"][0] < 1.0 and plain_b["short_at_k"][0] >= len(plain) / len(qs)
    assert full_b["fill_at_k"][0] == 1.0 and full_b["short_at_k"][0] == 0.0
    assert plain_b["mean_tokens"][0] < full_b["mean_tokens"][0]


# --------------------------------------------------------------------------- scaling
def _job(root: Path, arm: str, size: str, memories: int, lat: list[float], **build) -> tuple:
    b = root / f"{size}-{arm}.json"
    b.write_text(
        json.dumps(
            {
                "arm": arm,
                "memories": memories,
                "queries": len(lat),
                "storage_bytes": build.get("storage_bytes", 1000 * memories),
                "bytes_per_memory": build.get("storage_bytes", 1000 * memories) / memories,
                "ingest_ms": build["ingest_ms"],
                "index_ms": build.get("index_ms", 0.0),
            }
        )
    )
    m = root / f"{size}-{arm}.parquet"
    pl.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(len(lat))],
            "ndcg_at_10": [0.5] * len(lat),
            "recall_at_10": [1.0] * (len(lat) - 1) + [0.0],
            "latency_ms": lat,
        }
    ).write_parquet(m)
    return (arm, size, b, m)


def test_scaling_table_and_exponents(tmp_path: Path) -> None:
    entries = [
        # listed out of size order on purpose
        _job(tmp_path, "scan", "s", 200, [2.0, 2.0, 4.0], ingest_ms=40.0, index_ms=0.0),
        _job(tmp_path, "scan", "xs", 100, [1.0, 1.0, 2.0], ingest_ms=10.0, index_ms=0.0),
        _job(tmp_path, "index", "xs", 100, [3.0, 3.0, 3.0], ingest_ms=5.0, index_ms=2.0),
        _job(tmp_path, "index", "s", 200, [3.0, 3.0, 3.0], ingest_ms=10.0, index_ms=4.0),
        _job(tmp_path, "index", "m", 400, [3.0, 3.0, 3.0], ingest_ms=20.0, index_ms=8.0),
    ]
    t = scaling_table(entries)
    assert (
        t.columns
        == list(SCALING_SCHEMA)
        == [
            "arm",
            "size",
            "memories",
            "queries",
            "ingest_ms",
            "index_ms",
            "p50_ms",
            "p95_ms",
            "ndcg_at_10",
            "recall_at_10",
            "storage_bytes",
            "bytes_per_memory",
        ]
    )
    assert t.select("arm", "size").rows() == [
        ("scan", "xs"),
        ("scan", "s"),
        ("index", "xs"),
        ("index", "s"),
        ("index", "m"),
    ]
    xs = t.row(0, named=True)
    # latencies [1, 1, 2]: median 1; p95 = 1 + 0.9 * (2 - 1) (linear interpolation)
    assert xs["p50_ms"] == 1.0 and xs["p95_ms"] == pytest.approx(1.9)
    assert xs["recall_at_10"] == pytest.approx(2 / 3) and xs["ndcg_at_10"] == 0.5
    assert xs["queries"] == 3 and xs["bytes_per_memory"] == 1000.0
    e = {r["arm"]: r for r in fit_exponents(t).iter_rows(named=True)}
    # scan: p50 doubles when memories double -> 1; ingest quadruples -> 2; index 0 -> null
    assert e["scan"]["latency_exponent"] == pytest.approx(1.0)
    assert e["scan"]["ingest_exponent"] == pytest.approx(2.0)
    assert e["scan"]["index_exponent"] is None
    assert e["scan"]["storage_exponent"] == pytest.approx(1.0)
    # index: flat latency -> 0 with a perfect fit; linear ingest and index build
    assert e["index"]["latency_exponent"] == pytest.approx(0.0, abs=1e-12)
    assert e["index"]["latency_r2"] == pytest.approx(1.0)
    assert e["index"]["ingest_exponent"] == pytest.approx(1.0)
    assert e["index"]["index_exponent"] == pytest.approx(1.0)
    assert (e["index"]["sizes"], e["index"]["min_memories"], e["index"]["max_memories"]) == (
        3,
        100,
        400,
    )
    with pytest.raises(ValueError, match="twice"):
        scaling_table([entries[0], entries[0]])


def test_single_size_has_no_exponent(tmp_path: Path) -> None:
    t = scaling_table([_job(tmp_path, "a", "m", 100, [1.0], ingest_ms=1.0)])
    e = fit_exponents(t)
    assert e["latency_exponent"][0] is None and e["sizes"][0] == 1


# --------------------------------------------------------------------------- figures
def test_figures_render(sweep: pl.DataFrame, built, tmp_path: Path) -> None:
    from agentmem.io import write_csv
    from agentmem.report.figures import (
        budget as fig_budget,
        postfilter as fig_postfilter,
        scaling as fig_scaling,
    )

    write_csv(tmp_path / "postfilter.csv", sweep)
    fig_postfilter.plot(tmp_path / "postfilter.csv", tmp_path / "postfilter.svg")
    budget = pl.DataFrame(
        {
            "arm": ["a"] * 3 + ["b"] * 3,
            "k": [1, 3, 10] * 2,
            "ndcg": [0.5, 0.6, 0.7, 0.3, 0.4, 0.5],
            "recall": [0.2, 0.5, 0.9, 0.1, 0.3, 0.6],
            "mean_tokens": [20.0, 60.0, 200.0, 25.0, 70.0, 240.0],
            "ndcg_per_100_tokens": [2.5, 1.0, 0.35, 1.2, 0.57, 0.21],
        }
    )
    write_csv(tmp_path / "budget.csv", budget)
    fig_budget.plot(tmp_path / "budget.csv", tmp_path / "budget.svg")
    entries = [
        _job(tmp_path, "a", "xs", 100, [1.0], ingest_ms=1.0),
        _job(tmp_path, "a", "s", 300, [3.0], ingest_ms=3.0),
        _job(tmp_path, "b", "xs", 100, [2.0], ingest_ms=1.0),
        _job(tmp_path, "b", "s", 300, [2.1], ingest_ms=3.0),
    ]
    write_csv(tmp_path / "scaling.csv", scaling_table(entries))
    fig_scaling.plot(tmp_path / "scaling.csv", tmp_path / "scaling.svg")
    for name in ("postfilter", "budget", "scaling"):
        svg = (tmp_path / f"{name}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
    # each arm in its registry colour: file-vec-meta 3rd, pg-hnsw 9th, pg-hnsw-iterative 11th
    svg = (tmp_path / "postfilter.svg").read_text()
    for color in ("#2ca02c", "#17becf", "#ffbb78"):
        assert f"stroke: {color}" in svg, color


def test_arm_colors_are_one_per_registered_arm() -> None:
    from agentmem.arms import ARMS as REGISTRY
    from agentmem.report.colors import OTHER_COLOR, PALETTE, arm_color, arm_style

    colors = [arm_color(a) for a in REGISTRY]
    assert colors[:4] == ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]  # registry order
    assert len(set(colors)) == len(colors) and OTHER_COLOR not in colors
    assert arm_color("append") == OTHER_COLOR  # a baseline, not an arm
    assert arm_style("file-vec") == {"color": PALETTE[1], "linestyle": "-"}


def test_predicate_slots_count_within_the_query_scope() -> None:
    mem = pl.DataFrame(
        {
            "created_day": [1, 2, 3, 4],
            "session_id": ["S1", "S1", "S1", "S2"],
            "fact_id": [None, None, None, None],
            "superseded_by": [None, None, None, None],
            "scope_id": ["u1", "u1", "u2", None],
        },
        schema_overrides={"fact_id": pl.String, "superseded_by": pl.String},
    )
    pred = Predicate("session_id", "=", "S1")
    vec = np.zeros(384, np.float32)
    qs = [Query("all", "", vec, pred), Query("u1", "", vec, pred, scope="u1"),
          Query("u3", "", vec, pred, scope="u3")]  # fmt: skip
    assert predicate_slots(mem, qs, 10) == {"all": 3, "u1": 2, "u3": 0}
    assert predicate_slots(mem.drop("scope_id"), qs[:1], 1) == {"all": 1}


def test_ablation_scores_skip_queries_without_relevant_memories():
    from agentmem.arms.base import Result
    from agentmem.sweeps.ablation import _scores

    class Fixed:
        """An arm answering every query with m1, m2."""

        def query(self, q, k):
            return Result(memory_ids=["m1", "m2"][:k])

    queries = [
        Query("a", "x", np.zeros(384, np.float32)),
        Query("b", "y", np.zeros(384, np.float32)),
    ]
    s = _scores(Fixed(), queries, {"a": {"m2"}}, 10)  # b has no relevant memory
    assert s.height == 1
    assert s["ndcg"][0] == pytest.approx(1 / math.log2(3)) and s["recall"][0] == 1.0


def test_ablation_scores_read_a_run_instead_of_the_arm(tmp_path):
    from agentmem.sweeps.ablation import _scores, run_answers

    runs = tmp_path / "runs.parquet"
    pl.DataFrame(
        {
            "query_id": ["a", "a", "a", "b"],
            "rank": [2, 1, 3, None],  # out of order; b answered nothing (a null row)
            "memory_id": ["m2", "m9", "m1", None],
        },
        schema={"query_id": pl.String, "rank": pl.Int64, "memory_id": pl.String},
    ).write_parquet(runs)
    answers = run_answers(runs)
    assert answers == {"a": ["m9", "m2", "m1"], "b": []}
    queries = [
        Query("a", "x", np.zeros(384, np.float32)),
        Query("b", "y", np.zeros(384, np.float32)),
    ]
    # k = 2 cuts the run's answer: m1 (relevant) is third, so recall is 1/2
    s = _scores(None, queries, {"a": {"m2", "m1"}, "b": {"m1"}}, 2, answers)
    assert s["recall"].to_list() == [0.5, 0.0]
    ideal = 1 + 1 / math.log2(3)
    assert s["ndcg"].to_list() == pytest.approx([(1 / math.log2(3)) / ideal, 0.0])
    with pytest.raises(ValueError, match="lacks query 'c'"):
        _scores(None, [Query("c", "z", np.zeros(384, np.float32))], {"c": {"m1"}}, 2, answers)
