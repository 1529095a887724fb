"""score_run_file, the by-class table and the report's stale-exposure table, by hand."""

import json
import re
from pathlib import Path

import polars as pl
import pytest

from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.report.html import figure_caption, render_report
from agentmem.report.tables import (
    BY_CLASS_COLUMNS,
    by_class,
    score_run_file,
    timed_note,
    write_by_class,
)

# m1 and m2 are superseded (by m5 and m6)
MEMORIES = {"m1": "m5", "m2": "m6", "m3": None, "m4": None, "m5": None, "m6": None}
QUERIES = {"q1": "lexical", "q2": "lexical", "q3": "currency", "q4": "currency"}
QRELS = {"q1": "m3", "q2": "m4", "q3": "m5", "q4": "m6"}
# arm A: q1 2 of 4 stale (0.5), q2 nothing returned, q3 0 of 1, q4 1 of 4 (0.25)
# arm B: nothing returned on lexical; q3 1 of 1 stale, q4 0 of 2
RUNS = {
    "A": {"q1": ["m1", "m3", "m2", "m4"], "q2": [], "q3": ["m5"], "q4": ["m2", "m6", "m3", "m4"]},
    "B": {"q1": [], "q2": [], "q3": ["m1"], "q4": ["m6", "m5"]},
}


def _write_corpus(d: Path) -> tuple[Path, Path, Path]:
    mem, qs, qr = d / "memories.parquet", d / "queries.parquet", d / "qrels.parquet"
    pl.DataFrame(
        {"memory_id": list(MEMORIES), "superseded_by": list(MEMORIES.values())},
        schema_overrides={"superseded_by": pl.String},
    ).write_parquet(mem)
    pl.DataFrame(
        {
            "query_id": list(QUERIES),
            "class": list(QUERIES.values()),
            "expected_count": [None] * len(QUERIES),
        },
        schema_overrides={"expected_count": pl.Int32},
    ).write_parquet(qs)
    pl.DataFrame({"query_id": list(QRELS), "memory_id": list(QRELS.values())}).write_parquet(qr)
    return mem, qs, qr


def _write_run(path: Path, ranked: dict[str, list[str]]) -> Path:
    rows = []
    for q, ids in ranked.items():
        if not ids:
            rows.append((q, None, None))
        rows += [(q, i, m) for i, m in enumerate(ids, start=1)]
    pl.DataFrame(
        {
            "query_id": [r[0] for r in rows],
            "rank": [r[1] for r in rows],
            "memory_id": [r[2] for r in rows],
            "count": [None] * len(rows),
            "latency_ms": [1.0] * len(rows),
        },
        schema_overrides={"rank": pl.Int32, "count": pl.Int64, "memory_id": pl.String},
    ).write_parquet(path)
    return path


@pytest.fixture
def scored(tmp_path: Path) -> dict[str, Path]:
    mem, qs, qr = _write_corpus(tmp_path)
    out = {}
    for arm, ranked in RUNS.items():
        run = _write_run(tmp_path / f"run-{arm}.parquet", ranked)
        out[arm] = tmp_path / f"metrics-{arm}.parquet"
        score_run_file(run, qs, qr, out[arm], k=10, memories=mem)
    return out


def test_score_run_file_reads_supersession_from_the_memories(scored):
    s = pl.read_parquet(scored["A"])
    stale = dict(zip(s["query_id"], s["stale_exposure"], strict=True))
    assert stale == {"q1": 0.5, "q2": None, "q3": 0.0, "q4": 0.25}


def test_score_run_file_cutoff_and_without_memories(tmp_path):
    mem, qs, qr = _write_corpus(tmp_path)
    run = _write_run(tmp_path / "run.parquet", RUNS["A"])
    s = score_run_file(run, qs, qr, tmp_path / "k2.parquet", k=2, memories=mem)
    # q1 top 2 = [m1, m3]: 1 of 2; q4 top 2 = [m2, m6]: 1 of 2
    assert dict(zip(s["query_id"], s["stale_exposure"], strict=True)) == {
        "q1": 0.5,
        "q2": None,
        "q3": 0.0,
        "q4": 0.5,
    }
    bare = score_run_file(run, qs, qr, tmp_path / "bare.parquet")
    assert bare["stale_exposure"].null_count() == len(QUERIES)


def test_by_class_stale_exposure_by_hand(scored):
    t = by_class(scored)
    assert t.columns == BY_CLASS_COLUMNS
    got = {(r["arm"], r["query_class"]): r["stale_exposure"] for r in t.iter_rows(named=True)}
    assert got[("A", "lexical")] == 0.5  # q2 returned nothing: left out, not counted as 0
    assert got[("A", "currency")] == pytest.approx(0.125)  # (0 + 0.25) / 2
    assert got[("A", "all")] == pytest.approx(0.25)  # (0.5 + 0 + 0.25) / 3
    assert got[("B", "lexical")] is None  # no lexical query returned anything
    assert got[("B", "currency")] == 0.5  # (1 + 0) / 2
    assert got[("B", "all")] == 0.5
    n = {(r["arm"], r["query_class"]): r["n_queries"] for r in t.iter_rows(named=True)}
    assert n[("A", "lexical")] == 2 and n[("B", "all")] == 4


def test_report_shows_stale_exposure_by_class(scored, tmp_path):
    csv, md = tmp_path / "by_class.csv", tmp_path / "by_class.md"
    write_by_class(scored, csv, md, latency_note=timed_note())
    assert "| precision_at_10 | stale_exposure | exact_count_rate |" in md.read_text()
    caps = tmp_path / "capabilities.md"
    caps.write_text("| arm | predicate |\n|---|---|\n| A | ✓ |\n")
    corpus_keys = ("memories", "facts", "sessions", "queries", "distractors", "superseded")
    doc = {
        "generated_utc": "2026-01-01T00:00:00Z",
        "main_size": "xs",
        "environment": {
            "python": "3.11",
            "platform": "linux",
            "cpus": 2,
            "packages": {"sqlite": "3"},
        },
        "corpus": dict.fromkeys((*corpus_keys, "tokens_per_memory"), 1),
        "by_class": pl.read_csv(csv).to_dicts(),  # as capture.json holds it
        "builds": [],
    }
    capture = tmp_path / "capture.json"
    capture.write_text(json.dumps(doc))
    render_report(capture, caps, tmp_path / "index.html")
    html = (tmp_path / "index.html").read_text()
    table = html.split("Stale exposure by query class", 1)[1].split("</table>", 1)[0]
    rows = {}
    for tr in re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", table, flags=re.S):
        rows[tr[0]] = re.findall(r"<td>(.*?)</td>", tr[1])
    classes = [*QUERY_CLASSES, "all"]
    want_a = dict.fromkeys(classes, "–") | {"lexical": "0.500", "currency": "0.125", "all": "0.250"}
    want_b = dict.fromkeys(classes, "–") | {"currency": "0.500", "all": "0.500"}
    assert rows == {"A": [want_a[c] for c in classes], "B": [want_b[c] for c in classes]}
    # the last section links the run's timeline, which the workflow draws after the page
    section = html.split('<h2 id="timeline">', 1)[1]
    assert section.startswith("12. Where the run's time went</h2>")
    assert '<img src="../bench/timeline.svg"' in section
    assert '<a href="#timeline">' in html


def test_by_class_fill_by_hand_and_the_markdown_marks_short_precision(tmp_path):
    """Six memories, no predicate: a query's slots are min(k, 6)."""
    mem, qs, qr = _write_corpus(tmp_path)
    metrics = {}
    for arm, ranked in RUNS.items():
        run = _write_run(tmp_path / f"run-{arm}.parquet", ranked)
        metrics[arm] = tmp_path / f"k1-{arm}.parquet"
        score_run_file(run, qs, qr, metrics[arm], k=1, memories=mem)
    at10 = score_run_file(
        tmp_path / "run-A.parquet", qs, qr, tmp_path / "k10.parquet", k=10, memories=mem
    )
    # k = 10: A returned 4, 0, 1 and 4 of the six memories
    assert at10["fill_at_10"].to_list() == pytest.approx([4 / 6, 0, 1 / 6, 4 / 6])
    t = write_by_class(
        metrics, tmp_path / "by_class.csv", tmp_path / "by_class.md", latency_note=timed_note()
    )
    assert t.columns == BY_CLASS_COLUMNS
    got = {
        (r["arm"], r["query_class"]): (r["fill_at_10"], r["short_at_10"])
        for r in t.iter_rows(named=True)
    }
    # k = 1: A fills q1, q3, q4 and returns nothing to q2; B answers only q3 and q4
    assert got[("A", "lexical")] == (0.5, 0.5)
    assert got[("A", "currency")] == (1.0, 0.0)
    assert got[("A", "all")] == (0.75, 0.25)
    assert got[("B", "lexical")] == (0.0, 1.0)
    assert got[("B", "all")] == (0.5, 0.5)
    md = (tmp_path / "by_class.md").read_text()
    assert "fill_at_10 | short_at_10 |" in md
    rows = {
        tuple(c.strip() for c in line.strip("|").split("|")[:2]): line
        for line in md.splitlines()
        if line.startswith("| A |") or line.startswith("| B |")
    }
    # precision of a short answer divides by fewer ids: marked; A's currency row is not
    assert "| 0.000 † |" in rows[("A", "lexical")]  # q1 top 1 = m1, not m3
    assert "†" not in rows[("A", "currency")]
    assert "†" in rows[("B", "all")]
    assert pl.read_csv(tmp_path / "by_class.csv")["precision_at_10"].dtype == pl.Float64


def test_figure_captions_are_the_workflow_report_captions():
    """One source: the HTML report reads the caption files Snakemake's report shows."""
    report_dir = Path(__file__).resolve().parents[1] / "workflow" / "report"
    captions = {p.stem: p for p in report_dir.glob("*.rst")}
    crash = figure_caption("crash", captions)
    assert crash.startswith("Crash trials: a child process writes records steadily and is")
    # external-<id> takes external.rst, its dataset placeholder filled
    ext = figure_caption("external-locomo-turns", captions)
    assert ext.startswith("External dataset locomo-turns: evidence recall@10 per arm")
    # rst literals become HTML code
    table = figure_caption("findings_table", captions)
    assert "(config <code>robustness</code>)" in table and "``" not in table
    assert figure_caption("no-such-figure", captions) == ""
    # every figure of the report has its caption file
    figures = {
        "anomaly",
        "budget",
        "capabilities",
        "conversation",
        "crash",
        "decay",
        "er_diagram",
        "external",
        "findings",
        "fleet",
        "latency",
        "lost_update",
        "ndcg_heatmap",
        "overall",
        "postfilter",
        "scaling",
        "storage",
        "validation",
    }
    assert figures <= set(captions)


def test_the_latency_note_says_the_configured_timing_rules():
    assert timed_note(warmup=1, repeats=3, min_time_ms=5.0, k=10) == (
        "latency is the median of up to 3 timed calls after 1 untimed, fewer once they add "
        "up to 5 ms (ms)"
    )
    assert timed_note(warmup=2, repeats=5, min_time_ms=0.0) == (
        "latency is the median of up to 5 timed calls after 2 untimed (ms)"
    )
