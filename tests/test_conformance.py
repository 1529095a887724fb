"""Arm conformance: every registered arm, on the real smoke corpus with real embeddings.

New arms are picked up from ``agentmem.arms.ARMS`` automatically.
"""

from __future__ import annotations

import gc
import re
import threading

import numpy as np
import polars as pl
import pytest
from support.conformance import conformance_arms
from support.corpora import build_corpus
from support.hostile import HOSTILE_TEXTS
from support.paths import REPO
from support.timing import build_timed

from agentmem.arms import ARMS, BUILTIN_ARMS, base
from agentmem.config import load_config
from agentmem.corpus import load_corpus, load_queries
from agentmem.embeddings import load_embeddings

K = 10
#: arm name -> wall time (ms) of its ``build`` call in the ``built`` fixture
BUILD_WALL_MS: dict[str, float] = {}


@pytest.fixture(scope="session")
def smoke(tmp_path_factory):
    """The smoke corpus (config/smoke.yaml) with real all-MiniLM-L6-v2 vectors."""
    cfg = load_config(REPO / "config/smoke.yaml")
    d = tmp_path_factory.mktemp("smoke")
    corpus_dir, emb = build_corpus(d, cfg.sizes[cfg.main_size], cfg.corpus)
    vectors = load_embeddings(emb)
    return {
        "corpus": load_corpus(corpus_dir),
        "vectors": vectors,
        "queries": load_queries(corpus_dir, vectors),
        "dir": d,
    }


@pytest.fixture(scope="module", params=conformance_arms())
def built(request, smoke, tmp_path_factory):
    name = request.param
    arm = ARMS[name]()
    store = tmp_path_factory.mktemp(name.replace("-", "_"))
    stats, BUILD_WALL_MS[name] = build_timed(arm, smoke["corpus"], smoke["vectors"], store)
    yield name, arm, store, stats
    arm.close()
    gc.collect()


def _row_ok(row: dict, pred: base.Predicate) -> bool:
    return pred.matches(row)


def test_protocol_and_build_stats(built):
    name, arm, _, stats = built
    assert isinstance(arm, base.Arm)
    assert arm.name == name
    # rows were written; an arm without indexes reports index_ms = 0; both within the call
    assert stats.ingest_ms > 0 and stats.index_ms >= 0
    assert stats.ingest_ms + stats.index_ms <= BUILD_WALL_MS[name]
    st = arm.storage()
    assert isinstance(st, base.StorageStats)
    assert st.total_bytes > 0
    assert st.total_bytes == sum(st.objects.values())
    assert st.source


def test_every_query_well_formed(built, smoke):
    name, arm, _, _ = built
    mem = smoke["corpus"].memories
    rows = {r["memory_id"]: r for r in mem.iter_rows(named=True)}
    caps = arm.capabilities
    for q in smoke["queries"]:
        res = arm.query(q, K)
        ids = res.memory_ids
        assert len(ids) <= K, (name, q.query_id)
        assert len(set(ids)) == len(ids), (name, q.query_id)
        assert all(i in rows for i in ids), (name, q.query_id)
        if caps.predicate and q.predicate is not None:
            assert all(_row_ok(rows[i], q.predicate) for i in ids), (name, q.query_id)
        if q.wants_count and caps.aggregate:
            expected = mem.filter(pl.col("fact_id") == q.predicate.value).height
            assert res.count == expected, (name, q.query_id)
        if not caps.aggregate:
            assert res.count is None


def test_explain_per_class(built, smoke):
    _, arm, _, _ = built
    seen = set()
    for q in smoke["queries"]:
        if q.query_class in seen:
            continue
        seen.add(q.query_class)
        plan = arm.explain(q, K)
        assert isinstance(plan, str) and plan.strip()


def test_hostile_texts_never_raise(built, smoke):
    name, arm, _, _ = built
    emb = smoke["queries"][0].embedding
    preds = [
        None,
        base.Predicate("superseded_by", "is_null"),
        base.Predicate("created_day", "<=", 100),
    ]
    for i, text in enumerate(HOSTILE_TEXTS):
        q = base.Query(f"h{i}", text, emb, preds[i % 3], wants_count=i % 2 == 0)
        res = arm.query(q, K)
        assert len(res.memory_ids) <= K, (name, text[:40])
        assert all(isinstance(m, str) for m in res.memory_ids)


def test_prefix_stable_claim_holds_on_every_query(built, smoke):
    """An arm prefix-stable to 50 (prefix_stable, or a bound) answers k with the first k at 50."""
    name, arm, _, _ = built
    assert isinstance(type(arm).prefix_stable, bool), name
    if arm.prefix_stable:
        assert base.prefix_stable_at(arm, 50), name
    if not base.prefix_stable_at(arm, 50):
        pytest.skip(f"{name} makes no prefix claim at 50 (its search depth grows with k)")
    for q in smoke["queries"]:
        full = arm.query(q, 50).memory_ids
        for k in (1, 3, 5, 10, 20):
            assert arm.query(q, k).memory_ids == full[:k], (name, q.query_id, k)


@pytest.mark.parametrize("name", conformance_arms())
def test_inert_ablations_answer_as_configured(name, smoke, tmp_path):
    """A variant an arm calls inert on a store answers every query there as configured.

    The store: the smoke corpus with every entity link and every correction removed (the
    entities themselves kept), which leaves nothing for sqlite-gated's keys branch, recency
    and correction lift to act on.
    """
    if not getattr(ARMS[name], "ablations", None):
        pytest.skip(f"{name} declares no ablations")
    memories = smoke["corpus"].memories.with_columns(
        pl.col("entity_ids").list.head(0), pl.lit(None, dtype=pl.String).alias("superseded_by")
    )
    corpus = base.Corpus(memories=memories, entities=smoke["corpus"].entities)
    arm = ARMS[name]()
    arm.build(corpus, smoke["vectors"], tmp_path)
    try:
        inert = base.inert_ablations(arm)
        assert set(inert) <= set(ARMS[name].ablations), name
        if name == "sqlite-gated":
            assert set(inert) == {
                "no keys branch",
                "no gate (dense scan always)",
                "no recency",
                "no correction lift",
                "no currency signal",
            }
            assert "no memory is linked to an entity" in inert["no recency"]
        want = {q.query_id: arm.query(q, K).memory_ids for q in smoke["queries"]}
    finally:
        arm.close()
    for variant in inert:
        other = ARMS[name](**ARMS[name].ablations[variant])
        other.open(tmp_path)
        try:
            for q in smoke["queries"]:
                assert other.query(q, K).memory_ids == want[q.query_id], (variant, q.query_id)
        finally:
            other.close()


def test_no_ablation_is_inert_where_its_choice_acts(built):
    """On the smoke corpus (entity links and corrections in it) no ablation is inert."""
    name, arm, _, _ = built
    assert base.inert_ablations(arm) == {}, name


def test_batch_answers_equal_one_query_at_a_time(built, smoke, monkeypatch):
    """query_many (a product's batch search) answers every query as query does.

    Batches of four, so the products' searches split a filter's queries across calls; a
    scope nobody has, hostile text and k = 0 ride along, and a non-finite embedding gets
    the same answer, or the same refusal, in a batch as alone.
    """
    from agentmem.arms import product

    monkeypatch.setattr(product, "BATCH_QUERIES", 4)
    name, arm, _, _ = built
    first = smoke["queries"][0]
    nan = base.Query("nan", first.text, np.full(384, np.nan, dtype=np.float32))
    try:
        alone = arm.query(nan, K)
    except base.ArmError:  # an arm may refuse a non-finite embedding: then in a batch too
        with pytest.raises(base.ArmError):
            base.answer_all(arm, [smoke["queries"][1], nan], K)
    else:
        assert base.answer_all(arm, [smoke["queries"][1], nan], K)[1] == alone, name
    odd = [
        base.Query("nobody", first.text, first.embedding, scope="nobody"),
        base.Query("hostile", HOSTILE_TEXTS[0], first.embedding, wants_count=True),
    ]
    qs = [*smoke["queries"], *odd]
    for k in (0, K, 50):
        one = [arm.query(q, k) for q in qs]
        many = base.answer_all(arm, qs, k)
        differ = [q.query_id for q, a, b in zip(qs, one, many, strict=True) if a != b]
        assert many == one, (name, k, differ)
    assert sum(len(r.memory_ids) for r in many) > 0, name


def test_reopen_gives_same_answers(built, smoke):
    name, arm, store, _ = built
    qs = smoke["queries"][:5]
    before = [arm.query(q, K).memory_ids for q in qs]
    arm.close()
    again = ARMS[name]()
    again.open(store)
    try:
        assert [again.query(q, K).memory_ids for q in qs] == before
    finally:
        again.close()
        again.close()  # idempotent
    arm.open(store)  # leave the module fixture usable


def test_concurrent_queries_match_serial_answers(built, smoke):
    """Four threads asking every smoke query at once get the single-threaded answers."""
    name, arm, _, _ = built
    queries = smoke["queries"]
    serial = {q.query_id: arm.query(q, K) for q in queries}
    errors: list[str] = []
    answers: list[tuple[str, list[str], int | None]] = []

    def ask(offset: int) -> None:
        for q in queries[offset:] + queries[:offset]:
            try:
                res = arm.query(q, K)
                answers.append((q.query_id, res.memory_ids, res.count))
            except BaseException as exc:  # noqa: BLE001 - every kind is a failure here
                errors.append(f"{q.query_id}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=ask, args=(i * 7,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], name
    assert len(answers) == 4 * len(queries)
    for qid, ids, count in answers:
        assert (ids, count) == (serial[qid].memory_ids, serial[qid].count), (name, qid)
    assert arm.storage().total_bytes > 0  # still usable afterwards


def _bad_queries(emb: np.ndarray) -> list[tuple[str, base.Query, int]]:
    """Ill-formed calls an agent's tool layer might make, with the k to pass."""
    return [
        ("no embedding", base.Query("b0", "timeout of SVC", None), K),  # type: ignore[arg-type]
        ("short embedding", base.Query("b1", "timeout", emb[:17]), K),
        ("nan embedding", base.Query("b2", "timeout", np.full_like(emb, np.nan)), K),
        ("2-d embedding", base.Query("b3", "timeout", np.stack([emb, emb])), K),
        ("k = 0", base.Query("b4", "timeout", emb), 0),
        ("k < 0", base.Query("b5", "timeout", emb), -3),
        (
            "huge k",
            base.Query("b6", "timeout", emb, base.Predicate("superseded_by", "is_null")),
            10**6,
        ),
    ]


def test_only_documented_exceptions_leave_the_arm(built, smoke):
    """Bad arguments give a result, ArmError or ValueError; after close() calls give ArmError."""
    name, arm, store, _ = built
    first = smoke["queries"][0]
    before = arm.query(first, K).memory_ids
    emb = first.embedding
    for label, q, k in _bad_queries(emb):
        try:
            res = arm.query(q, k)
        except (base.ArmError, ValueError):
            continue
        assert len(res.memory_ids) <= max(k, 0), (name, label)
        assert all(isinstance(m, str) for m in res.memory_ids), (name, label)
    arm.close()
    try:
        for call in (
            lambda: arm.query(smoke["queries"][0], K),
            lambda: arm.explain(smoke["queries"][0], K),
            arm.storage,
        ):
            with pytest.raises(base.ArmError):
                call()
        arm.close()  # idempotent
    finally:
        arm.open(store)  # leave the module fixture usable
    assert arm.query(first, K).memory_ids == before  # no bad call left the arm broken


def test_string_embeddings_are_refused_naming_the_arm_and_field(built, smoke, tmp_path):
    """A string array or list where an embedding goes: query, remember and build raise
    ArmError naming the arm and the field (an arm that reads no vectors answers a query
    and builds without them); the arm stays usable."""
    name, arm, _, _ = built
    first = smoke["queries"][0]
    before = arm.query(first, K).memory_ids
    words = np.array(["a", "b"] * 192)
    reads_vectors = ARMS[name].capabilities.vector_access != "none"
    prefix = re.escape(name)
    for emb in (words, words.tolist()):
        try:
            arm.query(base.Query("q1", "timeout", emb), K)  # type: ignore[arg-type]
        except base.ArmError as exc:
            assert re.match(rf"{prefix}: query 'q1' embedding: not numeric ", str(exc)), exc
        else:
            assert not reads_vectors, name
    row = _memory("str-1", "a memory with a string vector")
    with pytest.raises(base.ArmError, match=rf"^{prefix}: remember: embeddings: not numeric "):
        arm.remember(pl.DataFrame([row]), base.Embeddings(["str-1"], words.reshape(1, -1)))
    assert arm.fetch(["str-1"]).height == 0
    if reads_vectors:  # refused before any store or server is made
        ids = smoke["vectors"].ids
        fresh = ARMS[name]()
        try:
            with pytest.raises(base.ArmError, match=rf"^{prefix}: build: embeddings: not numeric "):
                fresh.build(smoke["corpus"], base.Embeddings(ids, np.tile(words, (len(ids), 1))),
                            tmp_path / "strings")  # fmt: skip
        finally:
            fresh.close()
    assert arm.query(first, K).memory_ids == before  # nothing written, still answers


def test_open_missing_store_names_path(tmp_path):
    for name, cls in sorted(ARMS.items()):
        missing = tmp_path / f"nope-{name}"
        arm = cls()
        with pytest.raises(base.ArmError, match="nope-"):
            arm.open(missing)
        arm.close()


# ------------------------------------------------------------------- remember / fetch
CURRENT = base.Predicate("superseded_by", "is_null")


def _memory(mid: str, body: str, day: int = 500, **extra) -> dict:
    return {"memory_id": mid, "body": body, "created_day": day, **extra}


def _vectors(rows: list[dict], vec: np.ndarray) -> base.Embeddings:
    """Every new memory gets ``vec``: the query carrying ``vec`` is its nearest neighbour."""
    return base.Embeddings([r["memory_id"] for r in rows], np.tile(vec, (len(rows), 1)))


def _remember(arm, rows: list[dict], vec: np.ndarray) -> None:
    arm.remember(pl.DataFrame(rows), _vectors(rows, vec))


def test_remember_then_query_finds_it_and_fetch_returns_it(built, smoke):
    name, arm, _, _ = built
    vec = smoke["queries"][1].embedding
    rows = [_memory("new-zqx-1", "ZQX-4242 rotates the vault keys every ninety minutes",
                    session_id="S-new", kind="procedural")]  # fmt: skip
    _remember(arm, rows, vec)
    q = base.Query("new", "ZQX-4242 vault keys", vec)
    assert "new-zqx-1" in arm.query(q, K).memory_ids, name
    got = arm.fetch(["nope", "new-zqx-1", "nope"])
    assert got.columns == list(base.MEMORY_SCHEMA)
    assert got.height == 1
    row = got.row(0, named=True)
    assert (row["memory_id"], row["body"], row["created_day"]) == (
        "new-zqx-1", rows[0]["body"], 500,
    )  # fmt: skip
    assert (row["session_id"], row["kind"], row["superseded_by"]) == ("S-new", "procedural", None)
    with pytest.raises(base.ArmError, match="new-zqx-1"):  # already stored
        _remember(arm, rows, vec)
    corpus_ids = smoke["corpus"].memories["memory_id"].head(3).to_list()
    assert arm.fetch(corpus_ids)["memory_id"].to_list() == corpus_ids


def test_correction_by_remember_hides_the_old_memory(built, smoke):
    name, arm, _, _ = built
    vec = smoke["queries"][2].embedding
    _remember(arm, [_memory("kqv-old", "KQV-1717 caps the queue at five workers")], vec)
    new = _memory("kqv-new", "KQV-1717 caps the queue at nine workers", supersedes=["kqv-old"])
    _remember(arm, [new], vec)
    rows = {r["memory_id"]: r for r in arm.fetch(["kqv-old", "kqv-new"]).iter_rows(named=True)}
    assert rows["kqv-old"]["superseded_by"] == "kqv-new", name
    assert rows["kqv-new"]["superseded_by"] is None
    ids = arm.query(base.Query("corr", "KQV-1717", vec, CURRENT), K).memory_ids
    if arm.capabilities.predicate:
        assert "kqv-new" in ids and "kqv-old" not in ids, (name, ids)
    with pytest.raises(base.ArmError, match="kqv-missing"):  # superseding what is not stored
        _remember(arm, [_memory("kqv-x", "x", supersedes=["kqv-missing"])], vec)
    assert arm.fetch(["kqv-x"]).height == 0  # nothing written by the failed call


SCOPES = {"alpha": ["scp-a1", "scp-a2", "scp-a3"], "beta": ["scp-b1", "scp-b2", "scp-b3"]}
#: a scope value that breaks naive filter strings (quotes, SQL, a filter expression)
HOSTILE_SCOPE = "al'pha\" OR 1=1; -- ) || scope_id != ''"
#: a scope no engine can store or bind (a lone surrogate: JSON "\\ud800", non-UTF-8 argv)
NON_UTF8_SCOPE = "al\ud800pha"


def test_scope_is_a_hard_filter(built, smoke):
    """A scoped query sees its scope's memories only, counts only them, and never crashes."""
    name, arm, _, _ = built
    vec = smoke["queries"][4].embedding
    rows = [
        _memory(mid, f"SCP-7311 escrow ledger note {mid}", scope_id=scope, session_id=f"S-{scope}")
        for scope, ids in SCOPES.items()
        for mid in ids
    ]
    _remember(arm, rows, vec)
    fetched = arm.fetch(SCOPES["beta"]).iter_rows(named=True)
    stored = {r["memory_id"]: r["scope_id"] for r in fetched}
    assert stored == dict.fromkeys(SCOPES["beta"], "beta"), (name, stored)
    for scope, ids in SCOPES.items():
        for pred in (None, CURRENT):
            q = base.Query(f"scp-{scope}", "SCP-7311 escrow ledger", vec, pred, scope=scope)
            res = arm.query(q, K)
            assert res.memory_ids, (name, scope, pred)
            assert set(res.memory_ids) <= set(ids), (name, scope, pred, res.memory_ids)
        counted = arm.query(
            base.Query(f"scp-{scope}-n", "SCP-7311", vec, wants_count=True, scope=scope), K
        )
        if arm.capabilities.aggregate:
            assert counted.count == len(ids), (name, scope, counted.count)
    unscoped = arm.query(base.Query("scp-all", "SCP-7311 escrow ledger", vec), K).memory_ids
    assert set(unscoped) & set(SCOPES["alpha"]) and set(unscoped) & set(SCOPES["beta"]), (
        name, unscoped,
    )  # fmt: skip
    for scope in ("gamma", HOSTILE_SCOPE, NON_UTF8_SCOPE):
        res = arm.query(base.Query("scp-none", "SCP-7311 escrow ledger", vec, scope=scope), K)
        assert res.memory_ids == [], (name, scope, res.memory_ids)
        counted = arm.query(
            base.Query("scp-none-n", "SCP-7311", vec, wants_count=True, scope=scope), K
        )
        assert counted.count in (None, 0), (name, scope, counted.count)


def test_remember_after_reopen(built, smoke):
    name, arm, store, _ = built
    vec = smoke["queries"][3].embedding
    _remember(arm, [_memory("reo-1", "WXR-9090 before the reopen")], vec)
    arm.close()
    again = ARMS[name]()
    again.open(store)
    try:
        _remember(again, [_memory("reo-2", "WXR-9090 after the reopen")], vec)
        ids = again.query(base.Query("reo", "WXR-9090 reopen", vec), K).memory_ids
        assert {"reo-1", "reo-2"} <= set(ids), (name, ids)
    finally:
        again.close()
    arm.open(store)
    assert {"reo-1", "reo-2"} <= set(arm.query(base.Query("reo", "WXR-9090", vec), K).memory_ids)


def test_hostile_bodies_are_stored_verbatim_or_refused(built, smoke):
    name, arm, _, _ = built
    vec = smoke["queries"][4].embedding
    stored = []
    for i, body in enumerate(HOSTILE_TEXTS):
        row = _memory(f"hostile-{i}", body, session_id="'; DROP TABLE x; --")
        try:
            _remember(arm, [row], vec)
        except base.ArmError:
            continue  # e.g. a NUL byte PostgreSQL text cannot hold: refused, named
        stored.append(row)
    assert len(stored) >= len(HOSTILE_TEXTS) - 2, name
    got = {r["memory_id"]: r["body"] for r in arm.fetch([r["memory_id"] for r in stored])
           .iter_rows(named=True)}  # fmt: skip
    assert got == {r["memory_id"]: r["body"] for r in stored}, name
    for text in HOSTILE_TEXTS[:12]:
        arm.query(base.Query("h", text, vec, CURRENT, wants_count=True), K)


def test_remember_from_threads_while_querying(built, smoke):
    name, arm, _, _ = built
    vec = smoke["queries"][5].embedding
    errors: list[str] = []
    done = threading.Event()

    def write(w: int) -> None:
        for i in range(10):
            try:
                _remember(arm, [_memory(f"thr-{w}-{i}", f"TPX{w}{i:02d} thread write")], vec)
            except BaseException as exc:  # noqa: BLE001
                errors.append(f"{type(exc).__name__}: {exc}")

    def read() -> None:
        while not done.is_set():
            try:
                arm.query(base.Query("t", "TPX thread write", vec, CURRENT), K)
            except BaseException as exc:  # noqa: BLE001
                errors.append(f"{type(exc).__name__}: {exc}")

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    reader.join()
    assert errors == [], name
    ids = [f"thr-{w}-{i}" for w in range(4) for i in range(10)]
    assert sorted(arm.fetch(ids)["memory_id"].to_list()) == sorted(ids)
    if arm.capabilities.text_access != "none":  # the 40 share one vector: text finds it
        # (in the top k, not first: an arm may fuse in a recency list the newest write tops;
        # one identifier token, so a fused text rank is not decided by how the text branch
        # orders the 39 other writes' equal scores)
        assert "thr-3-7" in arm.query(base.Query("t", "TPX307", vec), K).memory_ids, name


def test_bench_hooks_give_the_query_answer(built, smoke):
    """Every built-in and product arm has a bare driver call whose ids are the query's."""
    name, arm, _, _ = built
    if not isinstance(arm, base.QueryHooks):
        assert name not in BUILTIN_ARMS, f"{name}: a built-in arm without a bare driver call"
        pytest.skip(f"{name} declares no bench hooks")
    assert arm.bare_call.does and arm.bare_call.beyond
    if isinstance(arm, base.IngestHooks):
        assert arm.raw_ingest().kind in ("jsonl", "hnsw", "tables")
    for q in smoke["queries"]:
        raw = arm.raw_query_call(q, K)()
        assert arm.raw_ids(raw, K) == arm.query(q, K).memory_ids, (name, q.query_id)
