"""The update anomaly (docs/MEASUREMENT.md §2, docs/STUDY.md §4): restated facts, their repair.

A denormalised store writes one fact into many memories ("restatements"); when the fact
changes every one must be found and updated, where a normalised schema updates one
``facts`` row. :func:`restatement_stats` (from :mod:`agentmem.corpus.spec`) counts the
restatements per fact; :func:`repair_probe` runs the top-``k`` search an agent would run
before rewriting a fact, on every arm, and measures how many restatements it reaches and
the share left stale; :func:`run_anomaly_probe` writes the one-row CSV
``arm,facts_probed,mean_reached,mean_total,stale_fraction``. Definitions and the study's
number: ``docs/experiments/anomaly.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from agentmem.arms.base import Arm
from agentmem.config import AnomalyConfig
from agentmem.corpus.io import load_corpus, load_qrels, load_queries
from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.corpus.spec import restatement_counts, restatement_stats
from agentmem.embeddings import load_embeddings
from agentmem.io import write_csv, write_json
from agentmem.trials import TrialError, require_dir

__all__ = [
    "ANOMALY_COLUMNS",
    "repair_probe",
    "restatement_counts",
    "restatement_stats",
    "run_anomaly_probe",
    "select_probe_queries",
    "write_restatement_stats",
]

log = logging.getLogger(__name__)

#: Columns of ``results/trials/anomaly.csv``, in order.
ANOMALY_COLUMNS = ("arm", "facts_probed", "mean_reached", "mean_total", "stale_fraction")


def write_restatement_stats(corpus_dir: str | Path, out_path: str | Path) -> dict[str, Any]:
    """Compute :func:`restatement_stats` for a corpus directory and write it as JSON.

    Args:
        corpus_dir: a corpus directory (``memories.parquet``).
        out_path: JSON file, written atomically.

    Returns:
        The statistics dict.

    Raises:
        agentmem.corpus.io.CorpusError: when the corpus directory or a file is missing.
    """
    stats = restatement_stats(load_corpus(corpus_dir).memories)
    write_json(out_path, stats)
    return stats


def select_probe_queries(
    queries: pl.DataFrame, qrels: pl.DataFrame, memories: pl.DataFrame, n: int
) -> list[tuple[str, str]]:
    """The questions the repair probe asks, as the study chose them.

    Queries are taken in class order (:data:`~agentmem.corpus.queries.QUERY_CLASSES`:
    lexical, semantic, temporal, provenance, currency, aggregate, negation, hybrid) and
    ``query_id`` order within a class. A query qualifies when all its relevant memories
    restate one fact (provenance questions span many facts and never do) and that fact
    has at least two restatements; the first ``n`` qualifying queries are returned.

    Args:
        queries: ``queries.parquet`` (query_id, class).
        qrels: ``qrels.parquet`` (query_id, memory_id).
        memories: ``memories.parquet`` (memory_id, fact_id, form).
        n: questions wanted (>= 1).

    Returns:
        ``[(query_id, fact_id), ...]``, at most ``n``, in asking order.

    Raises:
        ValueError: when ``n < 1`` or no query qualifies.
    """
    if n < 1:
        raise ValueError(f"need at least one fact to probe, got facts={n}")
    totals = dict(restatement_counts(memories).iter_rows())
    fact_of = dict(
        memories.filter(pl.col("fact_id").is_not_null()).select("memory_id", "fact_id").iter_rows()
    )
    facts_of: dict[str, set[str | None]] = {}
    for qid, mid in qrels.select("query_id", "memory_id").iter_rows():
        facts_of.setdefault(qid, set()).add(fact_of.get(mid))
    rank = {c: i for i, c in enumerate(QUERY_CLASSES)}
    ordered = sorted(
        queries.select("query_id", "class").iter_rows(),
        key=lambda r: (rank.get(r[1], len(rank)), r[0]),
    )
    out: list[tuple[str, str]] = []
    for qid, _cls in ordered:
        fs = facts_of.get(qid, set())
        if len(fs) != 1:
            continue
        (fid,) = fs
        if fid is not None and totals.get(fid, 0) >= 2:
            out.append((qid, fid))
            if len(out) == n:
                break
    if not out:
        raise ValueError("no question targets a fact with two or more restatements")
    return out


def repair_probe(
    arm: Arm,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    facts: int = 120,
    k: int = 10,
) -> dict[str, Any]:
    """Run the top-``k`` repair search on an open arm, as the study ran it.

    For each question :func:`select_probe_queries` picks, the arm gets the corpus query
    itself (text, its all-MiniLM-L6-v2 embedding from ``embeddings_path``, its structured
    predicate) and returns its top ``k``. ``reached`` = restatements of the question's
    fact among the distinct returned ids, ``total`` = that fact's restatements
    (:func:`restatement_counts`).

    Args:
        arm: an arm already built or opened (not closed here).
        corpus_dir: the corpus the arm was built from (memories, queries, qrels).
        embeddings_path: the corpus's embeddings file (holds every query vector).
        facts: questions (hence facts) to probe (fewer if fewer qualify).
        k: results per repair search.

    Returns:
        ``{"arm": arm.name, "facts_probed": int, "mean_reached": float,
        "mean_total": float, "stale_fraction": float}`` with
        ``stale_fraction = 1 - sum(reached) / sum(total)``: the share of restatements the
        repair leaves unfound, hence stale (docs/STUDY.md §4: 63.9 % at k = 10 on pg-hybrid).

    Raises:
        ValueError: when ``k < 1``, ``facts < 1`` or no question qualifies.
        agentmem.corpus.io.CorpusError: missing corpus files or query vectors.
        FileNotFoundError: the embeddings file is missing.
        agentmem.arms.base.ArmError: the arm failed.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    corpus = load_corpus(corpus_dir)
    mem = corpus.memories
    queries = pl.read_parquet(Path(corpus_dir) / "queries.parquet")
    chosen = select_probe_queries(queries, load_qrels(corpus_dir), mem, facts)
    asked = {q.query_id: q for q in load_queries(corpus_dir, load_embeddings(embeddings_path))}
    totals = dict(restatement_counts(mem).iter_rows())
    forms = mem["form"].to_list() if "form" in mem.columns else [None] * mem.height
    fact_of = {
        mid: fid
        for mid, fid, form in zip(mem["memory_id"], mem["fact_id"], forms, strict=True)
        if fid is not None and form != "distractor"
    }
    log.info("%s: repair probe over %d facts", arm.name, len(chosen))
    reached: list[int] = []
    total: list[int] = []
    for qid, fid in chosen:
        ids = set(arm.query(asked[qid], k).memory_ids[:k])
        reached.append(sum(1 for i in ids if fact_of.get(i) == fid))
        total.append(int(totals[fid]))
    return {
        "arm": arm.name,
        "facts_probed": len(chosen),
        "mean_reached": float(np.mean(reached)),
        "mean_total": float(np.mean(total)),
        "stale_fraction": 1.0 - sum(reached) / sum(total),
    }


def run_anomaly_probe(
    arm_name: str,
    arm_params: dict[str, Any] | None,
    store_dir: str | Path,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    out_csv: str | Path,
    settings: AnomalyConfig | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Open an arm's existing store, run :func:`repair_probe`, close, write the CSV row.

    The store is the one an earlier job built under ``results/stores/{size}/{arm}``; it
    is opened with ``arm.open(store_dir)`` and never rebuilt. The arm is closed (embedded
    servers stopped) even when the probe fails.

    Args:
        arm_name: registered arm name (``agentmem.arms.ARMS``).
        arm_params: constructor parameters from the config, or ``None``.
        store_dir: the built store directory.
        corpus_dir: the corpus the store was built from.
        embeddings_path: the corpus's embeddings file (query vectors).
        out_csv: the one-row CSV ``arm,facts_probed,mean_reached,mean_total,
            stale_fraction``, written atomically.
        settings: config ``trials.anomaly`` (a mapping is validated through
            :class:`~agentmem.config.AnomalyConfig`; None: its defaults): ``facts`` to
            probe and ``k`` results per repair search.

    Returns:
        The row written (see :func:`repair_probe`).

    Raises:
        TrialError: naming ``store_dir`` when it is missing, not a directory or empty.
        KeyError: unknown arm.
        agentmem.arms.base.ArmError: the store cannot be opened or queried.
        agentmem.corpus.io.CorpusError: the corpus or a query vector is missing.
        pydantic.ValidationError: ``settings`` out of its bounds.
    """
    from agentmem.runner import opened  # runner imports the full arm registry

    store = require_dir(store_dir, writable=False, what=f"{arm_name} store directory")
    if not any(store.iterdir()):
        raise TrialError(f"{arm_name} store directory {store} is empty (build the arm first)")
    with opened(arm_name, arm_params, store) as arm:
        cfg = AnomalyConfig.model_validate(settings or {})
        row = repair_probe(arm, corpus_dir, embeddings_path, cfg.facts, cfg.k)
    row = {
        "arm": arm_name,
        "facts_probed": int(row["facts_probed"]),
        "mean_reached": round(row["mean_reached"], 6),
        "mean_total": round(row["mean_total"], 6),
        "stale_fraction": round(row["stale_fraction"], 6),
    }
    write_csv(
        out_csv,
        pl.DataFrame(
            {c: [row[c]] for c in ANOMALY_COLUMNS},
            schema={
                "arm": pl.String,
                "facts_probed": pl.Int64,
                "mean_reached": pl.Float64,
                "mean_total": pl.Float64,
                "stale_fraction": pl.Float64,
            },
        ),
    )
    return row
