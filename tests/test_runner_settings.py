"""One build, every setting: the external datasets' arm job (agentmem.runner.run_arm_settings)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from support.corpora import embedding_cache, encoder_options

from agentmem.embeddings import embed_corpus
from agentmem.external import prepare_dataset
from agentmem.runner import RunFiles, run_arm, run_arm_settings

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
