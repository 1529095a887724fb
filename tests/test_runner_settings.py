"""The runner: one build for every setting (run_arm_settings), a query's timed calls."""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl
import pytest
from support.corpora import embedding_cache, encoder_options

from agentmem.arms.base import ArmError, answer_all
from agentmem.arms.factory import make_arm
from agentmem.corpus.io import load_corpus, load_queries
from agentmem.embeddings import embed_corpus, load_embeddings
from agentmem.external import prepare_dataset
from agentmem.runner import RunFiles, run_arm, run_arm_settings, time_query

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "tiny-memory"


def test_one_build_runs_each_setting_as_a_run_of_its_own_would(tmp_path):
    d = tmp_path / "corpus"
    prepare_dataset(TINY, d)
    emb = tmp_path / "emb.parquet"
    embed_corpus(d, emb, embedding_cache(), progress=False, **encoder_options())
    opts = {"k": 5, "warmup": 0, "repeats": 1, "progress": False}
    files = {
        s: RunFiles(
            s == "scoped", *(tmp_path / f"{s}{ext}" for ext in (".parquet", ".json", "-p.json"))
        )
        for s in ("scoped", "unscoped")
    }
    scoped, unscoped = run_arm_settings(
        "file-vec", None, d, emb, tmp_path / "store", list(files.values()), **opts
    )
    # one build: both records carry its numbers, and say which setting they ran
    assert (scoped["scoped"], unscoped["scoped"]) == (True, False)
    assert scoped | {"scoped": None} == unscoped | {"scoped": None}
    assert scoped["memories"] == 14 and scoped["queries"] == 6
    # each setting's ranked ids are those of a run on a store of its own
    for s, f in files.items():
        alone = tmp_path / f"alone-{s}.parquet"
        run_arm(
            "file-vec", None, d, emb, tmp_path / f"store-{s}", alone, tmp_path / f"a-{s}.json",
            tmp_path / f"ap-{s}.json", scoped=f.scoped, **opts,
        )  # fmt: skip
        got = pl.read_parquet(f.runs).drop("latency_ms")
        assert got.equals(pl.read_parquet(alone).drop("latency_ms")), s
    # scoped, every answer stays in its question's scope; unscoped, every question gets
    # k = 5 of the 14 memories and some of them are outside its scope
    mem = pl.read_parquet(d / "memories.parquet", columns=["memory_id", "scope_id"])
    scope_of = dict(mem.iter_rows())
    q = dict(pl.read_parquet(d / "queries.parquet", columns=["query_id", "scope_id"]).iter_rows())
    outside = {}
    for s, f in files.items():
        pairs = pl.read_parquet(f.runs).select("query_id", "memory_id").iter_rows()
        outside[s] = sum(scope_of[m] != q[qid] for qid, m in pairs)
    assert pl.read_parquet(files["unscoped"].runs).height == 6 * 5
    assert outside["scoped"] == 0 and outside["unscoped"] > 0


class _Slowed:
    """A real arm whose every query also sleeps ``delay_s``, counting the calls."""

    def __init__(self, arm, delay_s: float):
        self.arm, self.delay_s, self.calls = arm, delay_s, 0

    def query(self, q, k):
        self.calls += 1
        time.sleep(self.delay_s)
        return self.arm.query(q, k)


@pytest.mark.parametrize(
    ("delay_ms", "min_time_ms", "timed_calls"),
    [
        (0, 1000.0, 3),  # three calls stay below the budget: every repeat
        (30, 50.0, 2),  # two calls reach it
        (60, 50.0, 1),  # one call reaches it
        (60, 0.0, 3),  # no budget: every repeat
    ],
)
def test_a_query_is_timed_until_repeats_or_the_time_budget(
    tmp_path, delay_ms, min_time_ms, timed_calls
):
    d = tmp_path / "corpus"
    prepare_dataset(TINY, d)
    emb = tmp_path / "emb.parquet"
    embed_corpus(d, emb, embedding_cache(), progress=False, **encoder_options())
    vectors = load_embeddings(emb)
    arm = make_arm("file-vec", None)
    arm.build(load_corpus(d), vectors, tmp_path / "store")
    try:
        q = load_queries(d, vectors)[0]
        slowed = _Slowed(arm, delay_ms / 1000)
        res, ms = time_query(slowed, q, 5, warmup=1, repeats=3, min_time_ms=min_time_ms)
        assert slowed.calls == 1 + timed_calls
        assert ms >= delay_ms
        assert res.memory_ids == arm.query(q, 5).memory_ids
    finally:
        arm.close()


def test_a_batch_pass_gives_the_timed_runs_ids_and_no_latency(tmp_path):
    """batch=True: one untimed pass through the arm's batch search (lancedb's), same rows."""
    d = tmp_path / "corpus"
    prepare_dataset(TINY, d)
    emb = tmp_path / "emb.parquet"
    embed_corpus(d, emb, embedding_cache(), progress=False, **encoder_options())
    runs = {}
    for batch in (False, True):
        files = [
            RunFiles(s == "scoped", *(tmp_path / f"{s}-{batch}{x}" for x in (".pq", ".j", "-p.j")))
            for s in ("scoped", "unscoped")
        ]
        run_arm_settings(
            "lancedb", None, d, emb, tmp_path / f"store-{batch}", files,
            k=5, warmup=0, repeats=1, progress=False, batch=batch,
        )  # fmt: skip
        runs[batch] = [pl.read_parquet(f.runs) for f in files]
    for timed, batched in zip(runs[False], runs[True], strict=True):
        assert batched.height == timed.height == 6 * 5
        assert batched.drop("latency_ms").equals(timed.drop("latency_ms"))
        assert batched["latency_ms"].null_count() == batched.height
        assert timed["latency_ms"].null_count() == 0
    with pytest.raises(ValueError, match="warmup 0, repeats 1"):
        run_arm_settings(
            "lancedb", None, d, emb, tmp_path / "store-x", files[:1],
            warmup=0, repeats=3, batch=True,
        )  # fmt: skip


def test_answer_all_takes_a_protocol_arm_and_refuses_a_short_batch(tmp_path):
    """An arm without query_many is asked query by query; a batch one answer short is an error."""
    d = tmp_path / "corpus"
    prepare_dataset(TINY, d)
    emb = tmp_path / "emb.parquet"
    embed_corpus(d, emb, embedding_cache(), progress=False, **encoder_options())
    arm = make_arm("file-vec")
    arm.build(load_corpus(d), load_embeddings(emb), tmp_path / "store")
    qs = load_queries(d, load_embeddings(emb))
    try:
        plain = _Slowed(arm, 0.0)
        assert answer_all(plain, qs, 3) == [arm.query(q, 3) for q in qs]
        assert plain.calls == len(qs) == 6

        class Short(_Slowed):
            def query_many(self, queries, k):
                return [self.arm.query(q, k) for q in queries[1:]]

        with pytest.raises(ArmError, match="answered 5 of 6 queries"):
            answer_all(Short(arm, 0.0), qs, 3)
    finally:
        arm.close()
