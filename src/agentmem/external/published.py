"""Published LoCoMo retrieval figures, as data with their source, and our rows beside them.

Two sets (``docs/LOCOMO.md``, "Published figures"):

- the LoCoMo paper's retrieval table (Maharana et al. 2024), DRAGON retriever, evidence
  recall at k within one conversation per memory unit (turns, observations, session
  summaries): values as quoted by secondary sources (docs/STUDY.md §8), not read from the paper;
- session-level anchors over 1,978 questions (BM25; BM25 + dense max-sim fusion) reported
  in public work (docs/STUDY.md §6).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.external.score import HELD_OUT
from agentmem.io import write_text

DRAGON_SOURCE = (
    "LoCoMo paper (Maharana et al., ACL 2024), retrieval table, DRAGON retriever, "
    "retrieval within one conversation; values as quoted by secondary sources"
)
ANCHOR_SOURCE = "session-level LoCoMo retrieval over 1,978 questions reported in public work"

#: DRAGON evidence recall@k by unit and category (fractions), LoCoMo paper as quoted
DRAGON: dict[str, dict[tuple[str, int], float]] = {
    "turns": {
        ("all", 5): 0.567,
        ("all", 10): 0.662,
        ("all", 25): 0.767,
        ("all", 50): 0.827,
        ("multi-hop", 10): 0.466,
        ("open-domain", 10): 0.408,
    },
    "observations": {("all", 5): 0.562, ("all", 10): 0.613, ("all", 50): 0.712},
    "summaries": {("all", 5): 0.721, ("all", 10): 0.847},
}

#: published session-level retrieval over 1,978 questions (docs/STUDY.md §6)
ANCHORS = (
    {
        "system": "BM25 (published)",
        "hit_at_1": 0.640,
        "recall_at_5": 0.833,
        "ndcg_at_5": 0.746,
        "n_questions": 1978,
    },
    {
        "system": "BM25 + dense max-sim fusion (published)",
        "hit_at_1": 0.752,
        "recall_at_5": 0.894,
        "ndcg_at_5": 0.829,
        "n_questions": 1978,
    },
)

PUBLISHED_SCHEMA = {
    "system": pl.String,
    "unit": pl.String,
    "level": pl.String,
    "category": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "n_questions": pl.Int64,
    "source": pl.String,
}


def _rows() -> list[dict[str, Any]]:
    rows = [
        {
            "system": "DRAGON (LoCoMo paper)",
            "unit": unit,
            "level": "evidence",
            "category": cat,
            "metric": f"recall_at_{k}",
            "value": v,
            "n_questions": None,
            "source": DRAGON_SOURCE,
        }
        for unit, table in DRAGON.items()
        for (cat, k), v in table.items()
    ]
    rows += [
        {
            "system": a["system"],
            "unit": "turns",
            "level": "group",
            "category": "all",
            "metric": m,
            "value": a[m],
            "n_questions": a["n_questions"],
            "source": ANCHOR_SOURCE,
        }
        for a in ANCHORS
        for m in ("hit_at_1", "recall_at_5", "ndcg_at_5")
    ]
    return rows


#: every published figure, one row each (columns of :data:`PUBLISHED_SCHEMA`)
PUBLISHED: tuple[dict[str, Any], ...] = tuple(_rows())


def published(unit: str | None = None) -> pl.DataFrame:
    """The published figures as a table, optionally of one LoCoMo unit.

    Args:
        unit: ``turns``, ``observations`` or ``summaries``; None for all.

    Returns:
        system, unit, level (``evidence``: proportional evidence recall; ``group``:
        session level), category, metric (a column name of the scores table), value
        (fraction), n_questions (null when not stated), source. Empty for another unit.
    """
    rows = [r for r in PUBLISHED if unit is None or r["unit"] == unit]
    return pl.DataFrame(rows, schema=PUBLISHED_SCHEMA)


def anchors() -> pl.DataFrame:
    """Published session-level LoCoMo retrieval anchors (docs/STUDY.md §6), to print beside ours.

    Returns:
        system, hit_at_1, recall_at_5, ndcg_at_5, n_questions: BM25 (Hit@1 .640, R@5 .833,
        nDCG@5 .746) and BM25 + dense max-sim fusion (.752, .894, .829), both over 1,978
        questions.
    """
    return pl.DataFrame(
        list(ANCHORS),
        schema={
            "system": pl.String,
            "hit_at_1": pl.Float64,
            "recall_at_5": pl.Float64,
            "ndcg_at_5": pl.Float64,
            "n_questions": pl.Int64,
        },
    )


def _f(v: float | None) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def _evidence_table(t: pl.DataFrame, unit: str) -> list[str]:
    ks = (5, 10, 25, 50)
    cats = ("multi-hop", "open-domain")
    head = [f"R@{k}" for k in ks] + [f"R@10 {c}" for c in cats]
    lines = [
        "| system | setting | questions | " + " | ".join(head) + " |",
        "|---|---|---:|" + "---:|" * len(head),
    ]
    ev = t.filter(pl.col("level") == "evidence")
    for (setting, arm), g in ev.group_by(["setting", "arm"], maintain_order=True):
        by = {r["category"]: r for r in g.iter_rows(named=True)}
        a = by.get("all")
        if a is None:
            continue
        vals = [a[f"recall_at_{k}"] for k in ks]
        vals += [by[c]["recall_at_10"] if c in by else None for c in cats]
        lines.append(
            f"| {arm} | {setting} | {a['n_queries']:,} | " + " | ".join(map(_f, vals)) + " |"
        )
        held = by.get(HELD_OUT)
        if held is not None:  # the questions outside the entry's tuning scopes
            vals = [held[f"recall_at_{k}"] for k in ks] + [None] * len(cats)
            lines.append(
                f"| {arm} | {setting}, {HELD_OUT} | {held['n_queries']:,} | "
                + " | ".join(map(_f, vals))
                + " |"
            )
    pub = DRAGON[unit]
    vals = [pub.get(("all", k)) for k in ks] + [pub.get((c, 10)) for c in cats]
    lines.append(
        "| *DRAGON (LoCoMo paper)* | within one conversation | — | "
        + " | ".join(map(_f, vals))
        + " |"
    )
    return lines


def _group_table(t: pl.DataFrame) -> list[str]:
    lines = [
        "| system | setting | questions | Hit@1 | R@5 | nDCG@5 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    g = t.filter((pl.col("level") == "group") & (pl.col("category") == "all"))
    for r in g.iter_rows(named=True):
        lines.append(
            f"| {r['arm']} | {r['setting']} | {r['n_queries']:,} | {_f(r['hit_at_1'])} | "
            f"{_f(r['recall_at_5'])} | {_f(r['ndcg_at_5'])} |"
        )
    for a in ANCHORS:
        lines.append(
            f"| *{a['system']}* | not stated | {a['n_questions']:,} | {_f(a['hit_at_1'])} | "
            f"{_f(a['recall_at_5'])} | {_f(a['ndcg_at_5'])} |"
        )
    return lines


def _own_table(t: pl.DataFrame) -> list[str]:
    lines = [
        "| system | setting | level | questions | R@5 | R@10 | nDCG@10 | MRR | Hit@1 |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in t.filter(pl.col("category") == "all").iter_rows(named=True):
        lines.append(
            f"| {r['arm']} | {r['setting']} | {r['level']} | {r['n_queries']:,} | "
            f"{_f(r['recall_at_5'])} | {_f(r['recall_at_10'])} | {_f(r['ndcg_at_10'])} | "
            f"{_f(r['mrr'])} | {_f(r['hit_at_1'])} |"
        )
    return lines


def write_comparison_md(scores_csv: str | Path, out_md: str | Path, unit: str | None) -> str:
    """Write our rows beside the published figures of ``unit`` (Markdown, atomically).

    Args:
        scores_csv: the table written by :func:`agentmem.external.score.score_dataset`.
        out_md: the Markdown file to write.
        unit: the LoCoMo unit (``turns``, ``observations``, ``summaries``) whose published
            figures to show; None (a dataset with no published figures) writes our
            all-category rows per level only.

    Returns:
        The Markdown text.

    Raises:
        ValueError: ``unit`` is not None and has no published figures.
    """
    if unit is not None and unit not in DRAGON:
        raise ValueError(f"no published figures for unit {unit!r} (known: {', '.join(DRAGON)})")
    t = pl.read_csv(scores_csv, infer_schema_length=None)
    if unit is None:
        text = "\n".join(
            [
                "## Retrieval, all categories",
                "",
                *_own_table(t),
                "",
                "No published figures exist for this dataset.",
                "",
            ]
        )
        write_text(out_md, text)
        return text
    parts = [
        f"## LoCoMo {unit}: evidence recall beside the LoCoMo paper",
        "",
        *_evidence_table(t, unit),
        "",
        "Evidence recall is LoCoMo's own retrieval metric (task_eval/evaluation.py): per "
        "question, the share of its evidence turns covered by the top k retrieved memories "
        + {
            "turns": "(a turn covers itself)",
            "observations": "(an observation covers the turns it was drawn from)",
            "summaries": "(a session summary covers every turn of its session)",
        }[unit]
        + ", averaged over questions. Published: "
        + DRAGON_SOURCE
        + "; — = not published. The published setting is retrieval within one "
        "conversation, our `scoped` setting; `unscoped` rows pool all conversations and "
        "are not comparable. Why scoped rows need not match: the retriever (DRAGON there, "
        "each arm's own here, on all-MiniLM-L6-v2 vectors where it uses vectors), the "
        "question set (ours: every category with at least one usable evidence label; the "
        "official code also scores the 4 questions with empty evidence, as recall 1) and "
        "the category names of the quoted per-category figures, which may follow the "
        "paper's numbering rather than the file's.",
        "",
    ]
    if unit == "turns":
        parts += [
            "## LoCoMo turns: session level beside the published session anchors",
            "",
            *_group_table(t),
            "",
            "Ours: sessions ranked by their best turn among the top 50 retrieved. "
            "Published: " + ANCHOR_SOURCE + " (docs/STUDY.md §6). Why the rows need not match: "
            "the question set (1,978 there), the unit (a session-level retriever ranks whole "
            "sessions, whose longer text gives BM25 more term matches) and the published "
            "systems' tokenisation and parameters, which are not known to us.",
            "",
        ]
    text = "\n".join(parts)
    write_text(out_md, text)
    return text
