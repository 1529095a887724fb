"""The study's cell table: its published nDCG@10 per arm and class beside ours on its corpus.

On the study's own corpus (``robustness.study_corpus``), each cell of the study's §3
by-class grid (ten arms × eight classes) is put beside our arm of the same name as shipped
and under each configuration of the study's implementation choices
(:mod:`agentmem.sweeps.choices`), with how many cells land within ±0.03 and ±0.05 of the
published value (docs/arms/choices.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from agentmem.choices import AS_SHIPPED, CONFIGURATIONS, STUDY
from agentmem.io import write_csv, write_text
from agentmem.report.reference import published_lookup
from agentmem.report.reference.study import CLASSES, REFERENCE_ARMS
from agentmem.sweeps.choices import overlay_choices

#: The distances from the published value the cell counts use.
TOLERANCES = (0.03, 0.05)
#: The Markdown mark of an arm ranking through an HNSW graph (cells vary between builds).
HNSW_MARK = "‡"


def _column(configuration: str) -> str:
    """The table's column of a configuration (``as_shipped``, ``study_choices``, a choice)."""
    return {AS_SHIPPED: "as_shipped", STUDY: "study_choices"}.get(configuration, configuration)


#: the table's value columns, in configuration order
VALUE_COLUMNS = tuple(_column(c) for c in CONFIGURATIONS)


def study_cells(by_class: pl.DataFrame, sweep: pl.DataFrame | None) -> pl.DataFrame:
    """The cell table.

    Args:
        by_class: the study corpus's by-class table, arms as shipped.
        sweep: its choices sweep (:func:`agentmem.sweeps.choices.choices_sweep`), or None.

    Returns:
        Columns ``arm``, ``query_class``, ``published``, then :data:`VALUE_COLUMNS` (our
        nDCG@10 under each configuration; null where an arm was not run), and ``hnsw``
        (the arm ranks through an HNSW graph, from its declared ``vector_access``: its
        cells can move between builds); one row per published cell whose arm is in
        ``by_class``, in the study's arm and class order.
    """
    from agentmem.arms import ARMS

    pub = published_lookup()
    ran = set() if sweep is None else set(sweep["choices"].to_list())
    grids = {
        _column(c): {
            (a, cls): v
            for a, cls, v in overlay_choices(by_class, sweep, c)
            .select("arm", "query_class", "ndcg_at_10")
            .iter_rows()
        }
        for c in CONFIGURATIONS
        if c == AS_SHIPPED or c in ran
    }
    arms = set(by_class["arm"].to_list())
    rows = []
    for arm in REFERENCE_ARMS:
        if arm not in arms:
            continue
        caps = getattr(ARMS.get(arm), "capabilities", None)
        hnsw = str(getattr(caps, "vector_access", "none")).startswith("hnsw")
        for cls in CLASSES:
            published = pub.get(("by_class", arm, cls, "ndcg_at_10"))
            if published is None:
                continue
            row: dict = {"arm": arm, "query_class": cls, "published": published}
            for col in VALUE_COLUMNS:
                v = grids.get(col, {}).get((arm, cls))
                row[col] = None if v is None else float(v)
            row["hnsw"] = hnsw
            rows.append(row)
    schema = {"arm": pl.String, "query_class": pl.String, "published": pl.Float64}
    schema |= {c: pl.Float64 for c in VALUE_COLUMNS}
    schema["hnsw"] = pl.Boolean
    return pl.DataFrame(rows, schema=schema)


def cell_counts(table: pl.DataFrame) -> pl.DataFrame:
    """Per configuration column: cells compared, and within each of :data:`TOLERANCES`.

    Returns:
        Columns ``configuration``, ``cells``, ``within_0.03``, ``within_0.05``,
        ``mean_abs_diff``; a configuration with no value is left out.
    """
    rows = []
    for col in VALUE_COLUMNS:
        diff = (table[col] - table["published"]).abs().drop_nulls()
        if diff.len() == 0:
            continue
        row = {"configuration": col, "cells": diff.len()}
        for tol in TOLERANCES:
            row[f"within_{tol:.2f}"] = int((diff <= tol + 1e-9).sum())
        row["mean_abs_diff"] = float(diff.mean())
        rows.append(row)
    return pl.DataFrame(rows)


def study_cells_markdown(table: pl.DataFrame) -> str:
    """The cell table as Markdown: the counts, then every cell (difference from published)."""
    counts = cell_counts(table)
    present = [c for c in VALUE_COLUMNS if table[c].drop_nulls().len()]
    lines = [
        "## The study's cells on the study's corpus",
        "",
        "nDCG@10 per arm and class: published (the study's §3 grid) and ours on the study's "
        "own corpus, as shipped and under the study's implementation choices "
        f"(docs/arms/choices.md). {HNSW_MARK} marks an arm that ranks through an HNSW graph: "
        "pgvector's differs from build to build, so those cells move between runs (four "
        "builds of pg-hnsw and pg-hybrid on the study's corpus spread single cells by up "
        "to 0.10, docs/arms/choices.md).",
        "",
        "| configuration | cells | within ±0.03 | within ±0.05 | mean abs. difference |",
        "|---|---|---|---|---|",
    ]
    for r in counts.iter_rows(named=True):
        lines.append(
            f"| {r['configuration']} | {r['cells']} | {r['within_0.03']} | {r['within_0.05']} "
            f"| {r['mean_abs_diff']:.3f} |"
        )
    lines += ["", "| arm | class | published | " + " | ".join(present) + " |"]
    lines.append("|" + "---|" * (3 + len(present)))
    for r in table.iter_rows(named=True):
        cells = [
            "–" if r[c] is None else f"{r[c]:.3f} ({r[c] - r['published']:+.3f})" for c in present
        ]
        lines.append(
            f"| {r['arm']} | {r['query_class']} | {r['published']:.3f} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines) + "\n"


def write_study_cells(
    by_class_csv: str | Path,
    choices_csv: str | Path | None,
    csv_out: str | Path,
    md_out: str | Path,
) -> pl.DataFrame:
    """Write ``study_cells.csv`` and its Markdown from the study corpus's tables."""
    by_class = pl.read_csv(by_class_csv, infer_schema_length=None)
    sweep = (
        pl.read_csv(choices_csv, infer_schema_length=None)
        if choices_csv is not None and Path(choices_csv).is_file()
        else None
    )
    table = study_cells(by_class, sweep)
    write_csv(csv_out, table)
    write_text(md_out, study_cells_markdown(table))
    return table


def study_cells_job(input: Any, output: Any, params: Any) -> None:
    """The cell table as a workflow job (:func:`agentmem.jobs.run_entry`).

    Args:
        input: ``by_class`` and ``choices``, the study corpus's tables.
        output: ``csv`` and ``md``.
        params: unused.
    """
    write_study_cells(input.by_class, input.choices, output.csv, output.md)
