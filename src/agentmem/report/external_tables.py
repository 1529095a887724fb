"""Section 7 of the report: each external dataset's scores as tables, beside published rows.

Reads the scores table of :func:`agentmem.external.score.score_dataset` (columns setting,
arm, level, category, n_queries, recall_at_5/10/25/50, ndcg_at_10, ndcg_at_5, mrr,
hit_at_1) and, for a LoCoMo unit, the published rows of
:func:`agentmem.external.published.published`: the DRAGON retriever's evidence recall (the
LoCoMo paper's retrieval table, as quoted by secondary sources) and the session-level
BM25 and fusion anchors (REFERENCE §6).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from agentmem.external.published import published

#: the evidence-recall cut-offs shown (the runs have k = 50)
RECALL_KS = (5, 10, 25, 50)
_DRAGON_LABEL = "DRAGON (LoCoMo paper, within one conversation), as quoted by secondary sources"


def _table(caption: str, groups: list[str], metrics: list[str], rows: list[dict]) -> dict:
    return {"caption": caption, "groups": groups, "metrics": metrics, "rows": rows}


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
                    key.get((s, a, "evidence", c), {}).get(f"recall_at_{k}")
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
    tables.append(
        _table(
            "Memory level (against the qrels), all categories",
            settings,
            ["nDCG@10", "MRR", "R@10", "Hit@1"],
            [
                {
                    "label": a,
                    "values": [
                        key.get((s, a, "memory", "all"), {}).get(m) for s in settings for m in mem
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
                "values": [
                    key.get((s, a, "group", "all"), {}).get(m) for s in settings for m in grp
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
    first = key.get((settings[0], arms[0], "evidence", "all"), {}) if arms else {}
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
        "tables": tables,
    }
