"""The update anomaly (DESIGN §6, REFERENCE §4): restated facts and the repair they need.

A denormalised memory store writes the same fact into many memories ("restatements"):
the first rendering, later paraphrases, the correction. When the fact changes, *every*
restatement must be found and updated, or stale copies keep answering. A normalised
schema (one ``facts`` row per fact, memories referring to it by ``fact_id``) updates
exactly one row. This module measures both sides:

- :func:`restatement_stats`: how many memories restate each fact (mean, median, p90,
  max), and so how many rows one change touches: normalised 1, denormalised the mean
  number of restatements.
- :func:`repair_probe`: the search an agent would run to find the copies it must
  update ("What do we know about CFG-799?", no predicate, top-``k``) on an already-built
  arm; how many restatements it reaches, and the fraction it leaves stale. The study
  measured 1.52 of 4.2 restatements reached by a top-10 repair over 120 facts, 63.9%
  stale (REFERENCE §4).
- :func:`run_anomaly_probe`: open a store built by an earlier job, probe, close, and
  write the one-row CSV ``arm,facts_probed,mean_reached,mean_total,stale_fraction``.

A *restatement* of fact ``F`` is any memory with ``fact_id == F`` that is not a
distractor (forms ``id``, ``para`` and ``correction``; distractors mention the record's
identifier but assert nothing and carry no ``fact_id``).
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from agentmem.arms.base import Arm, Corpus, Query
from agentmem.corpus.io import load_corpus
from agentmem.embeddings import DIM, embed_texts, encode, read_cache, text_sha256
from agentmem.io import write_csv, write_json
from agentmem.trials import TrialError, require_dir

__all__ = [
    "ANOMALY_COLUMNS",
    "REPAIR_QUESTION",
    "repair_probe",
    "restatement_counts",
    "restatement_stats",
    "run_anomaly_probe",
    "select_facts",
    "write_restatement_stats",
]

log = logging.getLogger(__name__)

#: The repair search an agent runs to find every copy of a fact it must update.
REPAIR_QUESTION = "What do we know about {subject_id}?"
#: Columns of ``results/trials/anomaly.csv`` (issue 4), in order.
ANOMALY_COLUMNS = ("arm", "facts_probed", "mean_reached", "mean_total", "stale_fraction")


def restatement_counts(memories: pl.DataFrame) -> pl.DataFrame:
    """Count the restatements of each fact.

    Args:
        memories: the memories table; needs ``fact_id`` (null for distractors) and, when
            present, ``form`` (rows with ``form == "distractor"`` are excluded even if
            they carry a ``fact_id``).

    Returns:
        DataFrame ``(fact_id str, restatements u32)``, one row per fact that has at least
        one restatement, sorted by ``fact_id``.

    Raises:
        ValueError: when ``memories`` has no ``fact_id`` column.
    """
    if "fact_id" not in memories.columns:
        raise ValueError(f"memories lack a fact_id column (columns: {memories.columns})")
    m = memories.filter(pl.col("fact_id").is_not_null())
    if "form" in m.columns:
        m = m.filter(pl.col("form").fill_null("") != "distractor")
    return (
        m.group_by("fact_id")
        .agg(pl.len().alias("restatements"))
        .sort("fact_id")
        .select("fact_id", "restatements")
    )


def restatement_stats(memories: pl.DataFrame) -> dict[str, Any]:
    """Restatements per fact and the rows one change of a fact must update.

    Restatements of fact ``F`` = memories with ``fact_id == F``, distractors excluded
    (corrections count: they state the fact too). Statistics are over the facts that
    have at least one restatement:

    - ``mean``: arithmetic mean.
    - ``median``: the middle value, the mean of the two middle values for an even count.
    - ``p90``: nearest-rank 90th percentile, i.e. the smallest count ``c`` such that at
      least 90% of facts have ``<= c`` restatements (``numpy.percentile`` with
      ``method="inverted_cdf"``; Hyndman & Fan 1996, definition 1).
    - ``max``: the largest count.
    - ``rows_to_update_normalised``: 1 — with a normalised schema the fact lives in one
      ``facts`` row and memories refer to it by key, so a change is one ``UPDATE``.
    - ``rows_to_update_denormalised``: ``mean`` — when each memory carries its own copy
      of the fact, a change must rewrite every memory that restates it, on average
      ``mean`` rows (and first find them all, see :func:`repair_probe`).

    Args:
        memories: the memories table (see :func:`restatement_counts`).

    Returns:
        ``{"facts": int, "mean": float, "median": float, "p90": float, "max": int,
        "rows_to_update_normalised": 1, "rows_to_update_denormalised": float}``; with no
        restated fact, ``facts`` is 0 and the statistics are 0.

    Raises:
        ValueError: when ``memories`` has no ``fact_id`` column.
    """
    counts = restatement_counts(memories)["restatements"].to_numpy()
    if counts.size == 0:
        return {
            "facts": 0,
            "mean": 0.0,
            "median": 0.0,
            "p90": 0.0,
            "max": 0,
            "rows_to_update_normalised": 1,
            "rows_to_update_denormalised": 0.0,
        }
    mean = float(counts.mean())
    return {
        "facts": int(counts.size),
        "mean": mean,
        "median": float(np.median(counts)),
        "p90": float(np.percentile(counts, 90, method="inverted_cdf")),
        "max": int(counts.max()),
        "rows_to_update_normalised": 1,
        "rows_to_update_denormalised": mean,
    }


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


def select_facts(memories: pl.DataFrame, n: int, seed: int = 7) -> list[str]:
    """Pick up to ``n`` facts with at least two restatements, deterministically.

    The eligible fact ids are sorted, then ``random.Random(seed).sample`` draws
    ``min(n, eligible)`` of them; the result is returned sorted. Same memories and seed
    → same facts.

    Args:
        memories: the memories table (see :func:`restatement_counts`).
        n: facts wanted (>= 1).
        seed: RNG seed.

    Returns:
        Sorted fact ids (fewer than ``n`` when fewer facts are eligible).

    Raises:
        ValueError: when ``n < 1`` or no fact has two or more restatements.
    """
    if n < 1:
        raise ValueError(f"need at least one fact to probe, got facts={n}")
    counts = restatement_counts(memories)
    eligible = counts.filter(pl.col("restatements") >= 2)["fact_id"].sort().to_list()
    if not eligible:
        raise ValueError("no fact has two or more restatements; nothing to repair")
    return sorted(random.Random(seed).sample(eligible, min(n, len(eligible))))


def _probe_vectors(
    texts: list[str], embeddings_path: str | Path | None, cache_dir: str | Path | None
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts``: reused by sha256 from the embeddings file / cache, else encoded.

    The corpus's own lexical questions often are exactly the repair question, so their
    vectors are already in the embeddings file (column ``sha256`` = sha256 of the text).
    Every text not found there is encoded in one batch with the real model.

    Returns:
        ``(float32 array (len(texts), 384), number of texts encoded)``.
    """
    known: dict[str, np.ndarray] = {}
    if cache_dir is not None:
        known.update(read_cache(Path(cache_dir)))
    if embeddings_path is not None:
        p = Path(embeddings_path)
        if not p.is_file():
            raise FileNotFoundError(f"embeddings file {p} does not exist")
        t = pq.read_table(p, columns=["sha256", "vector"])
        arr = t.column("vector").combine_chunks()
        mat = arr.values.to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(arr), DIM)
        known.update(zip(t.column("sha256").to_pylist(), mat, strict=True))
    keys = [text_sha256(t) for t in texts]
    todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
    if todo:
        fresh = encode([t for _, t in todo])
        known.update(zip([k for k, _ in todo], fresh, strict=True))
    if not keys:
        return np.zeros((0, DIM), np.float32), 0
    out = np.stack([known[k] for k in keys]).astype(np.float32)
    return out, len(todo)


def _repair_questions(
    corpus: Corpus, corpus_dir: str | Path, facts: int, seed: int
) -> tuple[list[str], list[str]]:
    """The facts :func:`select_facts` picks and their repair questions, in that order.

    Raises:
        ValueError: see :func:`select_facts`.
        KeyError: a chosen fact has no row in ``facts.parquet``.
    """
    chosen = select_facts(corpus.memories, facts, seed)
    assert corpus.facts is not None
    subject = dict(
        zip(corpus.facts["fact_id"].to_list(), corpus.facts["subject_id"].to_list(), strict=True)
    )
    missing = [f for f in chosen if f not in subject]
    if missing:
        raise KeyError(f"facts {missing[:5]} have no row in {Path(corpus_dir) / 'facts.parquet'}")
    return chosen, [REPAIR_QUESTION.format(subject_id=subject[f]) for f in chosen]


def embed_repair_questions(
    corpus_dir: str | Path,
    out_path: str | Path,
    cache_dir: str | Path,
    facts: int = 120,
    seed: int = 7,
    batch_size: int = 64,
) -> dict[str, int]:
    """Embed the repair questions of :func:`repair_probe` once, for every arm's probe.

    The questions (``"What do we know about CFG-799?"``) for the facts
    :func:`select_facts` picks go through the shared embedding cache
    (:func:`agentmem.embeddings.embed_texts`; many equal a lexical query of the corpus and
    are cache hits), so the per-arm probe jobs never load the model.

    Args:
        corpus_dir: the corpus directory (memories and facts).
        out_path: Parquet file to write: ``id`` (``repair-<fact_id>``), ``sha256``,
            ``vector`` (float32[384]).
        cache_dir: the embedding-cache directory.
        facts: facts to probe (as given to :func:`repair_probe`).
        seed: fact-selection seed (as given to :func:`repair_probe`).
        batch_size: encoder batch size.

    Returns:
        ``{"texts": n, "cached": hits, "encoded": misses}``.

    Raises:
        ValueError, KeyError: see :func:`select_facts` and :func:`repair_probe`.
        agentmem.corpus.io.CorpusError: missing corpus files.
    """
    corpus = load_corpus(corpus_dir)
    chosen, texts = _repair_questions(corpus, corpus_dir, facts, seed)
    ids = [f"repair-{fid}" for fid in chosen]
    return embed_texts(ids, texts, out_path, cache_dir, batch_size=batch_size, progress=False)


def repair_probe(
    arm: Arm,
    corpus_dir: str | Path,
    embeddings_path: str | Path | None,
    facts: int = 120,
    k: int = 10,
    seed: int = 7,
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Run the top-``k`` repair search for ``facts`` restated facts on an open arm.

    For each fact chosen by :func:`select_facts`, the arm gets the query
    ``"What do we know about {subject_id}?"`` (``subject_id`` from ``facts.parquet``,
    e.g. ``CFG-799``) with its real all-MiniLM-L6-v2 embedding and no predicate.
    ``reached`` = restatements of that fact among the (distinct) returned ids,
    ``total`` = its restatements (:func:`restatement_counts`).

    Args:
        arm: an arm already built or opened (not closed here).
        corpus_dir: the corpus the arm was built from (memories and facts).
        embeddings_path: the corpus's embeddings file; probe texts whose sha256 is in it
            reuse that vector; ``None`` to skip.
        facts: facts to probe (fewer if fewer have >= 2 restatements).
        k: results per repair search.
        seed: fact-selection seed.
        cache_dir: optional embedding-cache directory (sha256 shards) to reuse vectors
            from as well; texts found nowhere are encoded in one batch.

    Returns:
        ``{"arm": arm.name, "facts_probed": int, "mean_reached": float,
        "mean_total": float, "stale_fraction": float}`` with
        ``stale_fraction = 1 - sum(reached) / sum(total)``: the share of restatements the
        repair leaves unfound, hence stale (REFERENCE §4: 63.9% at k = 10).

    Raises:
        ValueError: when ``k < 1``, ``facts < 1`` or no fact has >= 2 restatements.
        agentmem.corpus.io.CorpusError: missing corpus files.
        KeyError: a chosen fact has no row in ``facts.parquet``.
        agentmem.arms.base.ArmError: the arm failed.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    corpus = load_corpus(corpus_dir)
    mem = corpus.memories
    chosen, texts = _repair_questions(corpus, corpus_dir, facts, seed)
    totals = dict(restatement_counts(mem).iter_rows())
    fact_of = {
        mid: fid
        for mid, fid, form in zip(
            mem["memory_id"].to_list(),
            mem["fact_id"].to_list(),
            mem["form"].to_list() if "form" in mem.columns else [None] * mem.height,
            strict=True,
        )
        if fid is not None and form != "distractor"
    }
    vecs, encoded = _probe_vectors(texts, embeddings_path, cache_dir)
    log.info("%s: repair probe over %d facts (%d texts encoded)", arm.name, len(chosen), encoded)
    reached: list[int] = []
    total: list[int] = []
    for fid, text, vec in zip(chosen, texts, vecs, strict=True):
        q = Query(
            query_id=f"repair-{fid}",
            text=text,
            embedding=np.asarray(vec, dtype=np.float32),
            predicate=None,
            wants_count=False,
            query_class="repair",
        )
        ids = set(arm.query(q, k).memory_ids[:k])
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
    embeddings_path: str | Path | None,
    out_csv: str | Path,
    facts: int = 120,
    k: int = 10,
    seed: int = 7,
    cache_dir: str | Path | None = None,
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
        embeddings_path: the corpus's embeddings file (vectors reused by text sha256).
        out_csv: the one-row CSV ``arm,facts_probed,mean_reached,mean_total,
            stale_fraction``, written atomically.
        facts: facts to probe.
        k: results per repair search.
        seed: fact-selection seed.
        cache_dir: optional embedding-cache directory.

    Returns:
        The row written (see :func:`repair_probe`).

    Raises:
        TrialError: naming ``store_dir`` when it is missing or not a directory.
        KeyError: unknown arm.
        agentmem.arms.base.ArmError: the store cannot be opened or queried.
    """
    from agentmem.runner import make_arm  # runner imports the full arm registry

    store = require_dir(store_dir, writable=False, what=f"{arm_name} store directory")
    if not any(store.iterdir()):
        raise TrialError(f"{arm_name} store directory {store} is empty (build the arm first)")
    arm = make_arm(arm_name, arm_params)
    try:
        arm.open(store)
        row = repair_probe(arm, corpus_dir, embeddings_path, facts, k, seed, cache_dir)
    finally:
        arm.close()
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
