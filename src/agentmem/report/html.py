"""``results/report/index.html``: a self-contained page of the study's tables.

Built from ``capture.json`` (and the capability grid) only, with a Jinja2 template; no
external assets, so the file can be mailed or opened offline. nDCG cells are shaded
(white → green) so the arm × class grid reads as a heatmap.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jinja2
import polars as pl

from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.io import write_text

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>agentmem report</title>
<style>
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}
caption{text-align:left;font-weight:600;padding:.3em 0}
.note{color:#555;font-size:.9em}
code{background:#f4f4f4;padding:0 .2em}
</style></head><body>
<h1>agentmem: agent memory as a database problem</h1>
<p class="note">Generated {{ generated }} · main corpus size <code>{{ main_size }}</code> ·
Python {{ env.python }}, SQLite {{ env.packages.sqlite }}, {{ env.cpus }} CPUs.</p>

<h2>1. The corpus</h2>
<table><caption>Corpus at size {{ main_size }} (REFERENCE: 8,282 memories, 333 sessions,
313 queries, 1,218 distractors, 844 superseded)</caption>
<tr>{% for k in corpus_keys %}<th>{{ k }}</th>{% endfor %}</tr>
<tr>{% for k in corpus_keys %}<td>{{ corpus[k] }}</td>{% endfor %}</tr></table>
<table><caption>Queries by class</caption>
<tr>{% for c, n in corpus.queries_by_class.items() %}<th>{{ c }}</th>{% endfor %}</tr>
<tr>{% for c, n in corpus.queries_by_class.items() %}<td>{{ n }}</td>{% endfor %}</tr></table>

<h2>2. Retrieval quality and latency per arm</h2>
<table><caption>Overall (k = 10; latency: median of 3 timed runs after one warm-up)</caption>
<tr><th>arm</th><th>nDCG@10</th><th>recall@10</th><th>MRR</th><th>precision@10</th>
<th>exact counts</th><th>p50 ms</th><th>p95 ms</th><th>bytes/memory</th></tr>
{% for r in overall %}<tr><td>{{ r.arm }}</td><td>{{ f(r.ndcg_at_10) }}</td>
<td>{{ f(r.recall_at_10) }}</td><td>{{ f(r.mrr) }}</td><td>{{ f(r.precision_at_10) }}</td>
<td>{{ f(r.exact_count_rate) }}</td><td>{{ f(r.p50_ms, 2) }}</td><td>{{ f(r.p95_ms, 2) }}</td>
<td>{{ bpm.get(r.arm, '–') }}</td></tr>
{% endfor %}</table>

<table><caption>nDCG@10 by query class (shaded: darker = better)</caption>
<tr><th>arm</th>{% for c in classes %}<th>{{ c }}</th>{% endfor %}</tr>
{% for arm, row in grid.items() %}<tr><td>{{ arm }}</td>{% for c in classes %}
<td style="background:{{ shade(row.get(c)) }}">{{ f(row.get(c)) }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% if "ndcg_heatmap" in figs %}<figure><img src="{{ figs.ndcg_heatmap.src }}" alt="nDCG heatmap"
 style="max-width:100%"><figcaption class="note">{{ figs.ndcg_heatmap.caption }}</figcaption>
</figure>{% endif %}

<h2>3. Storage</h2>
<table><caption>Bytes on disk from the engine's own accounting</caption>
<tr><th>arm</th><th>bytes</th><th>bytes/memory</th><th>source</th>
<th>ingest ms</th><th>index ms</th></tr>
{% for b in builds %}<tr><td>{{ b.arm }}</td><td>{{ "{:,}".format(b.storage_bytes) }}</td>
<td>{{ b.bytes_per_memory }}</td><td>{{ b.storage_source }}</td><td>{{ f(b.ingest_ms, 1) }}</td>
<td>{{ f(b.index_ms, 1) }}</td></tr>{% endfor %}</table>

<h2>4. What each architecture can express</h2>
{% if "er_diagram" in figs %}<figure><img src="{{ figs.er_diagram.src }}" alt="ER diagram"
 style="max-width:100%"><figcaption class="note">{{ figs.er_diagram.caption }}</figcaption>
</figure>{% endif %}
<table><caption>Generated from each arm's declared capabilities</caption>
<tr>{% for h in capabilities[0] %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in capabilities[1:] %}<tr>{% for v in row %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>

<h2>5. Why: corpus validation and sweeps</h2>
{% for name in sweep_figs %}{% if name in figs %}
<figure><img src="{{ figs[name].src }}" alt="{{ name }}" style="max-width:100%">
<figcaption class="note">{{ figs[name].caption }}</figcaption></figure>{% endif %}{% endfor %}

<h2>6. Integrity: crashes, concurrent writers, changing facts</h2>
{% for name in ["crash", "lost_update", "anomaly"] %}{% if name in figs %}
<figure><img src="{{ figs[name].src }}" alt="{{ name }}" style="max-width:100%">
<figcaption class="note">{{ figs[name].caption }}</figcaption></figure>{% endif %}{% endfor %}

{% for name, rows in trials.items() %}
<h3>{{ name.replace('_', ' ') }}</h3>
<table><caption>{{ name }} ({{ rows|length }} rows)</caption>
{% if rows %}<tr>{% for k in rows[0].keys() %}<th>{{ k }}</th>{% endfor %}</tr>{% endif %}
{% for r in rows %}<tr>{% for v in r.values() %}<td>{{ f(v) }}</td>{% endfor %}</tr>{% endfor %}
</table>{% endfor %}
</body></html>
"""


def _f(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _shade(v: float | None) -> str:
    if v is None:
        return "#fff"
    v = max(0.0, min(1.0, float(v)))
    g = int(255 - 120 * v)
    rb = int(255 - 200 * v)
    return f"rgb({rb},{g + 0},{rb})" if v else "#fff"


def _markdown_rows(text: str) -> list[list[str]]:
    """Cells of the first Markdown table in ``text`` (header row first, separator dropped)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows or [["(no capability table)"]]


def _summarise_trials(trials: dict[str, list[dict]]) -> dict[str, list[dict]]:
    out = {}
    for name, rows in trials.items():
        if name == "crash" and rows:
            df = pl.DataFrame(rows)
            agg = df.group_by("family", maintain_order=True).agg(
                trials=pl.len(),
                unreadable=(~pl.col("readable").cast(pl.Boolean)).sum(),
                integrity_failed=(~pl.col("integrity_ok").cast(pl.Boolean)).sum(),
                committed_missing=pl.col("missing_committed").sum(),
                trials_losing_committed=(pl.col("missing_committed") > 0).sum(),
            )
            out["crash (summary per family)"] = agg.to_dicts()
        else:
            out[name] = rows
    return out


CAPTIONS = {
    "ndcg_heatmap": "nDCG@10 per arm and query class (k = 10). Full-text arms win where the "
    "question carries an identifier; dense arms win on paraphrases; only arms that apply the "
    "predicate in the engine answer provenance and aggregate questions.",
    "crash": "SIGKILL during sustained writes: trials whose store was unreadable, failed its "
    "integrity check, or lost records the writer had reported committed.",
    "lost_update": "Concurrent increments of one record: share of updates lost, with writers "
    "as threads and as processes.",
    "anomaly": "Update anomaly: restatements of a fact reached by a top-10 repair search, and "
    "the share left stale.",
    "postfilter": "Post-filter overfetch sweep: fill rate and recall@10 of file-vec-meta "
    "against the overfetch factor, with the in-engine filtered HNSW arms as reference lines.",
    "budget": "Token budget: quality against the o200k tokens the returned memories cost.",
    "scaling": "Scaling: p50 latency and nDCG@10 against corpus size, one line per arm.",
    "er_diagram": "The relational schema (agentmem.schema); the same declaration creates the "
    "SQLite and PostgreSQL tables.",
    "locomo": "LoCoMo, real conversations: session-level R@5 and Hit@1 per arm beside the "
    "published BM25 and fusion anchors; turn-level nDCG@10 per question category.",
    "validation": "Corpus validation: mean query-relevant cosine per class against the "
    "random-pair cosine; identifier overlap per class.",
}
SECTION_FIGURES = {"sweeps": ("validation", "postfilter", "scaling", "budget", "locomo")}


def _data_uri(path: str | Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"data:image/svg+xml;base64,{data}"


def render_report(
    capture: str | Path,
    capabilities: str | Path,
    out: str | Path,
    figures: list[str | Path] | None = None,
) -> None:
    """Render ``index.html`` from ``capture.json``, ``capabilities.md`` and figure SVGs.

    Figures are embedded as ``data:`` URIs, so the page is one self-contained file.
    """
    figs = {
        Path(f).stem: {"src": _data_uri(f), "caption": CAPTIONS.get(Path(f).stem, "")}
        for f in (figures or [])
    }
    doc = json.loads(Path(capture).read_text())
    t = pl.DataFrame(doc["by_class"])
    overall = t.filter(pl.col("query_class") == "all").to_dicts()
    grid: dict[str, dict[str, float]] = {}
    for r in t.iter_rows(named=True):
        grid.setdefault(r["arm"], {})[r["query_class"]] = r["ndcg_at_10"]
    bpm = {b["arm"]: b["bytes_per_memory"] for b in doc["builds"]}
    corpus_keys = [
        "memories",
        "facts",
        "sessions",
        "queries",
        "distractors",
        "superseded",
        "tokens_per_memory",
    ]
    trials = _summarise_trials(doc["trials"])
    if doc.get("fill_rate"):
        trials["filtered queries: result slots filled"] = doc["fill_rate"]
    if doc.get("hnsw_recall"):
        h = doc["hnsw_recall"]
        trials["hnswlib recall@k vs exact search"] = [
            {"ef_search": ef, "recall": r, "k": h["k"], "memories": h["memories"]}
            for ef, r in h["by_ef"].items()
        ]
    if doc.get("restatements"):
        trials["restatements per fact (update anomaly)"] = [doc["restatements"]]
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.from_string(TEMPLATE).render(
        generated=doc["generated_utc"],
        main_size=doc["main_size"],
        env=doc["environment"],
        corpus=doc["corpus"],
        corpus_keys=corpus_keys,
        overall=overall,
        grid=grid,
        classes=[*QUERY_CLASSES, "all"],
        builds=doc["builds"],
        bpm=bpm,
        capabilities=_markdown_rows(Path(capabilities).read_text()),
        trials=trials,
        f=_f,
        shade=_shade,
        figs=figs,
        sweep_figs=SECTION_FIGURES["sweeps"],
    )
    write_text(out, html)
