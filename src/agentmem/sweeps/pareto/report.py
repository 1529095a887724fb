"""The operating points in words: the report section's Markdown and the tabulation job."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.sweeps.pareto.tables import (
    best_by_class,
    best_points,
    budget_table,
    findings_at_best,
    frontier_table,
    points_table,
)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def pareto_markdown(
    points: pl.DataFrame,
    best: pl.DataFrame,
    budgets: pl.DataFrame,
    findings: pl.DataFrame,
) -> str:
    """The report section "Operating points": defaults beside bests, budgets, findings."""
    arms = points["arm"].n_unique()
    lines = [
        "# Operating points",
        "",
        f"{points.height} operating points over {arms} arms: each arm at its configured "
        "parameters (`default`) and, one knob at a time, at the other values of that "
        "knob's grid; every point timed as the headline runs and scored with their "
        "metrics (docs/OPERATING_POINTS.md). `results/pareto/points.csv` holds every "
        "point, `results/pareto/frontier.csv` the Pareto-optimal ones.",
        "",
        "## Each arm's default beside its best point",
        "",
        "| arm | default nDCG@10 | default p50 ms | best point | best nDCG@10 | best p50 ms "
        "| gain |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in best.iter_rows(named=True):
        lines.append(
            f"| {r['arm']} | {_fmt(r['default_ndcg'])} | {_fmt(r['default_p50_ms'], 2)} | "
            f"`{r['best_point']}` | {_fmt(r['best_ndcg'])} | {_fmt(r['best_p50_ms'], 2)} | "
            f"{r['gain']:+.3f} |"
        )
    lines += [
        "",
        "## The best arm under each latency budget",
        "",
        "The point with the highest nDCG@10 among those whose p50 latency is within the "
        "budget, over every query and per class.",
        "",
    ]
    scopes = list(dict.fromkeys(budgets["scope"].to_list()))
    head = ["p50 ≤", *scopes]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for budget in dict.fromkeys(budgets["budget_ms"].to_list()):
        cells = []
        for scope in scopes:
            r = budgets.filter((pl.col("budget_ms") == budget) & (pl.col("scope") == scope)).row(
                0, named=True
            )
            cells.append(
                "none" if r["arm"] is None else f"{r['arm']} `{r['point']}` {r['ndcg_at_10']:.3f}"
            )
        lines.append(f"| {budget:g} ms | " + " | ".join(cells) + " |")
    changed = findings.filter(pl.col("changed"))
    lines += [
        "",
        "## The study's findings with every arm at its best point",
        "",
        "Each finding on the headline corpus with every arm as configured and with every "
        "arm at its best point (its quality numbers; the latency stays the headline run's).",
        "",
    ]
    if changed.height == 0:
        lines.append("No finding changes verdict.")
    else:
        lines += [
            "| # | claim | configured | at best points |",
            "|---|---|---|---|",
        ]
        for r in changed.iter_rows(named=True):
            lines.append(
                f"| {r['finding']} | {r['claim']} | {_fmt(r['default_value'])} "
                f"{r['default_verdict']} | {_fmt(r['best_value'])} {r['best_verdict']} |"
            )
    same = findings.filter(~pl.col("changed"))["finding"].to_list()
    if same:
        lines += ["", "Unchanged: " + ", ".join(str(n) for n in same) + "."]
    return "\n".join(lines) + "\n"


def tabulate_job(input: Any, output: Any, params: Any) -> None:
    """Workflow entry: the points' JSON -> points.csv, frontier.csv, budgets, pareto.md.

    ``params``: ``budgets_ms``, ``results_dir``, ``main_size``; ``input.points``: every
    point's JSON; ``output``: ``points``, ``frontier``, ``budgets``, ``findings``, ``md``.
    """
    from agentmem.io import write_csv, write_text

    records = [json.loads(Path(p).read_text()) for p in input.points]
    points = points_table(records)
    best = best_points(points)
    budgets = budget_table(points, params.budgets_ms)
    findings = findings_at_best(params.results_dir, params.main_size, best_by_class(records, best))
    write_csv(output.points, points)
    write_csv(output.frontier, frontier_table(points))
    write_csv(output.budgets, budgets)
    write_csv(output.findings, findings)
    write_text(output.md, pareto_markdown(points, best, budgets, findings))


def pareto_view(pareto_dir: str | Path | None) -> dict | None:
    """The view of the section "Operating points", from ``results/pareto/`` (None: absent).

    Returns:
        ``points`` and ``arms`` (counts), ``best`` (each arm's default beside its best
        point), ``budgets`` (rows per budget, a cell per scope), ``scopes``, ``changed``
        (findings whose verdict moves at the best points) and ``unchanged`` (their numbers).
    """
    d = Path(pareto_dir) if pareto_dir else None
    if d is None or not (d / "points.csv").is_file():
        return None
    points = pl.read_csv(d / "points.csv", infer_schema_length=None)
    budgets = pl.read_csv(d / "budgets.csv", infer_schema_length=None)
    findings = pl.read_csv(d / "findings.csv", infer_schema_length=None)
    scopes = list(dict.fromkeys(budgets["scope"].to_list()))
    rows = []
    for budget, g in budgets.group_by("budget_ms", maintain_order=True):
        cell = {
            r["scope"]: "none"
            if r["arm"] is None
            else f"{r['arm']} ({r['point']}) {r['ndcg_at_10']:.3f}"
            for r in g.iter_rows(named=True)
        }
        rows.append({"budget": f"{budget[0]:g} ms", "cells": [cell.get(s, "") for s in scopes]})
    return {
        "points": points.height,
        "arms": points["arm"].n_unique(),
        "best": best_points(points).to_dicts(),
        "scopes": scopes,
        "budgets": rows,
        "changed": findings.filter(pl.col("changed")).to_dicts(),
        "unchanged": findings.filter(~pl.col("changed"))["finding"].to_list(),
    }
