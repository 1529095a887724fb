"""``results/report/index.html``: one self-contained page, in the order of the study's argument.

Built only from result files (``capture.json``, the capability grid, ``vs_reference.csv``,
bootstrap intervals and the figure SVGs) with a Jinja2 template. Figures are embedded as
``data:`` URIs, so the page has no external assets and can be mailed or opened offline.

Sections: 1 corpus and its validation · 2 retrieval quality and latency · 3 storage ·
4 what each architecture can express · 5 why (post-filter, scaling, token budget) ·
6 integrity trials · 7 external datasets (LoCoMo's conversations, your own) · 8 seed
experiments · 9 the published study beside ours · appendix tables.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import polars as pl
from markupsafe import Markup

from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.io import write_text
from agentmem.report.external_tables import external_tables
from agentmem.report.headline import as_shipped, sensitivity
from agentmem.sweeps.pareto.report import pareto_view

#: (anchor, title, intro, figure names, appendix table keys) in the order of the argument.
SECTIONS: list[tuple[str, str, str, tuple[str, ...]]] = [
    (
        "corpus",
        "1. One corpus with known ground truth",
        "Facts rendered into memories with identifier-bearing and paraphrase forms, distractors "
        "and corrections; eight query classes with definitional relevance. Validation: lexical "
        "questions sit at the random-pair cosine, semantic ones far above it.",
        ("validation",),
    ),
    (
        "retrieval",
        "2. Retrieval quality and latency per arm",
        "Full-text arms win where the question carries an identifier, dense arms on paraphrases; "
        "only arms that apply predicates in the engine answer provenance and aggregate questions.",
        ("ndcg_heatmap", "overall", "latency"),
    ),
    ("storage", "3. Storage", "Bytes per memory from each engine's own accounting.", ("storage",)),
    (
        "capabilities",
        "4. What each architecture can express",
        "The capability grid is generated from each arm's declared capabilities; the relational "
        "schema is one declaration that also creates the tables.",
        ("capabilities", "er_diagram"),
    ),
    (
        "sweeps",
        "5. Why: filtered ANN, scale and token budgets",
        "Post-filtering underfills its k slots unless it overfetches; latency and quality across "
        "corpus sizes; what each answer costs in tokens.",
        ("postfilter", "scaling", "budget"),
    ),
    (
        "integrity",
        "6. Integrity: crashes, concurrent writers, changing facts",
        "Real processes killed with SIGKILL; writers as threads and as processes; a fleet of "
        "agent processes reading and writing one store at once (N above the core count "
        "measures contention); a fact restated many times and then corrected.",
        ("crash", "lost_update", "fleet", "anomaly"),
    ),
    (
        "external",
        "7. External datasets: real conversations (LoCoMo) and your own",
        "Every arm on each configured external dataset, scored against its evidence units "
        "(LoCoMo: the dialog turns that hold the answer; proportional evidence recall at k, "
        "as LoCoMo's authors score it), per question category. Scoped: each question "
        "searches only its own conversation's (or user's) memories; unscoped: every memory.",
        (),
    ),
    (
        "seeds",
        "8. The seed systems' claims",
        "Three-tier memory over long conversations; graph memory forgetting over a year.",
        ("conversation", "decay"),
    ),
    (
        "robustness",
        "9. Do the findings survive other seeds and corpus designs?",
        "The study's twelve headline findings, and the recommended design's claim (13), "
        "computed on the headline corpus, on further "
        "corpus seeds and on design variants of the corpus (one generator choice changed "
        "each), with a verdict per corpus: holds, weakens or flips by the stated rule "
        "(docs/ROBUSTNESS.md).",
        ("findings",),
    ),
]

#: the page's Jinja2 template (package data beside this module)
TEMPLATE_FILE = "templates/report.html.j2"

#: appendix tables shown under each section, by section anchor
SECTION_TABLES = {
    "corpus": ("validation", "restatements"),
    "sweeps": ("fill_rate", "hnsw_recall", "postfilter", "scaling_exponents"),
    "integrity": ("crash_summary", "lost_update", "fleet_summary", "anomaly"),
    "seeds": ("conversation_summary", "conversation_tiers", "decay"),
}


def _f(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != v:  # NaN
            return "–"
        return f"{v:.{digits}f}"
    return str(v)


def _shade(v: float | None) -> str:
    if v is None:
        return "#fff"
    v = max(0.0, min(1.0, float(v)))
    return f"rgb({int(255 - 200 * v)},{int(255 - 120 * v)},{int(255 - 200 * v)})"


def _verdict_class(v: str | None) -> str:
    v = (v or "").lower()
    if v.startswith("reproduced") or v == "same setting":
        return "ok"
    if v.startswith("differs"):
        return "bad"
    return "na"


def _markdown_rows(text: str) -> list[list[str]]:
    """Cells of the first Markdown table in ``text`` (header row first, separator dropped)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows or [["(no capability table)"]]


def _crash_summary(rows: list[dict]) -> list[dict]:
    if not rows:
        return []
    return (
        pl.DataFrame(rows)
        .group_by("family", maintain_order=True)
        .agg(
            trials=pl.len(),
            unreadable=(~pl.col("readable").cast(pl.Boolean)).sum(),
            integrity_failed=(~pl.col("integrity_ok").cast(pl.Boolean)).sum(),
            trials_losing_committed=(pl.col("missing_committed") > 0).sum(),
            committed_missing=pl.col("missing_committed").sum(),
        )
        .to_dicts()
    )


#: columns of the report's fleet table (results/trials/fleet.csv has more)
FLEET_SUMMARY = (
    "arm",
    "variant",
    "processes",
    "ops_per_s",
    "recall_p99_ms",
    "remember_p99_ms",
    "acknowledged",
    "lost",
    "duplicated",
    "corrupt",
    "errors",
    "read_your_writes",
    "reason",
)


def _fleet_summary(rows: list[dict]) -> list[dict]:
    """The fleet table's rows with its errors summed over kinds (:data:`FLEET_SUMMARY`)."""
    out = []
    for r in rows:
        errors = [v for k, v in r.items() if k.startswith("errors_") and v is not None]
        row = {**r, "errors": sum(errors) if errors else None}
        out.append({k: row.get(k) for k in FLEET_SUMMARY})
    return out


_LITERAL = re.compile(r"``(.+?)``")


def figure_caption(stem: str, captions: Mapping[str, str | Path]) -> Markup:
    """A figure's caption as HTML, from the workflow's caption file of the same stem.

    The caption files are the ones Snakemake's report shows (``workflow/report/<stem>.rst``,
    reStructuredText with Jinja2 placeholders); ``external-<id>`` takes ``external.rst``
    with ``snakemake.wildcards.dataset`` = ``<id>``.

    Args:
        stem: the figure's file stem.
        captions: caption file stem -> its path.

    Returns:
        The caption as escaped HTML (inline literals as ``<code>``), empty when no caption
        file has the stem.
    """
    prefix, _, dataset = stem.partition("-")
    path = captions.get(stem) or captions.get(prefix)
    if path is None:
        return Markup("")
    rst = jinja2.Template(Path(path).read_text("utf-8")).render(
        snakemake={"wildcards": {"dataset": dataset}, "config": {}}
    )
    # the captions use one reStructuredText construct, the inline literal ``x``
    return Markup(_LITERAL.sub(r"<code>\1</code>", str(Markup.escape(" ".join(rst.split())))))


def _data_uri(path: str | Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"data:image/svg+xml;base64,{data}"


def _versions(env: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(component, version) rows of the capture's environment.

    Python, the platform, the engines, the key packages, then one row per distribution a
    product arm drives (``"<dist> (<arm>, ...)"``, each distribution once).
    """
    rows: list[tuple[str, str | None]] = [("Python", env["python"]), ("platform", env["platform"])]
    engines = env.get("engines", {})
    if engines:
        pgsql = engines.get("postgresql") or {}
        where = f" ({pgsql['source']})" if pgsql.get("source") else ""
        rows += [
            ("SQLite (apsw)", engines.get("sqlite")),
            (f"PostgreSQL server{where}", pgsql.get("server")),
            ("pgvector extension", pgsql.get("pgvector")),
        ]
    rows += [(name, v) for name, v in env.get("packages", {}).items() if name != "sqlite"]
    drivers: dict[tuple[str, str | None], list[str]] = {}
    for arm, versions in env.get("products", {}).items():
        for dist, version in versions.items():
            drivers.setdefault((dist, version), []).append(arm)
    rows += [(f"{dist} ({', '.join(arms)})", v) for (dist, v), arms in drivers.items()]
    return rows


_VERDICT_CSS = {"holds": "ok", "weakens": "warn", "flips": "bad"}


def _finding_cell(r: Mapping[str, Any] | None) -> dict[str, str]:
    """One cell of a findings table for the template: its text and verdict class."""
    if r is None or r["value"] is None:
        return {"text": "n/a", "css": "na"}
    text = f"{_f(float(r['value']))} {r['verdict']}" + (" (carried)" if r["carried"] else "")
    return {"text": text, "css": _VERDICT_CSS.get(r["verdict"], "na")}


def _findings_view(findings_csv: str | Path | None, seeds_csv: str | Path | None) -> dict | None:
    """Rows of the findings table for the template (None without ``findings.csv``)."""
    if not findings_csv or not Path(findings_csv).is_file():
        return None
    t = as_shipped(pl.read_csv(findings_csv))
    seeds = {}
    if seeds_csv and Path(seeds_csv).is_file():
        for r in pl.read_csv(seeds_csv).iter_rows(named=True):
            if r["seed_verdicts"] == "carried":
                text = "carried (reads no corpus)"
            elif r["seed_mean"] is None:
                text = "–"
            elif r["seed_ci_low"] is None:
                text = f"{_f(r['seed_mean'])}; {r['seed_verdicts']}"
            else:
                text = (
                    f"{_f(r['seed_mean'])} [{_f(r['seed_ci_low'])}, {_f(r['seed_ci_high'])}]; "
                    f"{r['seed_verdicts']}"
                )
            seeds[r["finding"]] = text
    corpora = list(dict.fromkeys(t["corpus"].to_list()))
    rows = []
    for (num,), g in t.group_by(["finding"], maintain_order=True):
        by = {r["corpus"]: r for r in g.iter_rows(named=True)}
        cells = [_finding_cell(by.get(c)) for c in corpora]
        first = g.row(0, named=True)
        rows.append(
            {
                "number": num,
                "claim": first["claim"],
                "statistic": first["statistic"],
                "rule": first["rule"],
                "cells": cells,
                "seeds": seeds.get(num, "–"),
            }
        )
    return {"corpora": corpora, "rows": rows}


def _exact_view(study_cells_csv: str | Path | None, findings_csv: str | Path | None) -> dict:
    """The view of the section "Reproducing the study exactly": choices, cells, sensitivity.

    Returns:
        ``choices`` (name, what it changes), ``counts`` and ``cells`` (the study's cell
        table, :mod:`agentmem.report.study_cells`; empty without its file), ``columns`` and
        ``rows`` (each finding on each corpus as shipped and under each configuration of
        the study's choices; empty when none ran).
    """
    from agentmem.choices import CHOICES
    from agentmem.report.study_cells import VALUE_COLUMNS, cell_counts

    view: dict[str, Any] = {
        "choices": list(CHOICES.items()),
        "counts": [],
        "cells": [],
        "cell_columns": [],
        "columns": [],
        "rows": [],
    }
    if study_cells_csv and Path(study_cells_csv).is_file():
        cells = pl.read_csv(study_cells_csv, infer_schema_length=None)
        view["counts"] = cell_counts(cells).to_dicts()
        view["cell_columns"] = [c for c in VALUE_COLUMNS if cells[c].drop_nulls().len()]
        view["cells"] = cells.to_dicts()
    if findings_csv and Path(findings_csv).is_file():
        t = sensitivity(pl.read_csv(findings_csv))
        columns = list(dict.fromkeys(zip(t["corpus"], t["choices"], strict=True)))
        view["columns"] = [f"{c}: {x}" for c, x in columns]
        for (num,), g in t.group_by(["finding"], maintain_order=True):
            by = {(r["corpus"], r["choices"]): r for r in g.iter_rows(named=True)}
            cells_ = [_finding_cell(by.get(col)) for col in columns]
            view["rows"].append({"number": num, "claim": g["claim"][0], "cells": cells_})
    return view


def render_report(
    capture: str | Path,
    capabilities: str | Path,
    out: str | Path,
    figures: list[str | Path] | None = None,
    reference_csv: str | Path | None = None,
    bootstrap_csv: str | Path | None = None,
    external_scores: Mapping[str, str | Path] | None = None,
    external_units: Mapping[str, str | None] | None = None,
    findings_csv: str | Path | None = None,
    findings_seeds_csv: str | Path | None = None,
    seed_spread_csv: str | Path | None = None,
    captions: Mapping[str, str | Path] | None = None,
    study_cells_csv: str | Path | None = None,
    pareto_dir: str | Path | None = None,
) -> None:
    """Render ``index.html``.

    Args:
        capture: ``results/capture.json``.
        capabilities: ``results/tables/capabilities.md``.
        out: the HTML file to write (atomically).
        figures: figure SVGs; each is embedded in its section by file stem.
        reference_csv: ``results/tables/vs_reference.csv`` (section 10), optional.
        bootstrap_csv: ``results/tables/bootstrap_ci.csv`` (nDCG intervals), optional.
        external_scores: dataset id -> its ``scores.csv`` (section 7, in this order;
            :func:`external_tables`); its figure is ``external-<id>.svg`` among ``figures``.
        external_units: dataset id -> the LoCoMo unit whose published figures to show
            beside it (missing or None: no published figures).
        findings_csv: ``results/tables/findings.csv`` (section 9,
            :mod:`agentmem.report.headline`), optional.
        findings_seeds_csv: ``results/tables/findings_seeds.csv`` (the across-seed column of
            that table), optional.
        seed_spread_csv: ``results/tables/by_class_seeds.csv`` (section 9), optional.
        captions: caption file stem -> its path (``workflow/report/*.rst``, the captions of
            Snakemake's report): each figure's caption (:func:`figure_caption`); none if
            omitted.
        study_cells_csv: ``results/tables/study_cells.csv`` (section 10, "Reproducing the
            study exactly"), optional.
        pareto_dir: ``results/pareto`` (section 11, "Operating points": its ``points``,
            ``budgets`` and ``findings`` CSVs; the figures come in ``figures``), optional.
    """
    doc = json.loads(Path(capture).read_text())
    t = pl.DataFrame(doc["by_class"])
    overall = t.filter(pl.col("query_class") == "all").to_dicts()
    grid: dict[str, dict[str, float]] = {}
    stale: dict[str, dict[str, float | None]] = {}
    for r in t.iter_rows(named=True):
        grid.setdefault(r["arm"], {})[r["query_class"]] = r["ndcg_at_10"]
        stale.setdefault(r["arm"], {})[r["query_class"]] = r.get("stale_exposure")
    figs = {
        Path(f).stem: {"src": _data_uri(f), "caption": figure_caption(Path(f).stem, captions or {})}
        for f in (figures or [])
    }
    ci: dict[str, tuple[float, float]] = {}
    if bootstrap_csv and Path(bootstrap_csv).is_file():
        b = pl.read_csv(bootstrap_csv).filter(
            (pl.col("query_class") == "all") & (pl.col("metric") == "ndcg_at_10")
        )
        ci = {r["arm"]: (r["ci_low"], r["ci_high"]) for r in b.iter_rows(named=True)}
    tables = {k: v for k, v in doc.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
    tables.update({k: v for k, v in doc.get("trials", {}).items()})
    tables["crash_summary"] = _crash_summary(doc.get("trials", {}).get("crash", []))
    tables["fleet_summary"] = _fleet_summary(doc.get("trials", {}).get("fleet", []))
    if doc.get("restatements"):
        tables["restatements"] = [doc["restatements"]]
    if doc.get("hnsw_recall"):
        h = doc["hnsw_recall"]
        tables["hnsw_recall"] = [
            {"ef_search": int(ef), "recall_at_k": r, "k": h["k"], "memories": h["memories"]}
            for ef, r in h["by_ef"].items()
        ]
    reference: dict[str, list[dict]] = {}
    summary = ""
    if reference_csv and Path(reference_csv).is_file():
        ref = pl.read_csv(reference_csv, infer_schema_length=0)  # all text: mixed columns
        for r in ref.iter_rows(named=True):
            reference.setdefault(r["section"], []).append(r)
        counts = ref.group_by("verdict").len().sort("len", descending=True)
        summary = "Verdicts: " + ", ".join(f"{v} {n}" for v, n in counts.iter_rows()) + "."
    seed_spread = []
    if seed_spread_csv and Path(seed_spread_csv).is_file():
        seed_spread = pl.read_csv(seed_spread_csv).filter(pl.col("query_class") == "all").to_dicts()
    sections = [
        {
            "anchor": a,
            "title": title,
            "intro": intro,
            "figures": figs_,
            "tables": SECTION_TABLES.get(a, ()),
        }
        for a, title, intro, figs_ in SECTIONS
    ]
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = (resources.files("agentmem.report") / TEMPLATE_FILE).read_text(encoding="utf-8")
    html = env.from_string(template).render(
        generated=doc["generated_utc"],
        main_size=doc["main_size"],
        env=doc["environment"],
        versions=_versions(doc["environment"]),
        corpus=doc["corpus"],
        corpus_keys=[
            "memories",
            "facts",
            "sessions",
            "queries",
            "distractors",
            "superseded",
            "tokens_per_memory",
        ],
        overall=overall,
        grid=grid,
        stale=stale,
        ci=ci,
        classes=[*QUERY_CLASSES, "all"],
        builds=doc["builds"],
        bpm={b["arm"]: b["bytes_per_memory"] for b in doc["builds"]},
        capabilities=_markdown_rows(Path(capabilities).read_text()),
        sections=sections,
        tables=tables,
        figs=figs,
        external=[
            external_tables(i, p, (external_units or {}).get(i))
            for i, p in (external_scores or {}).items()
        ],
        reference=reference,
        reference_summary=summary,
        findings=_findings_view(findings_csv, findings_seeds_csv),
        exact=_exact_view(study_cells_csv, findings_csv),
        pareto=pareto_view(pareto_dir),
        seed_spread=seed_spread,
        f=_f,
        shade=_shade,
        verdict_class=_verdict_class,
    )
    write_text(out, html)
