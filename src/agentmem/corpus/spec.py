"""The study's corpus specification: what a generated corpus must measure, and how close.

The study ("Persistent memory architecture in agents using DBMS", public capture
HKTITAN/dbms-agent-memory ``data/capture.json``) measured its own corpus before any arm
ran: the per-class validation table (its Table 5), the restatement distribution and the
corpus counts (docs/STUDY.md §1–2). A reproduction is only comparable when its corpus has the
same properties, so this module holds those published values with a tolerance each, and
:func:`restatement_stats` / :func:`corpus_spec_table` measure ours the same way.

The validation statistics themselves (term, rare-term and identifier overlap, cosine) are
computed by :mod:`agentmem.corpus.validation`; their definitions are in
``docs/VALIDATION.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

#: The study's Table 5 at the main size, per query class: term overlap, rare-term overlap,
#: identifier overlap, mean query–relevant cosine, relevant memories per query.
TABLE5: dict[str, dict[str, float]] = {
    "lexical": dict(
        term_overlap=0.322,
        rare_term_overlap=0.644,
        identifier_overlap=0.644,
        mean_cosine=0.277,
        relevant_per_query=2.6,
    ),
    "semantic": dict(
        term_overlap=0.586,
        rare_term_overlap=0.669,
        identifier_overlap=0.0,
        mean_cosine=0.738,
        relevant_per_query=1.77,
    ),
    "temporal": dict(
        term_overlap=0.225,
        rare_term_overlap=0.328,
        identifier_overlap=0.0,
        mean_cosine=0.400,
        relevant_per_query=2.64,
    ),
    "provenance": dict(
        term_overlap=0.033,
        rare_term_overlap=0.0,
        identifier_overlap=0.0,
        mean_cosine=0.204,
        relevant_per_query=24.1,
    ),
    "currency": dict(
        term_overlap=0.333,
        rare_term_overlap=1.0,
        identifier_overlap=1.0,
        mean_cosine=0.510,
        relevant_per_query=1.0,
    ),
    "aggregate": dict(
        term_overlap=0.119,
        rare_term_overlap=0.457,
        identifier_overlap=0.457,
        mean_cosine=0.251,
        relevant_per_query=7.0,
    ),
    "negation": dict(
        term_overlap=0.250,
        rare_term_overlap=1.0,
        identifier_overlap=1.0,
        mean_cosine=0.589,
        relevant_per_query=1.0,
    ),
    "hybrid": dict(
        term_overlap=0.302,
        rare_term_overlap=0.638,
        identifier_overlap=0.545,
        mean_cosine=0.627,
        relevant_per_query=4.72,
    ),
}
#: The study's mean cosine of random memory pairs (the baseline of Table 5).
RANDOM_PAIR_COSINE = 0.266

#: The study's restatement distribution (docs/STUDY.md §1, over the 1,695 facts with more than
#: one memory; the other 805 facts have one).
RESTATEMENTS: dict[str, float] = {
    "mean": 3.69,
    "median": 3,
    "p90": 8,
    "max": 15,
    "single_memory_facts": 805,
}
#: The study's corpus counts at the main size (docs/STUDY.md §1, manifest keys).
COUNTS: dict[str, float] = {
    "facts": 2500,
    "memories": 8282,
    "rendered": 7064,
    "distractors": 1218,
    "superseded": 844,
    "sessions": 333,
    "queries": 313,
    "tokens": 210568,
    "tokens_per_memory": 25.4,
}


@dataclass(frozen=True)
class Tolerance:
    """How far ours may be from the study's value and still match it.

    Attributes:
        text: the rule in words (shown in the tables).
        ok: ``(study, ours) -> bool``.
    """

    text: str
    ok: Callable[[float, float], bool]

    def check(self, study: float, ours: float | None) -> bool | None:
        """Whether ``ours`` matches ``study``; ``None`` when ours was not measured."""
        if ours is None or (isinstance(ours, float) and np.isnan(ours)):
            return None
        return bool(self.ok(study, float(ours)))


def absolute(tol: float) -> Tolerance:
    """``|ours − study| ≤ tol``."""
    return Tolerance(f"±{tol:g}", lambda s, o: abs(o - s) <= tol + 1e-9)


def relative(share: float) -> Tolerance:
    """``|ours − study| ≤ share · |study|``."""
    return Tolerance(f"±{share:.0%}", lambda s, o: abs(o - s) <= share * abs(s) + 1e-9)


def exact() -> Tolerance:
    """``ours == study``."""
    return Tolerance("equal", lambda s, o: abs(o - s) < 1e-9)


#: Tolerance per Table 5 statistic.
TABLE5_TOLERANCE: dict[str, Tolerance] = {
    "term_overlap": absolute(0.05),
    "rare_term_overlap": absolute(0.10),
    "identifier_overlap": absolute(0.10),
    "mean_cosine": absolute(0.05),
    "relevant_per_query": relative(0.20),
}
#: Tolerance of the random-pair cosine.
RANDOM_PAIR_TOLERANCE = absolute(0.03)
#: Tolerance per restatement statistic and per count.
SPEC_TOLERANCE: dict[str, Tolerance] = {
    "mean": absolute(0.3),
    "median": exact(),
    "p90": absolute(1),
    "max": exact(),
    "single_memory_facts": relative(0.10),
    "tokens_per_memory": relative(0.10),
    **{k: relative(0.10) for k in COUNTS if k != "tokens_per_memory"},
}


def restatement_counts(memories: pl.DataFrame) -> pl.DataFrame:
    """Count the memories that state each fact (its *restatements*).

    A restatement of fact ``F`` is a memory with ``fact_id == F`` that is not a distractor:
    the first rendering, the later ones (identifier-bearing or paraphrase) and the
    correction, if any (it states the fact's new value).

    Args:
        memories: the memories table; needs ``fact_id`` (null for distractors) and, when
            present, ``form`` (rows with ``form == "distractor"`` are excluded even if
            they carry a ``fact_id``).

    Returns:
        DataFrame ``(fact_id str, restatements u32)``, one row per fact with at least one
        memory, sorted by ``fact_id``.

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


def nearest_rank(sorted_counts: np.ndarray, p: float) -> float:
    """The study's percentile: ``c[min(n − 1, ⌊p/100 · n⌋)]`` of ascending counts ``c``.

    0-based index ``⌊p·n/100⌋``: for p = 50 the upper of the two middle values when ``n``
    is even, for p = 90 the smallest count with at least 90 % of the facts at or below it
    whenever ``0.9·n`` is not an integer.

    Raises:
        ValueError: when ``sorted_counts`` is empty.
    """
    n = len(sorted_counts)
    if n == 0:
        raise ValueError("no counts to take a percentile of")
    return float(sorted_counts[min(n - 1, int(np.floor(p / 100 * n)))])


def restatement_stats(memories: pl.DataFrame) -> dict[str, Any]:
    """Restatements per fact, as the study reports them, and the rows one change touches.

    With ``c`` the restatement counts (:func:`restatement_counts`) of the facts that have
    **more than one** memory (the study's "facts restated at least once", 1,695 of 2,500):

    - ``facts``: how many such facts; ``single_memory_facts``: facts with exactly one.
    - ``mean``: arithmetic mean of ``c``.
    - ``median``, ``p90``: :func:`nearest_rank` at 50 and 90.
    - ``max``: the largest count.
    - ``rows_to_update_normalised``: 1 — with a normalised schema the fact lives in one
      ``facts`` row and memories refer to it by key, so a change is one ``UPDATE``.
    - ``rows_to_update_denormalised``: ``mean`` — when each memory carries its own copy
      of the fact, a change must rewrite every memory that restates it.

    Args:
        memories: the memories table (see :func:`restatement_counts`).

    Returns:
        ``{"facts", "single_memory_facts", "mean", "median", "p90", "max",
        "rows_to_update_normalised", "rows_to_update_denormalised"}``; with no fact of
        two or more memories, ``facts`` is 0 and the statistics are 0.

    Raises:
        ValueError: when ``memories`` has no ``fact_id`` column.
    """
    counts = restatement_counts(memories)["restatements"].to_numpy()
    multi = np.sort(counts[counts > 1])
    single = int((counts == 1).sum())
    if multi.size == 0:
        return {
            "facts": 0,
            "single_memory_facts": single,
            "mean": 0.0,
            "median": 0.0,
            "p90": 0.0,
            "max": 0,
            "rows_to_update_normalised": 1,
            "rows_to_update_denormalised": 0.0,
        }
    mean = float(multi.mean())
    return {
        "facts": int(multi.size),
        "single_memory_facts": single,
        "mean": mean,
        "median": nearest_rank(multi, 50),
        "p90": nearest_rank(multi, 90),
        "max": int(multi.max()),
        "rows_to_update_normalised": 1,
        "rows_to_update_denormalised": mean,
    }


SPEC_SCHEMA = {
    "statistic": pl.String,
    "ours": pl.Float64,
    "study": pl.Float64,
    "tolerance": pl.String,
    "pass": pl.Boolean,
}


def corpus_spec_table(memories: pl.DataFrame, manifest: dict[str, Any]) -> pl.DataFrame:
    """The restatement distribution, tokens per memory and counts beside the study's.

    Rows (``statistic``): ``restatements mean|median|p90|max`` and
    ``single_memory_facts`` (:func:`restatement_stats`), then every key of
    :data:`COUNTS` read from the corpus manifest (``tokens_per_memory`` = mean o200k
    tokens per memory). ``pass`` applies :data:`SPEC_TOLERANCE`; it is null when the
    manifest lacks the key.

    Args:
        memories: the memories table.
        manifest: the corpus ``manifest.json`` as a dict.

    Returns:
        One row per statistic with the columns of :data:`SPEC_SCHEMA`.
    """
    stats = restatement_stats(memories)
    rows = []
    for key, study in RESTATEMENTS.items():
        name = key if key == "single_memory_facts" else f"restatements {key}"
        rows.append((name, float(stats[key]), study, SPEC_TOLERANCE[key]))
    for key, study in COUNTS.items():
        v = manifest.get(key)
        rows.append((key, None if v is None else float(v), study, SPEC_TOLERANCE[key]))
    return pl.DataFrame(
        [(n, o, s, t.text, t.check(s, o)) for n, o, s, t in rows],
        schema=SPEC_SCHEMA,
        orient="row",
    )
