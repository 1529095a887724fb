"""Rendering of the comparison: ``results/tables/vs_reference.md`` and ``vs_reference.csv``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from agentmem.io import write_csv, write_text
from agentmem.report.reference.comparison import FINDING_GROUP, compare_results
from agentmem.report.reference.ours import OurResults


def _fmt(v: float | None) -> str:
    """Readable number: integers with thousands separators, small values to 3 decimals."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if float(v).is_integer() and abs(v) >= 1:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    if v == 0:
        return "0"
    if abs(v) < 0.01:
        return f"{v:.4f}"
    return f"{v:.3f}"


_SECTION_TITLES = {
    "§1": "§1 Corpus (main size)",
    "§2": "§2 Query classes and relevance",
    "§3": "§3 The ten arms",
    "§4": "§4 Other experiments",
}


def _esc(s: str) -> str:
    return s.replace("|", "\\|")


def render_markdown(table: pl.DataFrame, missing: Iterable[str] = (), main_size: str = "m") -> str:
    """``vs_reference.md`` from a :func:`compare` table.

    One section per REFERENCE section; within it one table per group of numbers, then the
    findings with their verdicts and the known reasons.
    """
    nums = table.filter(pl.col("group") != FINDING_GROUP)
    finds = table.filter(pl.col("group") == FINDING_GROUP)
    counts = table.group_by("verdict").len().sort("verdict")
    fcounts = finds.group_by("verdict").len().sort("verdict")
    lines = [
        "# Our results beside the published study",
        "",
        "Published: docs/STUDY.md (the study's public capture; PGlite/WebAssembly, Node, "
        "Windows, single run). Ours: this run, main size "
        f"`{main_size}`. `difference` = ours − published.",
        "",
        "Verdicts: a number is **reproduced** when it lies within the tolerance of its kind "
        "(scores ±0.10 absolute, rates ±0.05, counts ±10 %, tokens ×1.5, bytes ×2, "
        "latencies and ranks ×3, outcomes: zero vs non-zero), or — for nDCG, recall and "
        "MRR — when the published value is inside our 95 % bootstrap interval. Study "
        "settings are marked *same setting* / *other setting*. A **finding** is reproduced "
        "when its rule (an ordering or a threshold) holds on our numbers: the findings, "
        "not the decimals, must carry over.",
        "",
        "Latencies and build times depend on the machine and the engine build: the study "
        "ran PGlite (PostgreSQL compiled to WebAssembly) under Node on a 16-core Windows "
        "laptop; we run native PostgreSQL 18 (pgserver) and SQLite through apsw on Linux. "
        "Compare their orderings, not their values.",
        "",
        "Numbers: "
        + ", ".join(f"{r['len']} {r['verdict']}" for r in counts.to_dicts() if r["verdict"])
        + ". Findings: "
        + ", ".join(f"{r['len']} {r['verdict']}" for r in fcounts.to_dicts())
        + ".",
        "",
    ]
    missing = sorted(set(missing))
    if missing:
        lines += [
            "Inputs not found in this results tree (their numbers are *not measured*): "
            + ", ".join(f"`{m}`" for m in missing)
            + ".",
            "",
        ]
    for sec, title in _SECTION_TITLES.items():
        lines += [f"## {title}", ""]
        part = nums.filter(pl.col("section") == sec)
        for group in dict.fromkeys(part["group"].to_list()):
            g = part.filter(pl.col("group") == group)
            lines += [
                f"### {group}",
                "",
                "| item | published | ours | difference | verdict | note |",
                "|---|---:|---:|---:|---|---|",
            ]
            for r in g.iter_rows(named=True):
                lines.append(
                    f"| {_esc(r['item'])} | {_fmt(r['published'])} | {_fmt(r['ours'])} | "
                    f"{_fmt(r['difference'])} | {r['verdict']} | {_esc(r['note'] or '')} |"
                )
            lines.append("")
        fs = finds.filter(pl.col("section") == sec)
        if fs.height:
            lines += [f"### Findings ({sec})", ""]
            for r in fs.iter_rows(named=True):
                why = f" Why: {r['note']}." if r["note"] else ""
                lines.append(
                    f"- **{r['verdict']}** — {r['item']}. {r['tolerance']}; published "
                    f"{_fmt(r['published'])}, ours {_fmt(r['ours'])}.{why}"
                )
            lines.append("")
    return "\n".join(lines)


def write_vs_reference(
    results_dir: str | Path,
    out_md: str | Path,
    out_csv: str | Path,
    main_size: str | None = None,
    study_cells_csv: str | Path | None = None,
) -> pl.DataFrame:
    """Write ``vs_reference.md`` and ``vs_reference.csv`` (see :func:`compare`).

    Args:
        results_dir: the ``results`` directory.
        out_md: Markdown target.
        out_csv: CSV target (the :func:`compare` table).
        main_size: size of the headline tables (None: see :class:`OurResults`).
        study_cells_csv: the study's cell table (:mod:`agentmem.report.study_cells`),
            appended to the Markdown when given.

    Returns:
        The comparison table.
    """
    res = OurResults(results_dir, main_size)
    table = compare_results(res)
    write_csv(out_csv, table)
    md = render_markdown(table, res.missing, res.main)
    if study_cells_csv is not None:
        from agentmem.report.study_cells import study_cells_markdown

        cells = pl.read_csv(study_cells_csv, infer_schema_length=None)
        md = md.rstrip("\n") + "\n\n" + study_cells_markdown(cells)
    write_text(out_md, md)
    return table
