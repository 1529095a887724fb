"""Ablation sweep: what each design choice of an arm is worth, one choice removed at a time.

An arm declares its ablations (:attr:`~agentmem.arms.base.ArmBase.ablations`: variant
name -> constructor overrides). The sweep reopens the arm's built store at the main size
with its configured parameters, then with each variant's overrides on top, runs every
query once (untimed) and scores nDCG@10 and recall@10 per query class and overall, with
the change from the configured arm. The configured arm's answers are those of the
pipeline's run on that store, when it is given; a variant the arm shows cannot fire on the
store (:meth:`~agentmem.arms.base.ArmBase.inert_ablations`) is scored from the configured
answers, with the reason in its ``inert`` column. Output ``results/sweeps/ablation.csv``;
the recommended design's page (docs/arms/sqlite-gated.md) reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.arms import ARMS
from agentmem.metrics import ndcg_at_k, ranked_lists, recall_at_k

#: The name of the unchanged arm's rows.
CONFIGURED = "as configured"
#: Columns of the sweep table.
ABLATION_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String,
    "variant": pl.String,
    "overrides": pl.String,
    "query_class": pl.String,
    "queries": pl.Int64,
    "ndcg_at_10": pl.Float64,
    "recall_at_10": pl.Float64,
    "ndcg_change": pl.Float64,
    "inert": pl.String,
}


def ablated_arms(arm_names: Iterable[str]) -> list[str]:
    """The configured arms that declare ablations, in the order given."""
    return [a for a in arm_names if getattr(ARMS.get(a), "ablations", None)]


def _scores(
    arm: Any,
    queries: list,
    rel: Mapping[str, set[str]],
    k: int,
    answers: Mapping[str, list[str]] | None = None,
) -> pl.DataFrame:
    """nDCG@k and recall@k per query that has relevant memories (the others are skipped).

    ``answers`` (query id -> ids, best first) replaces the arm's calls when given.

    Raises:
        ValueError: when ``answers`` lacks a query.
    """
    rows = []
    for q in queries:
        want = rel.get(q.query_id)
        if not want:  # e.g. a LoCoMo question whose evidence no observation covers
            continue
        if answers is None:
            ids = arm.query(q, k).memory_ids
        elif q.query_id in answers:
            ids = answers[q.query_id][:k]
        else:
            raise ValueError(f"the configured arm's run lacks query {q.query_id!r}")
        rows.append((q.query_class, ndcg_at_k(ids, want, k), recall_at_k(ids, want, k)))
    return pl.DataFrame(rows, schema=["query_class", "ndcg", "recall"], orient="row")


def run_answers(path: str | Path) -> dict[str, list[str]]:
    """``{query_id: memory ids by rank}`` of a runs Parquet (a null id: an empty answer)."""
    return ranked_lists(pl.read_parquet(path, columns=["query_id", "rank", "memory_id"]))


def ablation_sweep(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    stores: Mapping[str, str | Path],
    k: int = 10,
    arm_params: Mapping[str, Mapping[str, Any] | None] | None = None,
    progress: bool = True,
    runs: Mapping[str, str | Path] | None = None,
    run_k: int = 0,
) -> pl.DataFrame:
    """Score each arm in ``stores`` as configured and under each of its ablations.

    Args:
        corpus_dir: corpus directory (queries and qrels Parquet files).
        embeddings_path: the size's embeddings Parquet (query vectors).
        stores: ``{arm name: store directory built by the pipeline}``; arms without
            ablations are skipped.
        k: the cut-off of nDCG and recall (the columns are named for the configured 10,
            as in ``by_class.csv``).
        arm_params: arm name -> configured constructor parameters.
        progress: show a tqdm bar per arm.
        runs: ``{arm name: runs Parquet}`` of the configured arms on these queries (the
            pipeline's run on the same store, at ``run_k``): an arm's configured rows are
            scored from it instead of asking every query again, when ``run_k >= k`` and
            the arm answers ``k`` with the first ``k`` of its answer at ``run_k``
            (:func:`agentmem.arms.base.prefix_stable_at`).
        run_k: the cut-off ``runs`` were made with.

    Returns:
        Columns :data:`ABLATION_SCHEMA`: one row per arm × variant × class (``all`` last:
        every query with relevant memories; the others are skipped), ``ndcg_change`` the
        variant's nDCG@10 minus the configured arm's, ``inert`` why the variant cannot
        change an answer on this store (scored from the configured answers), else null.

    Raises:
        TypeError: when an ablation names a parameter the arm does not take;
        ValueError: when it gives one a value the arm refuses, or a run in ``runs``
            lacks a query;
        ``agentmem.arms.base.ArmError``: when a store does not open.
    """
    # here, not at the top: the workflow's DAG imports this module for ablated_arms only
    from tqdm import tqdm

    from agentmem.arms.base import inert_ablations, prefix_stable_at
    from agentmem.arms.factory import make_arm
    from agentmem.corpus.io import load_qrels, load_queries
    from agentmem.embeddings import load_embeddings
    from agentmem.runner import opened

    vectors = load_embeddings(embeddings_path)
    queries = load_queries(corpus_dir, vectors)
    rel: dict[str, set[str]] = {}
    for qid, mid in load_qrels(corpus_dir).select("query_id", "memory_id").iter_rows():
        rel.setdefault(qid, set()).add(mid)
    frames = []
    for name, store in stores.items():
        variants = {CONFIGURED: {}, **getattr(ARMS[name], "ablations", {})}
        if len(variants) == 1:
            continue
        base = dict((arm_params or {}).get(name) or {})
        with opened(name, base, store) as arm:
            inert = inert_ablations(arm)
        baseline: dict[str, float] = {}
        configured = pl.DataFrame()
        for variant, overrides in tqdm(
            variants.items(), desc=f"{name}: ablations", unit="variant", disable=not progress
        ):
            run = (runs or {}).get(name) if variant == CONFIGURED and run_k >= k else None
            if variant in inert:
                s = configured
            elif run is not None and (run_k == k or prefix_stable_at(make_arm(name, base), run_k)):
                s = _scores(None, queries, rel, k, run_answers(run))
            else:
                with opened(name, {**base, **overrides}, store) as arm:
                    s = _scores(arm, queries, rel, k)
            by = (
                s.group_by("query_class", maintain_order=True)
                .agg(queries=pl.len(), ndcg_at_10=pl.mean("ndcg"), recall_at_10=pl.mean("recall"))
                .vstack(
                    s.select(
                        query_class=pl.lit("all"),
                        queries=pl.len(),
                        ndcg_at_10=pl.mean("ndcg"),
                        recall_at_10=pl.mean("recall"),
                    )
                )
            )
            if variant == CONFIGURED:
                baseline = dict(zip(by["query_class"], by["ndcg_at_10"], strict=True))
                configured = s
            frames.append(
                by.with_columns(
                    arm=pl.lit(name),
                    variant=pl.lit(variant),
                    overrides=pl.lit(", ".join(f"{p}={v}" for p, v in overrides.items())),
                    ndcg_change=pl.col("ndcg_at_10")
                    - pl.col("query_class").replace_strict(baseline, return_dtype=pl.Float64),
                    inert=pl.lit(inert.get(variant), dtype=pl.String),
                )
            )
    if not frames:
        return pl.DataFrame(schema=ABLATION_SCHEMA)
    out = pl.concat(frames).with_columns(pl.col("queries").cast(pl.Int64))
    return out.select(list(ABLATION_SCHEMA))


def ablation_markdown(table: pl.DataFrame) -> str:
    """The sweep as Markdown: a row per arm × variant, nDCG@10 per class (change below).

    An inert variant (its ``inert`` reason set) is marked ``*`` and its reason listed under
    the table.
    """
    if table.height == 0:
        return "No configured arm declares ablations.\n"
    classes = list(dict.fromkeys(table["query_class"].to_list()))
    head = ["arm", "variant", *classes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes: list[str] = []
    for (arm, variant), g in table.group_by(["arm", "variant"], maintain_order=True):
        why = g["inert"][0] if "inert" in g.columns else None
        if why is not None:
            notes.append(f"- {arm}, {variant}: {why}.")
            variant = f"{variant} *"
        cell = {
            r["query_class"]: (
                f"{r['ndcg_at_10']:.3f}"
                if variant == CONFIGURED
                else f"{r['ndcg_at_10']:.3f} ({r['ndcg_change']:+.3f})"
            )
            for r in g.iter_rows(named=True)
        }
        lines.append("| " + " | ".join([arm, variant, *[cell.get(c, "") for c in classes]]) + " |")
    if notes:
        lines += [
            "",
            "\\* inert: the store holds nothing the removed choice acts on, so every answer is "
            "the configured arm's (scored from those, not asked again):",
            *notes,
        ]
    return "\n".join(lines) + "\n"
