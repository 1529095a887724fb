"""Section 7 of the report: each external dataset's scores as tables, beside published rows.

Reads the scores table of :func:`agentmem.external.score.score_dataset` (columns setting,
arm, level, category, n_queries, recall_at_5/10/25/50, ndcg_at_10, ndcg_at_5, mrr,
hit_at_1, and the fill columns fill_at_5/10/25/50, short_at_50) and, for a LoCoMo unit, the
published rows of :func:`agentmem.external.published.published`: the DRAGON retriever's
evidence recall (the LoCoMo paper's retrieval table, as quoted by secondary sources) and
the session-level BM25 and fusion anchors.

A value at cut-off k is marked :data:`SHORT_MARK` when the arm's fill@k there is below 1
(:func:`agentmem.metrics.fill_rate`): on some question it returned fewer memories than k,
or than the question's scope holds when that is fewer. A scores table without the fill
columns is shown unmarked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.external.published import published
from agentmem.external.score import FILL_COLUMNS, HELD_OUT, LEVELS, RUN_K

#: the evidence-recall cut-offs shown (the runs have k = 50)
RECALL_KS = (5, 10, 25, 50)
_DRAGON_LABEL = "DRAGON (LoCoMo paper, within one conversation), as quoted by secondary sources"
#: the marker of a value computed from answers shorter than they could be
SHORT_MARK = "†"
#: what :data:`SHORT_MARK` means, under a table that shows it
SHORT_NOTE = (
    f"{SHORT_MARK} the arm returned fewer memories than k (or than the question's scope "
    "holds, when fewer) on some question of that cell (fill@k below 1, table 'Fill'), so "
    "its value counts fewer memories than a full answer's. pgvector's HNSW index scan "
    "returns at most hnsw.ef_search = 40 rows, filtered or not: pg-hnsw and langgraph-store "
    "answer k = 50 with about 40, pg-hybrid's vector branch and three-tier's L3 list stop "
    "there too; pg-hnsw-iterative keeps scanning (docs/arms/postgres.md). A text-only arm "
    "returns only the memories that match its terms."
)


def _table(caption: str, groups: list[str], metrics: list[str], rows: list[dict]) -> dict:
    marked = any(isinstance(v, str) for r in rows for v in r["values"])
    if marked:
        caption = f"{caption}. {SHORT_NOTE}"
    return {"caption": caption, "groups": groups, "metrics": metrics, "rows": rows}


def marked(row: Mapping[str, Any], metric: str, fill: str) -> float | str | None:
    """The value of ``metric`` in a scores row, as text with :data:`SHORT_MARK` when short.

    Args:
        row: one row of the scores table (empty: no such row).
        metric: a metric column (e.g. ``recall_at_50``).
        fill: the fill column that qualifies it (e.g. ``fill_at_50``).

    Returns:
        The value (float or None) when ``fill`` is 1 or absent; else the value to three
        places followed by :data:`SHORT_MARK`.
    """
    v, f = row.get(metric), row.get(fill)
    if v is None or f is None or math.isnan(v) or math.isnan(f) or f >= 1.0:
        return v
    return f"{v:.3f} {SHORT_MARK}"


def external_tables(dataset_id: str, scores_csv: str | Path, unit: str | None) -> dict[str, Any]:
    """The tables of one external dataset for the report template.

    Args:
        dataset_id: the dataset id (``<name>`` or ``<name>-<unit>``).
        scores_csv: its ``results/external/<id>/scores.csv``.
        unit: the LoCoMo unit whose published figures to show beside ours; None for none.

    Returns:
        ``id``, ``figure`` (the stem of its figure, ``external-<id>``), ``summary`` (one
        line: questions, arms, settings, where the published rows come from) and
        ``tables``: per setting, evidence recall@k per arm (rows) and category (column
        groups, ``all`` last) with the published DRAGON row where known; memory-level
        nDCG@10, MRR, R@10 and Hit@1 per arm and setting; for a unit with published
        session-level anchors, session-level Hit@1, R@5 and nDCG@5 beside them. Each table
        is ``caption``, ``groups``, ``metrics`` and ``rows`` (``label``, ``values``,
        ``published``); a value is a float or None (not published / not defined).
    """
    t = pl.read_csv(scores_csv, infer_schema_length=None)
    settings = list(dict.fromkeys(t["setting"].to_list()))
    arms = list(dict.fromkeys(t["arm"].to_list()))
    cats = [c for c in dict.fromkeys(t["category"].to_list()) if c != "all"] + ["all"]
    key = {(r["setting"], r["arm"], r["level"], r["category"]): r for r in t.iter_rows(named=True)}
    pub = published(unit) if unit is not None else published().clear()
    dragon = {
        (r["category"], r["metric"]): r["value"]
        for r in pub.filter(pl.col("level") == "evidence").iter_rows(named=True)
    }
    ks = [f"R@{k}" for k in RECALL_KS]
    tables = []
    for s in settings:
        rows = [
            {
                "label": a,
                "values": [
                    marked(key.get((s, a, "evidence", c), {}), f"recall_at_{k}", f"fill_at_{k}")
                    for c in cats
                    for k in RECALL_KS
                ],
                "published": False,
            }
            for a in arms
        ]
        if dragon:
            rows.append(
                {
                    "label": _DRAGON_LABEL,
                    "values": [dragon.get((c, f"recall_at_{k}")) for c in cats for k in RECALL_KS],
                    "published": True,
                }
            )
        tables.append(
            _table(
                f"Evidence recall@k by question category, {s} (k = 5, 10, 25, 50)",
                cats,
                ks,
                rows,
            )
        )
    mem = ("ndcg_at_10", "mrr", "recall_at_10", "hit_at_1")
    #: the fill that qualifies each memory-level metric (MRR and Hit@1 read the whole list)
    mem_fill = {"ndcg_at_10": "fill_at_10", "recall_at_10": "fill_at_10"}
    tables.append(
        _table(
            "Memory level (against the qrels), all categories",
            settings,
            ["nDCG@10", "MRR", "R@10", "Hit@1"],
            [
                {
                    "label": a,
                    "values": [
                        marked(key.get((s, a, "memory", "all"), {}), m, mem_fill.get(m, ""))
                        for s in settings
                        for m in mem
                    ],
                    "published": False,
                }
                for a in arms
            ],
        )
    )
    anchors = pub.filter(pl.col("level") == "group")
    if anchors.height:
        grp = ("hit_at_1", "recall_at_5", "ndcg_at_5")
        rows = [
            {
                "label": a,
                # sessions are ranked from the whole answer (k = 50 memories)
                "values": [
                    marked(key.get((s, a, "group", "all"), {}), m, f"fill_at_{RUN_K}")
                    for s in settings
                    for m in grp
                ],
                "published": False,
            }
            for a in arms
        ]
        for system in dict.fromkeys(anchors["system"].to_list()):
            vals = {
                r["metric"]: r["value"]
                for r in anchors.filter(pl.col("system") == system).iter_rows(named=True)
            }
            n = anchors.filter(pl.col("system") == system)["n_questions"][0]
            rows.append(
                {
                    "label": f"{system}, {n:,} questions, setting not stated",
                    "values": [vals.get(m) for _ in settings for m in grp],
                    "published": True,
                }
            )
        tables.append(
            _table(
                "Session level (sessions ranked by their best memory), all categories",
                settings,
                ["Hit@1", "R@5", "nDCG@5"],
                rows,
            )
        )
    if set(FILL_COLUMNS) <= set(t.columns):
        tables.append(
            _table(
                "Fill: per question, min(returned, k) / min(k, memories it could be "
                "answered from: its scope's, every memory unscoped), averaged over all "
                "categories; short@50: the share of questions below 1. Below 1, the recall "
                f"at that k counts fewer memories than k ({SHORT_MARK} in the tables above)",
                settings,
                [f"fill@{k}" for k in RECALL_KS] + [f"short@{RUN_K}"],
                [
                    {
                        "label": a,
                        "values": [
                            fill_row(t, s, a).get(m) for s in settings for m in FILL_COLUMNS
                        ],
                        "published": False,
                    }
                    for a in arms
                ],
            )
        )
    first = key.get((settings[0], arms[0], "evidence", "all"), {}) if arms else {}
    versus = [
        line
        for c in (c for c in ("all", HELD_OUT) if c in cats)
        if (line := vs_dragon(key, arms, dragon, c)) is not None
    ]
    where = (
        f"; published rows: {pub['source'].unique(maintain_order=True).str.join('; ')[0]}"
        if pub.height
        else "; no published figures for this dataset"
    )
    summary = (
        f"{first.get('n_queries', 0):,} questions, {len(arms)} arms, settings: "
        f"{', '.join(settings)}{where}."
    )
    return {
        "id": dataset_id,
        "figure": f"external-{dataset_id}",
        "summary": summary,
        "versus": versus,
        "tables": tables,
    }


def vs_dragon(
    key: dict[tuple[str, str, str, str], dict[str, Any]],
    arms: list[str],
    dragon: dict[tuple[str, str], float],
    category: str = "all",
) -> str | None:
    """One sentence: which arms' scoped evidence recall is at or above DRAGON's, per k.

    DRAGON retrieved within one conversation, so only the ``scoped`` runs are compared;
    its ``all`` figures stand for the ``held-out`` row too (a subset of the same
    questions).

    Args:
        key: the scores rows by (setting, arm, level, category).
        arms: the arms, in table order.
        dragon: DRAGON's published recall by (category, metric) (``published``).
        category: ``all`` or ``held-out``.

    Returns:
        The sentence, or None without a scoped run or a published figure.
    """
    parts = []
    for k in RECALL_KS:
        pub = dragon.get(("all", f"recall_at_{k}"))
        rows = [(a, key.get(("scoped", a, "evidence", category), {})) for a in arms]
        got = [(a, r[f"recall_at_{k}"]) for a, r in rows if r.get(f"recall_at_{k}") is not None]
        if pub is None or not got:
            continue
        above = [f"{a} {v:.3f}" for a, v in got if v >= pub]
        parts.append(f"R@{k} (DRAGON {pub:.3f}): {', '.join(above) or 'none'}")
    if not parts:
        return None
    n = key.get(("scoped", arms[0], "evidence", category), {}).get("n_queries", 0)
    return f"At or above DRAGON, scoped, {category} ({n:,} questions): " + "; ".join(parts) + "."


def fill_row(scores: pl.DataFrame, setting: str, arm: str) -> dict[str, Any]:
    """The ``all``-category row of one run that holds the most questions (its fill).

    The fill is the answer's, the same at every level; a level's row averages it over the
    questions with a gold set there, so the level with the most questions is shown
    (ties in :data:`agentmem.external.score.LEVELS` order). Empty when the run has none.
    """
    rows = scores.filter(
        (pl.col("setting") == setting) & (pl.col("arm") == arm) & (pl.col("category") == "all")
    ).to_dicts()
    rows.sort(key=lambda r: (-r["n_queries"], LEVELS.index(r["level"])))
    return rows[0] if rows else {}


def fill_markdown(scores_csv: str | Path) -> str:
    """A Markdown section with each run's fill, to follow ``vs_published.md``'s tables.

    Args:
        scores_csv: the table of :func:`agentmem.external.score.score_dataset`.

    Returns:
        A heading, one row per (setting, arm) (:func:`fill_row`: questions, fill@5/10/25/50,
        short@50) and a note naming the runs whose recall counts short answers; empty
        when the table has no fill columns.
    """
    t = pl.read_csv(scores_csv, infer_schema_length=None)
    if not set(FILL_COLUMNS) <= set(t.columns):
        return ""
    lines = [
        "## Fill: answers with fewer memories than k",
        "",
        "| system | setting | questions | fill@5 | fill@10 | fill@25 | fill@50 | short@50 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    short = []
    runs = t.select("setting", "arm").unique(maintain_order=True).iter_rows()
    for setting, arm in runs:
        r = fill_row(t, setting, arm)
        vals = " | ".join(f"{r[m]:.3f}" for m in FILL_COLUMNS)
        lines.append(f"| {arm} | {setting} | {r['n_queries']:,} | {vals} |")
        low = [k for k in RECALL_KS if r[f"fill_at_{k}"] < 1.0]
        if low:
            short.append(f"{arm} ({setting}: R@{', R@'.join(map(str, low))})")
    lines += [
        "",
        "fill@k: per question, min(returned, k) / min(k, memories of its scope (every memory "
        "when unscoped)), averaged; short@50: the share of questions below 1. Where fill@k "
        "is below 1, R@k above counts fewer memories than k on some questions: "
        + ("; ".join(short) if short else "no run")
        + ". pgvector's HNSW index scan returns at most hnsw.ef_search = 40 rows, filtered "
        "or not (docs/arms/postgres.md); a text-only arm returns only the memories that "
        "match its terms.",
        "",
    ]
    return "\n".join(lines)
