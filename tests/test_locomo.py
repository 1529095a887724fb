"""LoCoMo converter: a hand-made dirty file, the official recall formula, the real file.

The real file is read in place from ../shared/data/locomo/locomo10.json (CC BY-NC 4.0, never
copied into the repository); tests that need it skip with the reason when it is absent.
"""

from __future__ import annotations

import csv
import json
import random
import time

import polars as pl
import pytest
from support.corpora import embedding_cache, encoder_options
from support.paths import LOCOMO, REPO

from agentmem.corpus.io import load_corpus, load_qrels
from agentmem.external import prepare_dataset, score_dataset
from agentmem.external.locomo import (
    ANCHORS,
    CATEGORY_NAMES,
    LABEL_COLUMNS,
    LocomoFormatError,
    LocomoMissing,
    anchors,
    convert_locomo,
    load_locomo,
    normalise_label,
    parse_evidence,
    parse_session_datetime,
)
from agentmem.external.published import DRAGON, published, write_comparison_md
from agentmem.external.score import per_query_scores
from agentmem.tokens import count_tokens
from agentmem.types import MEMORY_SCHEMA

DIRTY = REPO / "tests" / "data" / "locomo_dirty.json"
UNITS = ("turns", "observations", "summaries")
needs_locomo = pytest.mark.skipif(
    not LOCOMO.is_file(),
    reason=f"LoCoMo file not at {LOCOMO} (a clone without ../shared); see "
    "agentmem.external.locomo.missing_message for where to get it",
)


@pytest.fixture(scope="module")
def dirty(tmp_path_factory):
    root = tmp_path_factory.mktemp("locomo_dirty")
    datasets = convert_locomo(DIRTY, root / "datasets")
    prepared = {u: root / "prepared" / u for u in datasets}
    manifests = {u: prepare_dataset(datasets[u], prepared[u]) for u in datasets}
    return datasets, prepared, manifests


def _conversion(d) -> dict:
    return json.loads((d / "conversion.json").read_text())


def _labels(d) -> list[dict[str, str]]:
    with open(d / "labels.csv", newline="") as fh:
        return list(csv.DictReader(fh))


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


def test_dirty_conversion_counts_and_label_report(dirty):
    datasets, _, _ = dirty
    assert list(datasets) == list(UNITS)
    c = _conversion(datasets["turns"])
    assert (c["conversations"], c["sessions"], c["memories"]) == (2, 4, 9)
    assert c["qa_total"] == 11
    assert c["qa_by_category"] == {
        "multi-hop": 2,
        "temporal": 2,
        "open-domain": 2,
        "single-hop": 4,
        "adversarial": 1,
    }
    assert (c["queries"], c["queries_skipped"]) == (9, 2)
    assert c["labels"] == {"raw": 12, "repaired": 4, "skipped": 3}
    assert [_conversion(datasets[u])["memories"] for u in UNITS] == [9, 8, 4]
    assert [_conversion(datasets[u])["qrels"] for u in UNITS] == [11, 14, 11]
    rep = [
        (r["query_id"], r["raw_label"], r["action"], r["repaired_to"])
        for r in _labels(datasets["turns"])
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
    reasons = {
        r["query_id"]: r["reason"] for r in _labels(datasets["turns"]) if r["action"] != "repaired"
    }
    assert reasons["dirty-a:Q4"] == "empty evidence"
    assert reasons["dirty-a:Q5"] == "no turn D9:9 in this conversation"
    assert reasons["dirty-a:Q9"] == "D1:3 repeats an earlier label"
    obs = [(r["memory_id"], r["raw_label"], r["action"]) for r in _labels(datasets["observations"])]
    assert obs[len(rep) :] == [
        ("dirty-a:O2:1", "D2:1, D1:2", "repaired"),
        ("dirty-a:O2:3", "D9:9", "skipped"),
        ("dirty-a:O3:1", "D3:01", "repaired"),
    ]
    assert list(_labels(datasets["turns"])[0]) == list(LABEL_COLUMNS)


def test_dirty_turns_memories(dirty):
    _, prepared, m = dirty
    d = prepared["turns"]
    mem = pl.read_parquet(d / "memories.parquet")
    assert dict(mem.schema) == MEMORY_SCHEMA
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
    assert mem["scope_id"].to_list() == ["dirty-b"] * 2 + ["dirty-a"] * 7
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
    assert corpus.sessions["session_id"].to_list() == [
        "dirty-b:S1",
        "dirty-a:S1",
        "dirty-a:S2",
        "dirty-a:S3",
    ]
    assert m["turns"]["counts"]["scopes"] == 2 and m["turns"]["unit"] == "turn"
    assert m["turns"]["issues"]["uncovered-evidence"] == 0


def test_dirty_observations_and_summaries_cover_turns(dirty):
    _, prepared, m = dirty
    ev = pl.read_parquet(prepared["observations"] / "evidence.parquet")
    cover: dict[str, list[str]] = {}
    for mid, e in ev.iter_rows():
        cover.setdefault(mid, []).append(e)
    a = "dirty-a:"
    assert cover == {
        f"{a}O1:1": [f"{a}D1:1"],
        f"{a}O1:2": [f"{a}D1:3", f"{a}D1:1"],  # a list of dia_ids
        f"{a}O1:3": [f"{a}D1:2"],
        f"{a}O2:1": [f"{a}D2:1", f"{a}D1:2"],  # "D2:1, D1:2" split
        f"{a}O2:2": [f"{a}D2:2"],
        f"{a}O3:1": [f"{a}D3:1"],  # "D3:01" repaired; O2:3 ("D9:9") covers nothing
        "dirty-b:O1:1": ["dirty-b:D1:2"],
    }
    obs = pl.read_parquet(prepared["observations"] / "memories.parquet")
    assert obs.height == 8 and set(obs["form"]) == {"observation"}
    assert set(obs["kind"]) == {"semantic"}
    o = obs.filter(pl.col("memory_id") == f"{a}O2:1").row(0, named=True)
    assert (o["body"], o["source"], o["session_id"], o["created_day"]) == (
        "Bob's violin teacher says he improves quickly.",
        "Bob",
        f"{a}S2",
        19,
    )
    s = pl.read_parquet(prepared["summaries"] / "evidence.parquet")
    assert s.filter(pl.col("memory_id") == f"{a}S2:summary")["evidence_id"].to_list() == [
        f"{a}D2:1",
        f"{a}D2:2",
    ]
    summ = pl.read_parquet(prepared["summaries"] / "memories.parquet")
    assert summ["memory_id"].to_list() == [
        "dirty-b:S1:summary",
        f"{a}S1:summary",
        f"{a}S2:summary",
        f"{a}S3:summary",
    ]
    assert m["summaries"]["counts"]["max_evidence_per_memory"] == 3


def test_dirty_queries_and_qrels_per_unit(dirty):
    _, prepared, m = dirty
    qs = [pl.read_parquet(prepared[u] / "queries.parquet") for u in UNITS]
    assert qs[0].equals(qs[1]) and qs[0].equals(qs[2])  # the same queries in every unit
    q = qs[0]
    assert q["query_id"].to_list() == [
        "dirty-a:Q0",
        "dirty-a:Q1",
        "dirty-a:Q2",
        "dirty-a:Q3",
        "dirty-a:Q5",
        "dirty-a:Q7",
        "dirty-a:Q8",
        "dirty-a:Q9",
        "dirty-b:Q0",
    ]
    assert q["class"].to_list()[:6] == [
        "single-hop",
        "multi-hop",
        "temporal",
        "single-hop",
        "multi-hop",
        "adversarial",
    ]
    assert q["scope_id"].to_list() == ["dirty-a"] * 8 + ["dirty-b"]
    assert m["turns"]["categories"] == list(CATEGORY_NAMES.values())

    def pairs(unit):
        qr = load_qrels(prepared[unit])
        return sorted(zip(qr["query_id"], qr["memory_id"], strict=True))

    a = "dirty-a:"
    assert pairs("turns") == sorted(
        [
            (f"{a}Q0", f"{a}D1:1"),
            (f"{a}Q1", f"{a}D1:2"),
            (f"{a}Q1", f"{a}D2:1"),
            (f"{a}Q2", f"{a}D2:2"),
            (f"{a}Q3", f"{a}D3:1"),
            (f"{a}Q5", f"{a}D1:1"),
            (f"{a}Q7", f"{a}D1:2"),
            (f"{a}Q8", f"{a}D2:2"),
            (f"{a}Q8", f"{a}D3:1"),
            (f"{a}Q9", f"{a}D1:3"),
            ("dirty-b:Q0", "dirty-b:D1:2"),
        ]
    )
    obs = pairs("observations")
    assert [p for p in obs if p[0] == f"{a}Q0"] == [(f"{a}Q0", f"{a}O1:1"), (f"{a}Q0", f"{a}O1:2")]
    assert [p for p in obs if p[0] == f"{a}Q1"] == [(f"{a}Q1", f"{a}O1:3"), (f"{a}Q1", f"{a}O2:1")]
    assert len(obs) == 14
    summ = pairs("summaries")
    assert [p for p in summ if p[0] == f"{a}Q8"] == [
        (f"{a}Q8", f"{a}S2:summary"),
        (f"{a}Q8", f"{a}S3:summary"),
    ]
    assert len(summ) == 11
    qe = pl.read_parquet(prepared["summaries"] / "query_evidence.parquet")
    assert qe.filter(pl.col("query_id") == f"{a}Q1")["evidence_id"].to_list() == [
        f"{a}D1:2",
        f"{a}D2:1",
    ]


def test_limit_units_and_errors(tmp_path):
    out = convert_locomo(DIRTY, tmp_path / "one", units=["summaries"], limit_conversations=1)
    assert list(out) == ["summaries"] and not (tmp_path / "one" / "turns").exists()
    c = _conversion(out["summaries"])
    assert (c["conversations"], c["memories"], c["earliest_date"]) == (1, 3, "2023-05-08")
    with pytest.raises(ValueError, match="unknown LoCoMo unit"):
        convert_locomo(DIRTY, tmp_path / "x", units=["dialogs"])


def test_missing_file_says_where_to_get_it_and_put_it(tmp_path):
    where = tmp_path / "data" / "external" / "locomo10.json"
    with pytest.raises(LocomoMissing) as exc:
        convert_locomo(where, tmp_path / "out")
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
        convert_locomo(p, tmp_path / "out")
    conv = json.loads(DIRTY.read_text())
    conv[1]["observation"] = {"session_7_observation": {"Dan": [["x", "D1:1"]]}}
    p.write_text(json.dumps(conv))
    with pytest.raises(LocomoFormatError, match="session_7_observation belongs to no session"):
        convert_locomo(p, tmp_path / "out")


# ------------------------------------------------------------------ the official formula


def official_recall(evidence: list[str], context_ids: list[str]) -> float:
    """recall_acc of LoCoMo's task_eval/evaluation.py (eval_question_answering), verbatim
    in meaning: session summaries are retrieved as "S<n>" and an evidence turn "D<n>:<t>"
    counts when session n is among them; otherwise a label counts when it is retrieved."""
    if context_ids and context_ids[0].startswith("S"):
        sessions = [e[1:] for e in context_ids]
        return sum(ev.split(":")[0][1:] in sessions for ev in evidence) / len(evidence)
    return sum(ev in context_ids for ev in evidence) / len(evidence)


def official_context_ids(dia_ids: list) -> list[str]:
    """The retrieved ids as task_eval/gpt_utils.py get_rag_context collects them: a
    "D1:3, D1:5" string is split on commas, a list is flattened."""
    out: list[str] = []
    for cid in dia_ids:
        if isinstance(cid, str) and "," in cid:
            cid = [s.strip() for s in cid.split(",")]
        out.extend(cid if isinstance(cid, list) else [cid])
    return out


def _official_ids(data: list[dict]) -> dict[str, dict[str, object]]:
    """unit -> our memory id -> the context id the official code retrieves for it."""
    ids: dict[str, dict[str, object]] = {"turns": {}, "observations": {}, "summaries": {}}
    for conv in data:
        sid = conv["sample_id"]
        for key, turns in conv["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for t in turns:
                    ids["turns"][f"{sid}:{t['dia_id']}"] = t["dia_id"]
        for key, by_speaker in conv["observation"].items():
            n = int(key.split("_")[1])
            i = 0
            for items in by_speaker.values():
                for _, dia in items:
                    i += 1
                    ids["observations"][f"{sid}:O{n}:{i}"] = dia
        for key in conv["session_summary"]:
            n = int(key.split("_")[1])
            ids["summaries"][f"{sid}:S{n}:summary"] = f"S{n}"
    return ids


def _hand_run(prepared) -> dict[str, list[str]]:
    """Per query, 12 memories of its scope: for every other query the memory covering its
    first evidence turn at rank 2 (a hit), the rest drawn with the query's own seed."""
    mem = pl.read_parquet(prepared / "memories.parquet", columns=["memory_id", "scope_id"])
    by_scope: dict[str, list[str]] = {}
    for m, s in mem.iter_rows():
        by_scope.setdefault(s, []).append(m)
    cover = pl.read_parquet(prepared / "evidence.parquet")
    covering: dict[str, str] = {}
    for m, e in cover.iter_rows():
        covering.setdefault(e, m)
    qe = pl.read_parquet(prepared / "query_evidence.parquet")
    first = dict(qe.group_by("query_id", maintain_order=True).first().iter_rows())
    q = pl.read_parquet(prepared / "queries.parquet", columns=["query_id", "scope_id"])
    run = {}
    for i, (qid, scope) in enumerate(q.iter_rows()):
        pool = by_scope[scope]
        ranked = random.Random(i).sample(pool, min(12, len(pool)))
        hit = covering.get(first[qid])
        if i % 2 == 0 and hit is not None:
            ranked = [m for m in ranked if m != hit]
            ranked.insert(1, hit)
        run[qid] = ranked[:12]
    return run


def _runs_df(run: dict[str, list[str]]) -> pl.DataFrame:
    rows = [(q, r, m) for q, ids in run.items() for r, m in enumerate(ids, start=1)]
    return pl.DataFrame(
        rows, schema={"query_id": pl.String, "rank": pl.Int32, "memory_id": pl.String}, orient="row"
    )


def _check_official(data, prepared, min_compared: int) -> int:
    """Our evidence recall@5/@10 equals the official recall_acc on each question whose
    evidence labels are clean: canonical, unrepeated, each naming a turn of the
    conversation (the official code counts the raw labels, repeats, typos and labels of
    no turn included); returns the number of questions compared in the last unit."""
    official = _official_ids(data)
    # observation labels the official code reads unrepaired ("D3:01" never equals the
    # evidence label "D3:1"): a question needing such a turn is not compared
    unrepaired: dict[str, set[str]] = {}
    for m, dia in official["observations"].items():
        for tok in official_context_ids([dia]):
            canon, why = normalise_label(tok)
            if canon is not None and why:
                unrepaired.setdefault(m, set()).add(canon)
    raw = {f"{c['sample_id']}:Q{i}": qa["evidence"] for c in data for i, qa in enumerate(c["qa"])}
    turns: dict[str, set[str]] = {}
    for m, dia in official["turns"].items():
        turns.setdefault(m.rsplit(":", 2)[0], set()).add(str(dia))
    compared = 0
    for unit in UNITS:
        run = _hand_run(prepared[unit])
        pq = per_query_scores(prepared[unit], _runs_df(run)).filter(pl.col("level") == "evidence")
        n = 0
        for r in pq.iter_rows(named=True):
            ev = raw[r["query_id"]]
            if parse_evidence(ev, turns[r["query_id"].rsplit(":", 1)[0]])[1]:
                continue
            if any(unrepaired.get(m, set()) & set(ev) for m in run[r["query_id"]][:10]):
                continue
            for k in (5, 10):
                ctx = official_context_ids([official[unit][m] for m in run[r["query_id"]][:k]])
                assert r[f"recall_at_{k}"] == pytest.approx(official_recall(ev, ctx)), (
                    unit,
                    r["query_id"],
                    k,
                )
            n += 1
        assert n >= min_compared
        compared = n
    return compared


def test_dirty_evidence_recall_is_the_official_formula(dirty):
    _, prepared, _ = dirty
    assert _check_official(load_locomo(DIRTY), prepared, min_compared=3) == 3


# ------------------------------------------------------------------ published figures


def test_published_figures_are_the_quoted_values():
    assert DRAGON["turns"] == {
        ("all", 5): 0.567,
        ("all", 10): 0.662,
        ("all", 25): 0.767,
        ("all", 50): 0.827,
        ("multi-hop", 10): 0.466,
        ("open-domain", 10): 0.408,
    }
    assert DRAGON["observations"] == {("all", 5): 0.562, ("all", 10): 0.613, ("all", 50): 0.712}
    assert DRAGON["summaries"] == {("all", 5): 0.721, ("all", 10): 0.847}
    assert anchors().select("hit_at_1", "recall_at_5", "ndcg_at_5").rows() == [
        (0.640, 0.833, 0.746),
        (0.752, 0.894, 0.829),
    ]
    assert anchors()["n_questions"].to_list() == [1978, 1978] and len(ANCHORS) == 2
    p = published("summaries")
    assert p.select("metric", "value").rows() == [("recall_at_5", 0.721), ("recall_at_10", 0.847)]
    assert "as quoted by secondary sources" in p["source"][0]
    assert published().height == 6 + 3 + 2 + 6 and published("mine").height == 0


def test_comparison_markdown(dirty, tmp_path):
    _, prepared, _ = dirty
    run = tmp_path / "run.parquet"
    _runs_df(_hand_run(prepared["turns"])).write_parquet(run)
    scores = tmp_path / "scores.csv"
    score_dataset(
        prepared["turns"], {("scoped", "hand"): run}, scores, tmp_path / "ci.csv", n_boot=50
    )
    text = write_comparison_md(scores, tmp_path / "vs.md", "turns")
    assert (tmp_path / "vs.md").read_text() == text
    assert (
        "| *DRAGON (LoCoMo paper)* | within one conversation | — | "
        "0.567 | 0.662 | 0.767 | 0.827 | 0.466 | 0.408 |" in text
    )
    assert "| *BM25 (published)* | not stated | 1,978 | 0.640 | 0.833 | 0.746 |" in text
    assert "| hand | scoped | 9 |" in text
    obs = write_comparison_md(scores, tmp_path / "obs.md", "observations")
    assert "0.562 | 0.613 | — | 0.712 | — | — |" in obs and "session anchors" not in obs
    own = write_comparison_md(scores, tmp_path / "own.md", None)
    assert "No published figures" in own and "| hand | scoped | evidence | 9 |" in own
    with pytest.raises(ValueError, match="no published figures for unit 'dialogs'"):
        write_comparison_md(scores, tmp_path / "x.md", "dialogs")


# ------------------------------------------------------------------ the real file


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo file not at {LOCOMO} (a clone without ../shared)")
    root = tmp_path_factory.mktemp("locomo_real")
    datasets = convert_locomo(LOCOMO, root / "datasets")
    count_tokens(["warm the tokenizer up"])  # a one-off load of a few seconds
    prepared, manifests, seconds = {}, {}, {}
    for u, d in datasets.items():
        prepared[u] = root / "prepared" / u
        t0 = time.perf_counter()
        manifests[u] = prepare_dataset(d, prepared[u])
        seconds[u] = time.perf_counter() - t0
    return datasets, prepared, manifests, seconds


@needs_locomo
def test_real_counts_per_unit(real):
    datasets, _, m, _ = real
    assert [m[u]["counts"]["memories"] for u in UNITS] == [5882, 2541, 272]
    for u in UNITS:
        c = m[u]["counts"]
        assert (c["scopes"], c["sessions"], c["memories_without_scope"]) == (10, 272, 0)
        assert c["queries"] == 1982 and c["queries_skipped"] == 0
        # 1,986 questions less the 4 with empty evidence (all open-domain)
        assert c["queries_by_category"] == {
            "multi-hop": 282,
            "temporal": 321,
            "open-domain": 92,
            "single-hop": 841,
            "adversarial": 446,
        }
        assert c["query_evidence"] == 2820
        assert m[u]["issues"]["empty-scope"] == 0 and m[u]["issues"]["unknown-memory"] == 0
    conv = _conversion(datasets["turns"])
    assert conv["qa_total"] == 1986 and conv["queries_skipped"] == 4
    assert conv["labels"] == {"raw": 2815, "repaired": 6, "skipped": 4}
    assert conv["earliest_date"] == "2022-01-21"
    assert (m["turns"]["counts"]["qrels"], m["summaries"]["counts"]["qrels"]) == (2820, 2558)
    # observations: 306 questions whose evidence turns no observation covers (scored at
    # evidence level only, as recall 0, as the official code scores them)
    assert m["observations"]["issues"]["no-qrels"] == 306
    skipped = [r for r in _labels(datasets["turns"]) if r["action"] == "query-skipped"]
    assert len(skipped) == 4
    assert {(r["reason"], r["category"]) for r in skipped} == {("empty evidence", "3")}
    by = {(r["query_id"], r["raw_label"]): r for r in _labels(datasets["turns"])}
    assert by[("conv-43:Q18", "D:11:26")]["repaired_to"] == "D11:26"
    assert by[("conv-50:Q69", "D30:05")]["repaired_to"] == "D30:5"
    assert by[("conv-26:Q37", "D8:6; D9:17")]["repaired_to"] == "D8:6 D9:17"
    assert by[("conv-42:Q88", "D")]["action"] == "skipped"


@needs_locomo
def test_real_every_query_scope_has_memories(real):
    _, prepared, _, _ = real
    for u in UNITS:
        scopes = set(pl.read_parquet(prepared[u] / "memories.parquet")["scope_id"])
        q = pl.read_parquet(prepared[u] / "queries.parquet")
        assert set(q["scope_id"]) <= scopes and len(scopes) == 10
        # every query id names its conversation, which is its scope
        assert all(
            qid.rsplit(":", 1)[0] == s for qid, s in q.select("query_id", "scope_id").iter_rows()
        )


@needs_locomo
def test_real_observation_evidence_splits_comma_lists(real):
    datasets, prepared, _, _ = real
    rows = {
        r["_id"]: r for r in map(json.loads, (datasets["observations"] / "corpus.jsonl").open())
    }
    # "D26:14, D26:34, D26:42" in the file
    assert rows["conv-44:O26:9"]["evidence"] == [
        "conv-44:D26:14",
        "conv-44:D26:34",
        "conv-44:D26:42",
    ]
    ev = pl.read_parquet(prepared["observations"] / "evidence.parquet")
    assert ev.height == 2561  # 2,541 observations, 10 lists and 5 comma strings of 2-4 turns
    assert ev["evidence_id"].str.contains(",").sum() == 0
    repaired = [r for r in _labels(datasets["observations"]) if r["memory_id"]]
    assert len(repaired) == 5 and all("labels in one string" in r["reason"] for r in repaired)


@needs_locomo
def test_real_evidence_recall_is_the_official_formula(real):
    _, prepared, _, _ = real
    assert _check_official(load_locomo(LOCOMO), prepared, min_compared=1900) >= 1900


@needs_locomo
def test_real_prepare_is_fast(real):
    _, _, _, seconds = real
    assert seconds["turns"] < 5.0, seconds  # 5,882 turns, tokenizer loaded


@needs_locomo
def test_real_end_to_end_sqlite_fts(tmp_path):
    """The first conversation's turns: embeddings, the real runner (k = 50), scoring."""
    from agentmem.embeddings import embed_corpus
    from agentmem.runner import run_arm

    ds = convert_locomo(LOCOMO, tmp_path / "ds", units=["turns"], limit_conversations=1)
    c = tmp_path / "corpus"
    m = prepare_dataset(ds["turns"], c)
    assert (m["counts"]["memories"], m["counts"]["sessions"], m["counts"]["queries"]) == (
        419,
        19,
        197,
    )
    emb = tmp_path / "emb.parquet"
    embed_corpus(c, emb, embedding_cache(), progress=False, **encoder_options())
    runs = tmp_path / "runs" / "sqlite-fts.parquet"
    run_arm(
        "sqlite-fts", None, c, emb, tmp_path / "store", runs, tmp_path / "build.json",
        tmp_path / "plans.json", k=50, warmup=0, repeats=1, progress=False,
    )  # fmt: skip
    assert pl.read_parquet(runs)["rank"].max() == 50
    t = score_dataset(c, {("scoped", "sqlite-fts"): runs}, tmp_path / "s.csv", tmp_path / "ci.csv")
    assert t.height == 3 * 6
    row = {r["level"]: r for r in t.filter(pl.col("category") == "all").iter_rows(named=True)}
    ev = row["evidence"]
    assert ev["n_queries"] == 197
    assert ev["recall_at_5"] <= ev["recall_at_10"] <= ev["recall_at_25"] <= ev["recall_at_50"]
    # BM25 over one conversation's 419 turns finds half the evidence in the top 10
    assert ev["recall_at_10"] > 0.4
    # turns: each memory covers itself, so evidence and memory level agree
    assert ev["ndcg_at_10"] == pytest.approx(row["memory"]["ndcg_at_10"])
    assert row["group"]["hit_at_1"] >= row["memory"]["hit_at_1"]


@needs_locomo
def test_real_summaries_scope_holds_fewer_than_k_so_a_whole_scope_fills(real):
    """A conversation has 19-32 session summaries: scoped, an answer of the whole scope is
    full at k = 50 (nothing more to return); unscoped, the same answer is short."""
    _, prepared, _, _ = real
    d = prepared["summaries"]
    mem = pl.read_parquet(d / "memories.parquet", columns=["memory_id", "scope_id"])
    by_scope: dict[str, list[str]] = {}
    for m, s in mem.iter_rows():
        by_scope.setdefault(s, []).append(m)
    assert max(map(len, by_scope.values())) < 50
    q = pl.read_parquet(d / "queries.parquet", columns=["query_id", "scope_id"])
    runs = _runs_df({qid: by_scope[s] for qid, s in q.iter_rows()})
    scoped = per_query_scores(d, runs, setting="scoped", arm="whole-scope")
    assert scoped["fill_at_50"].min() == 1.0 and scoped["short_at_50"].max() == 0.0
    unscoped = per_query_scores(d, runs, setting="unscoped", arm="whole-scope")
    assert unscoped["short_at_50"].min() == 1.0
    size = {qid: len(by_scope[s]) for qid, s in q.iter_rows()}
    for r in unscoped.filter(pl.col("level") == "memory").iter_rows(named=True):
        assert r["fill_at_50"] == size[r["query_id"]] / 50
