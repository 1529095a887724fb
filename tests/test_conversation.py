"""Tests for the long-conversation sweep and its figure.

One small generated corpus (80 facts, 4 queries per class: ~250 memories, ~25 facts with a
probe question) with real all-MiniLM-L6-v2 embeddings, and registered arms driven through
``remember`` and ``query``: file-vec (hnswlib), sqlite-fts (FTS5) and three-tier (its
``assemble_context``, L3 in embedded PostgreSQL + pgvector).

Hand-checkable facts used below:

- ``append``'s context at turn ``t`` is the sum of the corpus ``tokens`` of the first ``t``
  memories of a run of consecutive memories (seq order) that starts at a session start;
- before three-tier's first compaction L1 holds every turn and L2/L3 are empty, so its
  context equals ``append``'s exactly (and exceeds it by at most one summary plus ``k``
  memories afterwards, with L1 <= ``l1_max_tokens``);
- at turn 1 the recalling arms have no history: their context is the current turn;
- every turn went through ``remember``: after the run the last conversation's store holds
  exactly its memories.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import get_args

import numpy as np
import polars as pl
import pytest
from pydantic import ValidationError
from support.corpora import small_corpus
from support.postgres import servers_left

from agentmem import pg
from agentmem.config import ConversationConfig
from agentmem.report.figures.conversation import plot
from agentmem.summarise import SUMMARISERS
from agentmem.sweeps.conversation import (
    CONVERSATION_SCHEMA,
    PROBE_SCHEMA,
    SAMPLINGS,
    SUMMARY_SCHEMA,
    TIER_SCHEMA,
    TIER_SUMMARY_SCHEMA,
    conversation_sweep,
    make_conversation_arm,
    remember_frame,
    run_conversations,
    summarise_conversation,
    summarise_tiers,
    write_conversation_sweep,
)

CAP = 600  # L1 cap: ~25 turns of ~23 tokens, so 120 turns compact several times
K = 5
TURNS = 120
SUMMARY_TOKENS = 200  # ThreeTierArm default; one L2 node in the context (default)
ARMS = ("file-vec", "sqlite-fts", "three-tier")
STRATEGIES = ("append", *ARMS)
RECALLING = ("file-vec", "sqlite-fts")  # context by query (three-tier assembles its own)


def run_sweep(corpus_dir, emb, work_dir, *, arm_params=None, **settings):
    """run_conversations with the settings as keywords (validated by ConversationConfig)."""
    return run_conversations(corpus_dir, emb, work_dir, settings, arm_params)


#: the sweep's settings (ConversationConfig) and arm_params; each test overrides what it varies.
#: One memory per turn, so that the small corpus holds a conversation.
PARAMS = dict(
    conversations=3,
    turns=300,
    memories_per_turn=1,
    probes_every=10,
    min_gap=20,
    l1_max_tokens=3000,
    k=5,
    seed=0,
    sampling="window",
    summariser="extractive",
    arms=(),
    arm_params=None,
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory):
    """Module work root in embedded mode; at the end no postgres server may run under it."""
    mp = pytest.MonkeyPatch()
    mp.delenv(pg.ENV_DSN, raising=False)
    path = tmp_path_factory.mktemp("conversation")
    yield path
    mp.undo()
    left = servers_left(path)
    assert left == [], f"postgres servers still running under {path}: {left}"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return small_corpus(tmp_path_factory)


@pytest.fixture(scope="module")
def run(root: Path, corpus: tuple[Path, Path]):
    corpus_dir, emb = corpus
    r = run_sweep(
        corpus_dir,
        emb,
        root / "window",
        **PARAMS | dict(conversations=2, turns=TURNS, l1_max_tokens=CAP, k=K, arms=ARMS),
    )
    # the store's server was stopped when the run closed the arm
    assert servers_left(root) == []
    return r


@pytest.fixture(scope="module")
def memories(corpus: tuple[Path, Path]) -> pl.DataFrame:
    return pl.read_parquet(corpus[0] / "memories.parquet").sort("seq")


def per(df: pl.DataFrame, strategy: str, conversation: int) -> pl.DataFrame:
    return df.filter(
        (pl.col("strategy") == strategy) & (pl.col("conversation") == conversation)
    ).sort("turn")


# ------------------------------------------------------------------------- the table
def test_columns_rows_and_order(run):
    t = run.table
    assert t.columns == [
        "strategy",
        "conversation",
        "turn",
        "context_tokens",
        "cumulative_tokens",
        "probe",
        "probe_hit",
        "latency_ms",
        "remember_ms",
    ]
    assert dict(t.schema) == CONVERSATION_SCHEMA
    assert t.height == len(STRATEGIES) * 2 * TURNS
    assert list(dict.fromkeys(t["strategy"].to_list())) == list(STRATEGIES)
    for s in STRATEGIES:
        for c in (0, 1):
            assert per(t, s, c)["turn"].to_list() == list(range(1, TURNS + 1))
    assert t["latency_ms"].is_between(0, 60_000, closed="none").all()
    assert (t["context_tokens"] > 0).all()
    # every arm remembered every turn; append has no store
    assert t.filter(pl.col("strategy") == "append")["remember_ms"].null_count() == 2 * TURNS
    assert (t.filter(pl.col("strategy") != "append")["remember_ms"] > 0).all()
    assert dict(run.tiers.schema) == TIER_SCHEMA and run.tiers.height == 2 * TURNS
    assert run.tiers["strategy"].unique().to_list() == ["three-tier"]
    assert dict(run.probes.schema) == PROBE_SCHEMA


def test_the_stores_hold_what_remember_wrote(run, root, memories):
    """Each arm's store (last conversation) holds exactly its TURNS memories, in order."""
    fetched = {}
    for name in ARMS:
        arm = make_conversation_arm(name, None, {"l1_max_tokens": CAP, "summariser": "extractive"})
        try:
            arm.open(root / "window" / name)
            fetched[name] = arm.fetch(memories["memory_id"].to_list())["memory_id"].to_list()
        finally:
            arm.close()
    ids = fetched["sqlite-fts"]
    assert len(ids) == TURNS and all(v == ids for v in fetched.values())
    first = memories["memory_id"].to_list().index(ids[0])
    assert ids == memories["memory_id"].to_list()[first : first + TURNS]  # consecutive
    app = per(run.table, "append", 1)["context_tokens"].to_list()
    assert app[-1] == memories["tokens"][first : first + TURNS].sum()


def test_cumulative_is_running_sum_and_monotone(run):
    for s in STRATEGIES:
        for c in (0, 1):
            d = per(run.table, s, c)
            cum = d["cumulative_tokens"].to_numpy()
            assert np.all(np.diff(cum) > 0)  # every turn adds context tokens
            assert cum.tolist() == np.cumsum(d["context_tokens"].to_numpy()).tolist()


def test_append_is_the_whole_history_of_consecutive_sessions(run, memories):
    toks = memories["tokens"].to_list()
    sess = memories["session_id"].to_list()
    for c in (0, 1):
        ctx = per(run.table, "append", c)["context_tokens"].to_list()
        turn_tokens = [ctx[0]] + [b - a for a, b in zip(ctx, ctx[1:], strict=False)]
        starts = [
            i
            for i in range(len(toks) - TURNS + 1)
            if (i == 0 or sess[i] != sess[i - 1]) and toks[i : i + TURNS] == turn_tokens
        ]
        assert starts, "append's per-turn increments are no run of consecutive memories"
        s = starts[0]
        # context at turn t = sum of the tokens of the first t memories of the window
        assert ctx == np.cumsum(toks[s : s + TURNS]).tolist()


def test_rag_context_is_k_memories_plus_current_turn(run):
    for c in (0, 1):
        app = per(run.table, "append", c)["context_tokens"].to_list()
        turn_tokens = [app[0]] + [b - a for a, b in zip(app, app[1:], strict=False)]
        for s in RECALLING:
            ctx = per(run.table, s, c)["context_tokens"].to_list()
            assert ctx[0] == turn_tokens[0]  # turn 1: no history
            for t in range(TURNS):
                assert ctx[t] >= turn_tokens[t]
                assert ctx[t] <= turn_tokens[t] + K * 40  # corpus memories are < 40 tokens
    # the vector arm always finds k neighbours once the history has k memories
    vr = per(run.table, "file-vec", 0)["context_tokens"].to_list()
    assert all(vr[t] > turn_tokens[t] for t in range(K + 1, TURNS))


def test_three_tier_equals_append_until_compaction_then_is_capped(run):
    for c in (0, 1):
        tiers = run.tiers.filter(pl.col("conversation") == c).sort("turn")
        first = tiers.filter(pl.col("l2_tokens") > 0)["turn"].min()  # first summary node
        assert first is not None and first > 1, "L1 never compacted: the test cap is too large"
        app = per(run.table, "append", c)["context_tokens"].to_list()
        tt = per(run.table, "three-tier", c)["context_tokens"].to_list()
        assert tt[: first - 1] == app[: first - 1]
        assert app[first - 1] > CAP  # the turn that overflowed L1
        assert max(tt) <= CAP + SUMMARY_TOKENS + K * 40
        assert max(tt[first - 1 :]) < app[-1]
        assert (tiers["l1_tokens"] <= CAP).all()
        assert (tiers["l2_tokens"] <= SUMMARY_TOKENS).all()
        # tier tokens add up to the context
        assert (tiers["l1_tokens"] + tiers["l2_tokens"] + tiers["l3_tokens"]).to_list() == tt
        assert tiers.filter(pl.col("turn") >= first)["l2_tokens"].min() > 0
        assert tiers.filter(pl.col("turn") >= first)["l3_tokens"].min() > 0


def test_probes_where_expected(run, memories):
    t = run.table
    probed = t.filter(pl.col("probe").is_not_null())
    assert probed.height > 0
    assert (probed["turn"] % 10 == 0).all() and (probed["turn"] > 20).all()
    # probe_hit is set exactly at probe turns
    assert (
        t.filter(pl.col("probe").is_null())["probe_hit"].null_count()
        == t.filter(pl.col("probe").is_null()).height
    )
    assert probed["probe_hit"].null_count() == 0
    # every strategy got the same probes at the same turns
    keys = {
        s: probed.filter(pl.col("strategy") == s).select("conversation", "turn", "probe").rows()
        for s in STRATEGIES
    }
    assert all(v == keys["append"] for v in keys.values())
    assert probed.filter(pl.col("strategy") == "append")["probe_hit"].all()
    # the probes table: gap >= min_gap, gold memories belong to the probed fact
    p = run.probes
    assert p.select("conversation", "turn", "probe").rows() == keys["append"]
    assert (p["gap"] >= 20).all()
    fact_of = dict(zip(memories["memory_id"], memories["fact_id"], strict=True))
    for row in p.iter_rows(named=True):
        gold = row["gold"].split()
        assert gold and all(fact_of[m] == row["fact_id"] for m in gold)
        if row["correction_seen"]:
            assert len(gold) == 1 and memories.filter(pl.col("superseded_by") == gold[0]).height
        assert row["beyond_l1"] == (row["gold_tokens_since"] > CAP)


def test_three_tier_hit_tiers_agree_with_hits(run):
    tt = run.table.filter((pl.col("strategy") == "three-tier") & pl.col("probe").is_not_null())
    j = tt.join(run.tiers, on=["strategy", "conversation", "turn"])
    assert j.height == tt.height
    for hit, tiers in j.select("probe_hit", "hit_tiers").iter_rows():
        assert hit == (tiers != "")
    # a gold memory beyond any L1 of the cap can only come from L2 or L3
    far = run.probes.filter(pl.col("beyond_l1")).join(
        run.tiers, on=["conversation", "turn"], how="inner"
    )
    assert all("L1" not in (h or "").split() for h in far["hit_tiers"])


def test_summary(run):
    s = summarise_conversation(run.table, run.tiers, run.probes)
    assert dict(s.schema) == SUMMARY_SCHEMA
    assert s["strategy"].to_list() == list(STRATEGIES)
    row = {r["strategy"]: r for r in s.iter_rows(named=True)}
    t = run.table
    last = t.filter(pl.col("turn") == TURNS)
    cum = {
        st: int(last.filter(pl.col("strategy") == st)["cumulative_tokens"].sum())
        for st in STRATEGIES
    }
    for st in STRATEGIES:
        assert row[st]["cumulative_tokens"] == cum[st]
        assert row[st]["tokens_vs_append_pct"] == pytest.approx(
            100.0 * (cum[st] / cum["append"] - 1.0)
        )
        d = t.filter(pl.col("strategy") == st)
        assert row[st]["max_context_tokens"] == d["context_tokens"].max()
        pr = d.filter(pl.col("probe").is_not_null())
        assert row[st]["probes"] == pr.height
        assert row[st]["long_range_recall"] == pytest.approx(pr["probe_hit"].mean())
    assert row["append"]["tokens_vs_append_pct"] == 0.0
    assert row["append"]["long_range_recall"] == 1.0
    assert row["three-tier"]["tokens_vs_append_pct"] < 0
    assert row["three-tier"]["max_context_tokens"] <= CAP + SUMMARY_TOKENS + K * 40
    assert row["three-tier"]["p50_l3_ms"] > 0 and row["append"]["p50_l1_ms"] is None
    assert row["sqlite-fts"]["p50_l1_ms"] is None  # no tiers: it recalls by query
    rem = t.filter(pl.col("strategy") == "sqlite-fts")["remember_ms"]
    assert row["sqlite-fts"]["p50_remember_ms"] == pytest.approx(rem.quantile(0.5, "linear"))
    assert row["append"]["p50_remember_ms"] is None
    assert row["append"]["beyond_l1_probes"] == run.probes["beyond_l1"].sum()
    # without tiers and probes: the optional columns are null
    bare = summarise_conversation(run.table)
    assert bare["p50_l1_ms"].null_count() == len(STRATEGIES)
    assert bare["corrected_probes"].null_count() == len(STRATEGIES)
    tiers = summarise_tiers(run.tiers)
    assert dict(tiers.schema) == TIER_SUMMARY_SCHEMA
    assert tiers["tier"].to_list() == ["L1", "L2", "L3"]
    assert tiers["strategy"].to_list() == ["three-tier"] * 3
    assert tiers["max_tokens"].to_list()[0] <= CAP


# ------------------------------------------------------------- other entry points
def test_topics_sampling_multi_memory_turns_and_determinism(root, corpus, memories):
    corpus_dir, emb = corpus
    kw = PARAMS | dict(
        conversations=1,
        turns=30,
        probes_every=5,
        min_gap=5,
        seed=3,
        k=3,
        memories_per_turn=3,
        sampling="topics",
        arms=RECALLING,
    )
    a = run_sweep(corpus_dir, emb, root / "topics", **kw)
    b = run_sweep(corpus_dir, emb, root / "topics", **kw)
    cols = [c for c in CONVERSATION_SCHEMA if c not in ("latency_ms", "remember_ms")]
    assert a.table.select(cols).equals(b.table.select(cols))
    assert a.probes.equals(b.probes)
    assert a.table["strategy"].unique().sort().to_list() == ["append", "file-vec", "sqlite-fts"]
    assert a.tiers.height == 0
    app = per(a.table, "append", 0)["context_tokens"].to_list()
    assert app[-1] > app[0] > 0 and len(app) == 30
    # 90 memories in time order: facts with all their memories, plus their distractors
    assert a.probes.height > 0 and (a.probes["gap"] >= 5).all()
    assert per(a.table, "append", 0).filter(pl.col("probe").is_not_null())["probe_hit"].all()


def test_conversation_sweep_and_writer(root, corpus, tmp_path):
    corpus_dir, emb = corpus
    settings = PARAMS | dict(conversations=1, turns=25)
    t = conversation_sweep(corpus_dir, emb, root / "sweep", settings, settings.pop("arm_params"))
    assert t.columns == list(CONVERSATION_SCHEMA) and t.height == 25
    out = tmp_path / "sweeps"
    write_conversation_sweep(
        out / "conversation.csv",
        out / "conversation_summary.csv",
        corpus_dir,
        emb,
        root / "writer",
        tiers_path=out / "tiers.csv",
        probes_path=out / "probes.csv",
        settings={
            k: v
            for k, v in (PARAMS | dict(conversations=1, turns=40, l1_max_tokens=300)).items()
            if k != "arm_params"
        }
        | {"arms": ("three-tier",)},
    )
    table = pl.read_csv(out / "conversation.csv", schema_overrides={"probe": pl.String})
    assert table.columns == list(CONVERSATION_SCHEMA) and table.height == 80
    summary = pl.read_csv(out / "conversation_summary.csv")
    assert summary["strategy"].to_list() == ["append", "three-tier"]
    assert pl.read_csv(out / "tiers.csv")["tier"].to_list() == ["L1", "L2", "L3"]
    assert (out / "probes.csv").is_file()
    assert not list(out.glob(".*.tmp"))


def test_bad_parameters(root, corpus):
    corpus_dir, emb = corpus
    for kw in (
        {"turns": 0},
        {"probes_every": 0},
        {"k": -1},
        {"sampling": "random"},
        {"memories_per_turn": 0},
    ):
        with pytest.raises(ValueError):
            run_sweep(corpus_dir, emb, root / "bad", **PARAMS | kw)
    with pytest.raises(ValueError, match="unknown arm 'nope'"):
        run_sweep(corpus_dir, emb, root / "bad", **PARAMS | dict(arms=("sqlite-fts", "nope")))
    with pytest.raises(ValueError, match="duplicate"):
        run_sweep(corpus_dir, emb, root / "bad", **PARAMS | dict(arms=("sqlite-fts", "sqlite-fts")))
    with pytest.raises(ValueError, match="file-vec: bad parameters"):
        run_sweep(
            corpus_dir,
            emb,
            root / "bad",
            **PARAMS | dict(arms=("file-vec",), arm_params={"file-vec": {"x": 1}}),
        )
    with pytest.raises(ValueError, match="memories"):
        run_sweep(corpus_dir, emb, root / "bad", **PARAMS | dict(turns=10_000))
    assert not (root / "bad" / "file-vec").exists()  # refused before any store was made


def test_sweep_parameters_reach_the_arms_that_take_them():
    sweep = {"l1_max_tokens": 300, "summariser": "extractive"}
    tt = make_conversation_arm("three-tier", {"l1_max_tokens": 999}, sweep)
    fts = make_conversation_arm("sqlite-fts", None, sweep)  # takes neither: not passed
    try:
        assert tt.l1_max_tokens == 300  # the sweep's cap wins over arm_params
    finally:
        tt.close()
        fts.close()


def test_remember_frame_supersedes_earlier_turns_only():
    stream = pl.DataFrame(
        {
            "memory_id": ["a", "b", "c", "d"],
            "body": ["old a", "old b", "fix", "other"],
            "created_day": [1, 2, 3, 3],
            "seq": [1, 2, 3, 4],
            "superseded_by": ["c", "c", None, None],
            "tokens": [2, 2, 1, 1],
            "unrelated": [0, 0, 0, 0],
        }
    )
    f = remember_frame(stream, [1, 2, 2, 3])  # b and its correction c share turn 2
    assert f.columns == [
        "memory_id",
        "seq",
        "body",
        "created_day",
        "superseded_by",
        "tokens",
        "supersedes",
    ]
    assert f["superseded_by"].null_count() == 4
    assert f["supersedes"].to_list() == [None, None, ["a"], None]
    assert f["seq"].to_list() == [1, 2, 3, 4] and f["tokens"].to_list() == [2, 2, 1, 1]


def test_figure(run, tmp_path):
    csv = tmp_path / "conversation.csv"
    run.table.write_csv(csv)
    plot(csv, tmp_path / "conversation.svg")
    assert (tmp_path / "conversation.svg").stat().st_size > 1000
    assert (tmp_path / "conversation.png").stat().st_size > 1000


def test_settings_are_the_config_model_and_its_bounds_the_only_ones(root, corpus):
    """The library takes the config model (or validates a mapping through it): one set of
    fields, defaults and bounds."""
    params = inspect.signature(run_conversations).parameters
    assert list(params) == ["corpus_dir", "embeddings_path", "work_dir", "settings", "arm_params"]
    assert set(ConversationConfig.model_fields) | {"arm_params"} == set(PARAMS)
    corpus_dir, emb = corpus
    with pytest.raises(ValidationError, match="turns") as err:
        run_sweep(corpus_dir, emb, root / "bounds", **PARAMS | dict(turns=9))
    assert "greater than or equal to 10" in str(err.value)  # the model's bound, not another
    with pytest.raises(ValidationError, match="colour"):
        run_sweep(corpus_dir, emb, root / "bounds", **PARAMS | dict(colour="red"))
    fields = ConversationConfig.model_fields
    assert get_args(fields["sampling"].annotation) == SAMPLINGS
    assert set(get_args(fields["summariser"].annotation)) == set(SUMMARISERS)
