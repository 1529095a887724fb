"""The fleet trial: plans, error kinds, the engines' integrity checks, real agent processes."""

from __future__ import annotations

import collections
import importlib.util
import os
import sys

import apsw
import polars as pl
import psycopg
import pytest
from support.corpora import small_corpus

from agentmem.arms.base import ArmError
from agentmem.arms.factory import make_arm
from agentmem.config import Config
from agentmem.pg import EmbeddedServer
from agentmem.report.html import _fleet_summary
from agentmem.sql.postgres.catalog import consistency_problems
from agentmem.sql.sqlite.connection import integrity_problems
from agentmem.trials import TrialError
from agentmem.trials.fleet import (
    ERROR_KINDS,
    FIELDS,
    OPS,
    FleetData,
    error_kind,
    plan_runs,
    run_fleet,
)
from agentmem.trials.fleet.check import check_store
from agentmem.trials.fleet.pool import AgentPool
from agentmem.trials.fleet.zygote import ImportRecorder

MIX = {"recall": 0.70, "remember": 0.25, "correction": 0.05}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return small_corpus(tmp_path_factory)


@pytest.fixture(scope="module")
def data(corpus):
    return FleetData.load(*corpus)


# ------------------------------------------------------------------------------ plans
def test_plans_are_seeded_unique_and_follow_the_mix(data):
    runs = [("n1", 1, 40), ("n4", 4, 40), ("n8", 8, 40)]
    plans = plan_runs(data, runs, MIX, seed=7)
    assert plans == plan_runs(data, runs, MIX, seed=7)
    assert plans != plan_runs(data, runs, MIX, seed=8)
    assert [len(plans[r]) for r, _, _ in runs] == [1, 4, 8]
    for r, _, _ in runs:  # each agent opens with its warm-up write
        for a, agent in enumerate(plans[r]):
            assert agent[0][0] == "remember" and agent[0][2] == f"fleet-{r}-a{a:02d}-warm"
    ops = [op for r, _, _ in runs for agent in plans[r] for op in agent[1:]]
    assert len(ops) == 13 * 40
    kinds = collections.Counter(op[0] for op in ops)
    assert set(kinds) <= set(OPS)
    # 520 draws: each share within 4 binomial standard deviations
    for kind, share in MIX.items():
        sd = (520 * share * (1 - share)) ** 0.5
        assert abs(kinds[kind] - 520 * share) < 4 * sd, (kind, kinds)
    writes = [op[2] for op in ops if op[0] != "recall"]
    assert len(writes) == len(set(writes))  # every new memory id once in the trial
    corrected = [op[1] for op in ops if op[0] == "correction"]
    assert len(corrected) == len(set(corrected))  # no fact corrected twice
    assert set(corrected) <= set(data.fact_memories)
    for kind, key, _ in ops:
        if kind == "recall":
            assert 0 <= int(key) < len(data.queries)


def test_correction_frame_supersedes_every_memory_of_its_fact(data):
    fact, olds = next(iter(data.fact_memories.items()))
    frame, vecs, superseded = data.new_memory(("correction", fact, "fleet-x-1"), "n2", 1)
    assert superseded == olds
    assert frame.item(0, "supersedes").to_list() == olds
    assert frame.item(0, "body") == data.body(olds[-1])
    assert frame.item(0, "scope_id") == "fleet-n2-a01"
    assert frame.item(0, "created_day") == data.new_day
    assert vecs.ids == ["fleet-x-1"] and vecs.matrix.shape == (1, 384)
    # every fact a correction may pick is current in the corpus
    mem = data.memories.filter(pl.col("memory_id").is_in(olds))
    assert mem.get_column("superseded_by").null_count() == len(olds)


def test_corrections_become_remembers_once_every_fact_is_corrected(data):
    n = len(data.fact_memories)
    (ops,) = plan_runs(data, [("n1", 1, n + 5)], {"correction": 1.0}, 7)["n1"]
    kinds = collections.Counter(op[0] for op in ops[1:])
    assert kinds == {"correction": n, "remember": 5}


# ------------------------------------------------------------------------- error kinds
def _chained(inner: BaseException) -> ArmError:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise ArmError("arm: remember failed") from exc
    except ArmError as outer:
        return outer


def test_error_kinds_follow_the_chained_cause():
    assert error_kind(_chained(apsw.BusyError("database is locked"))) == "busy"
    assert error_kind(_chained(psycopg.errors.SerializationFailure("x"))) == "serialization"
    assert error_kind(_chained(psycopg.errors.DeadlockDetected("deadlock detected"))) == (
        "serialization"
    )
    assert error_kind(_chained(RuntimeError("Commit conflict for version 7"))) == "conflict"
    assert error_kind(_chained(KeyError("memory_id"))) == "exception"
    assert error_kind(ArmError("arm: memory 'm1' is already stored")) == "exception"


# --------------------------------------------------------------------- integrity checks
def test_sqlite_integrity_finds_a_damaged_fts_index(tmp_path):
    path = tmp_path / "t.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("CREATE VIRTUAL TABLE m_fts USING fts5(body, content='m', content_rowid='id')")
    with conn:
        for i in range(50):
            conn.execute("INSERT INTO m VALUES (?, ?)", (i, f"memory number {i} about ADR-{i}"))
        conn.execute("INSERT INTO m_fts(m_fts) VALUES ('rebuild')")
    assert integrity_problems(conn) == []
    conn.execute("DELETE FROM m WHERE id < 10")  # content gone, index still holds it
    problems = integrity_problems(conn)
    assert len(problems) == 1 and problems[0].startswith("FTS5 m_fts:"), problems
    conn.close()


def test_sqlite_integrity_finds_a_damaged_btree(tmp_path):
    path = tmp_path / "t.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("CREATE INDEX m_body ON m(body)")
    with conn:
        for i in range(2000):
            conn.execute("INSERT INTO m VALUES (?, ?)", (i, f"body {i:05d} " * 4))
    conn.close()
    raw = bytearray(path.read_bytes())
    page = 4096
    for p in range(3, len(raw) // page - 1, 2):  # scribble over every other page's cells
        raw[p * page + 200 : p * page + 400] = os.urandom(200)
    path.write_bytes(bytes(raw))
    conn = apsw.Connection(str(path))
    try:
        problems = integrity_problems(conn)
    except apsw.CorruptError:
        problems = ["corrupt"]
    assert problems and problems != ["ok"]
    conn.close()


def test_pg_consistency_finds_repeats_and_dangling_links(tmp_path):
    with EmbeddedServer(tmp_path / "pgdata") as srv, psycopg.connect(srv.uri()) as conn:
        conn.execute("CREATE TABLE m(memory_id text, superseded_by text)")
        conn.execute("CREATE INDEX m_id ON m(memory_id)")
        conn.execute("INSERT INTO m VALUES ('a', NULL), ('b', 'a'), ('c', NULL)")
        assert consistency_problems(conn, "m") == []
        conn.execute("INSERT INTO m VALUES ('c', 'zz'), ('d', 'gone')")
        problems = consistency_problems(conn, "m")
        assert problems == [
            "m: 1 rows repeat a memory_id",
            "m: 2 rows superseded by a memory not stored",
        ]
        assert consistency_problems(conn, "m", indexed=False, links=False) == [problems[0]]


# ----------------------------------------------------------------------------- checks
def test_check_counts_a_lost_write_a_duplicate_and_an_unacknowledged_one(data, tmp_path):
    arm = make_arm("file-jsonl")
    arm.build(data.corpus, data.vectors, tmp_path)
    frame, vecs, _ = data.new_memory(("remember", data.memories.item(0, "memory_id"), "w1"), "r", 0)
    arm.remember(frame, vecs)  # stored, but its call is reported as failed below
    arm.close()
    path = tmp_path / "memories.jsonl"
    first = path.read_text().splitlines()[0]
    with path.open("a") as f:  # one corpus memory stored twice
        f.write(first + "\n")
    msg = {"arm": "file-jsonl", "store": str(tmp_path), "k": 10}
    msg.update(acked=["never-written"], attempted=["never-written", "w1"], corrections=[])
    out = check_store(data, msg)
    assert out["opened"] and out["integrity"] == []
    assert out["lost"] == 1 and out["lost_earlier"] == 0
    assert out["unacked_present"] == 1
    assert out["duplicated"] == 1


def test_check_counts_the_corrections_in_force(data, tmp_path):
    arm = make_arm("file-jsonl")
    arm.build(data.corpus, data.vectors, tmp_path)
    (fact_a, olds_a), (fact_b, olds_b) = list(data.fact_memories.items())[:2]
    arm.remember(*data.new_memory(("correction", fact_a, "c1"), "r", 0)[:2])
    # c2 is stored as a plain remember: it supersedes nothing of fact b
    arm.remember(*data.new_memory(("remember", olds_b[-1], "c2"), "r", 0)[:2])
    arm.close()
    msg = {"arm": "file-jsonl", "store": str(tmp_path), "k": 10}
    msg.update(acked=["c1", "c2"], attempted=["c1", "c2"])
    msg["corrections"] = [["c1", olds_a], ["c2", olds_b], ["never-written", olds_b]]
    out = check_store(data, msg)
    assert out["lost"] == 0 and out["integrity"] == []
    assert out["corrections_in_force"] == 1


def test_check_reports_a_store_it_cannot_open(data, tmp_path):
    out = check_store(data, {"arm": "sqlite-fts", "store": str(tmp_path / "none"), "acked": ["a"]})
    assert out["opened"] is False and out["lost"] is None
    assert out["integrity"][0].startswith("cannot open:")


# --------------------------------------------------------------------------- the trial
@pytest.fixture(scope="module")
def fleet_rows(corpus, tmp_path_factory):
    work = tmp_path_factory.mktemp("fleet")
    rows = run_fleet(
        ["sqlite-fts", "file-vec", "milvus-lite"],
        {},
        *corpus,
        work,
        settings={
            "processes": [1, 2],
            "operations": 12,
            "kill_processes": 2,
            "kill_operations": 60,
        },
        seed=3,
        progress=False,
    )
    return pl.DataFrame(rows, infer_schema_length=None), work


def test_fleet_rows_and_columns(fleet_rows):
    t, work = fleet_rows
    assert t.columns == list(FIELDS)
    # two file-vec writers save without a lock, the last save of each file winning: when
    # one's index lands beside the other's metadata the store no longer opens, and no run
    # follows on it (timing decides; under load it happens)
    fv2 = t.filter(pl.col("arm") == "file-vec", pl.col("processes") == 2).row(0, named=True)
    fv_kill = [] if fv2["corrupt"] else [("file-vec", "sigkill", 2)]
    assert t.select("arm", "variant", "processes").rows() == [
        ("sqlite-fts", "run", 1),
        ("sqlite-fts", "run", 2),
        ("sqlite-fts", "sigkill", 2),
        ("file-vec", "run", 1),
        ("file-vec", "run", 2),
        *fv_kill,
        ("milvus-lite", "run", 0),
    ]
    if fv2["corrupt"]:
        assert fv2["problems"].startswith("cannot open: "), fv2["problems"]
    assert not (work / "stores" / "sqlite-fts").exists()  # stores are removed afterwards
    runs = t.filter(pl.col("variant") == "run", pl.col("supported"))
    errors = sum(runs[f"errors_{k}"] for k in ERROR_KINDS)
    assert (runs["operations"] + errors == runs["processes"] * 12).all()
    assert (runs["ops_per_s"] > 0).all() and (runs["recall_p50_ms"] > 0).all()
    assert (runs["contention"] == (runs["processes"] > runs["cores"])).all()


def test_sqlite_fleet_loses_nothing_and_stays_intact(fleet_rows):
    t, _ = fleet_rows
    s = t.filter(pl.col("arm") == "sqlite-fts")
    assert s["supported"].all()
    assert (s["lost"] == 0).all() and (s["lost_earlier"] == 0).all()
    assert (s["duplicated"] == 0).all() and (s["unacked_present"] == 0).all()
    assert not s["corrupt"].any()
    assert (s["integrity_check"] == "PRAGMA integrity_check + FTS5 integrity-check").all()
    run = s.filter(pl.col("variant") == "run")
    assert (run["acknowledged"] > 0).all()
    assert (run["corrections_in_force"] == run["corrections"]).all()
    assert (run["read_your_writes"] == 1.0).all()
    kill = s.filter(pl.col("variant") == "sigkill").row(0, named=True)
    # killed mid-run: some writes acknowledged, not all 2 x 60 x 30 % planned
    assert 0 < kill["acknowledged"] < 0.9 * 2 * 60 * 0.30
    assert kill["problems"] is None


def test_agents_are_forked_and_reused_across_runs(fleet_rows):
    _, work = fleet_rows
    logs = work / "logs"
    assert "ready in" in (logs / "zygote.log").read_text()
    # per supported arm: the two agents of N = 2 (N = 1 and the SIGKILL run reuse them)
    # and the checker; none replaced
    assert len(list(logs.glob("agent-*.log"))) == 2 * 3


def test_unsupported_arm_is_listed_with_its_reason(fleet_rows):
    t, _ = fleet_rows
    m = t.filter(pl.col("arm") == "milvus-lite").row(0, named=True)
    assert m["supported"] is False
    assert "locks its store to one process" in m["reason"]


def test_fleet_summary_sums_error_kinds():
    row = dict.fromkeys(FIELDS)
    row.update(
        arm="a", errors_busy=2, errors_serialization=0, errors_conflict=1, errors_exception=4
    )
    (out,) = _fleet_summary([row])
    assert out["errors"] == 7 and out["arm"] == "a" and "errors_busy" not in out


def test_fleet_refuses_unknown_arms_and_bad_work_dir(corpus, tmp_path):
    assert (
        run_fleet([], {}, *corpus, tmp_path, settings={}, seed=3, progress=False) == []
    )  # nothing to run
    with pytest.raises(KeyError):
        run_fleet(["no-such-arm"], {}, *corpus, tmp_path, settings={}, seed=3, progress=False)
    with pytest.raises(TrialError, match="does not exist"):
        run_fleet(
            ["sqlite-fts"], {}, *corpus, tmp_path / "missing", settings={}, seed=3, progress=False
        )


# ------------------------------------------------------------------------------ config
def test_config_without_the_fleet_size_takes_the_main_size():
    cfg = Config.model_validate(
        {
            "main_size": "m",
            "sizes": {"m": {"facts": 600, "queries_per_class": 4}},
            "scaling_sizes": ["m"],
            "arms": ["sqlite-fts"],
        }
    )
    assert cfg.trials.fleet.size is None and cfg.trials.fleet.processes == [1, 2, 4, 8]


@pytest.mark.parametrize(
    ("fleet", "message"),
    [
        ({"mix": {"recall": 0.5, "remember": 0.25, "correction": 0.05}}, "sum to 1"),
        ({"processes": [1, 2, 2]}, "repeats a fleet size"),
        ({"arms": ["sqlite-fts", "nope"]}, "trials.fleet.arms: unknown arm 'nope'"),
        ({"size": "m"}, "trials.fleet.size 'm' is not among sizes"),
    ],
)
def test_config_refuses_bad_fleet(fleet, message):
    base = {
        "main_size": "s",
        "sizes": {"s": {"facts": 600, "queries_per_class": 4}},
        "scaling_sizes": ["s"],
        "arms": ["sqlite-fts"],
    }
    with pytest.raises(ValueError, match=message):
        Config.model_validate({**base, "trials": {"fleet": {"size": "s", **fleet}}})


def test_figure_draws_the_rows_and_an_empty_table(fleet_rows, tmp_path):
    from agentmem.report.figures.fleet import plot

    t, _ = fleet_rows
    t.write_csv(tmp_path / "fleet.csv")
    plot(tmp_path / "fleet.csv", tmp_path / "fleet.svg")
    svg = (tmp_path / "fleet.svg").read_text()
    assert "sqlite-fts" in svg and "file-vec" in svg and "milvus-lite" not in svg
    pl.DataFrame({f: [] for f in FIELDS}).write_csv(tmp_path / "empty.csv")
    plot(tmp_path / "empty.csv", tmp_path / "empty.svg")
    assert "no arm took part" in (tmp_path / "empty.svg").read_text()
    assert (tmp_path / "empty.png").stat().st_size > 0


# ----------------------------------------------------------------------------- zygote
class _Sink:
    """Stands in for a zygote: what an ImportRecorder sends."""

    broken = False

    def __init__(self):
        self.sent = []

    def begin(self):
        self.sent.append(("begin",))

    def preload(self, module, env):
        self.sent.append(("import", module, env))

    def end(self, env):
        self.sent.append(("end", env))


def test_import_recorder_sends_imports_with_their_environment(tmp_path, monkeypatch):
    (tmp_path / "fleetrec_a.py").write_text("import fleetrec_b\n")
    (tmp_path / "fleetrec_b.py").write_text("")
    (tmp_path / "fleetrec_probed.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("FLEETREC", raising=False)
    sink = _Sink()
    try:
        with ImportRecorder(sink):
            os.environ["FLEETREC"] = "on"  # an arm sets its product's switch first
            import fleetrec_a  # noqa: F401

            del os.environ["FLEETREC"]
            assert importlib.util.find_spec("fleetrec_probed") is not None  # looked for only
            assert importlib.util.find_spec("fleetrec_missing") is None
    finally:
        for m in ("fleetrec_a", "fleetrec_b"):
            sys.modules.pop(m, None)
    assert sink.sent[0] == ("begin",) and sink.sent[-1] == ("end", {})
    imports = {m: env for _, m, env in sink.sent[1:-1]}
    assert imports == {"fleetrec_a": {"FLEETREC": "on"}, "fleetrec_b": {"FLEETREC": "on"}}


def test_zygote_imports_then_forks_agents_in_their_own_process_group(corpus, tmp_path, monkeypatch):
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "fleetzyg_mark.py").write_text(
        "import os, pathlib\n"
        f"pathlib.Path({str(tmp_path / 'mark')!r}).write_text("
        "f\"{os.environ.get('FLEETZYG')} {os.getpid()}\")\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(mods))  # the zygote's path
    pool = AgentPool(*corpus, tmp_path)
    try:
        assert pool.zygote is not None
        pool.zygote.begin()
        pool.zygote.preload("fleetzyg_mark", {"FLEETZYG": "set"})
        pool.zygote.end({})
        a, b = pool.take(2)
        assert a.proc is None and a.zygote is pool.zygote  # forked, not started cold
        # imported once, in the zygote, with the environment it was sent with
        assert (tmp_path / "mark").read_text() == f"set {pool.zygote.proc.pid}"
        for agent in (a, b):  # each its own session and process group
            assert os.getsid(agent.pid) == agent.pid == os.getpgid(agent.pid)
        assert os.getpgid(a.pid) != os.getpgid(0)
        a.kill()
        assert not a.alive() and b.alive()
        a.kill()  # a second kill does nothing (its pid may be reused)
        assert pool.take(2)[1] is b and pool.agents[0] is not a  # the dead one is replaced
        pool.retire()  # the arm's end: forked agents go
        assert pool.agents == [] and not b.alive()
    finally:
        pool.close()


def test_pool_starts_agents_cold_once_the_zygote_is_gone(corpus, tmp_path):
    pool = AgentPool(*corpus, tmp_path)
    try:
        assert pool.zygote is not None
        pool.zygote.proc.kill()
        pool.zygote.proc.wait()
        (a,) = pool.take(1)
        assert pool.zygote is None and a.proc is not None  # a cold process
        assert os.getpgid(a.pid) == a.pid
        pool.retire()  # cold agents are kept for the next arm
        assert pool.agents == [a] and a.alive()
    finally:
        pool.close()
    assert not a.alive()
