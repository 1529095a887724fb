"""The published figures of the study (docs/STUDY.md §1–4), loaded from the package's data files.

The numbers live in ``data/corpus.yaml`` (§1), ``data/queries.yaml`` (§2), ``data/arms.yaml``
(§3) and ``data/experiments.yaml`` (§4), each commented with where in docs/STUDY.md it
stands; this module reads them with :mod:`importlib.resources` into the constants below
and derives the study's arm groups from the arms' declared capabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

import yaml


def _load(name: str) -> dict[str, Any]:
    """The parsed data file ``data/<name>`` of this package."""
    return yaml.safe_load((resources.files(__package__) / "data" / name).read_text("utf-8"))


def _table(doc: dict[str, Any], columns: tuple[Any, ...] | None = None) -> dict[Any, tuple]:
    """Rows of a ``{columns, rows}`` table of a data file, each row a tuple.

    Raises:
        ValueError: when the columns differ from ``columns`` (if given) or a row has
            another length than the columns.
    """
    cols = tuple(doc["columns"])
    if columns is not None and cols != columns:
        raise ValueError(f"table columns {cols} differ from {columns}")
    rows = {}
    for key, vals in doc["rows"].items():
        if len(vals) != len(cols):
            raise ValueError(f"row {key!r} has {len(vals)} values for columns {cols}")
        rows[key] = tuple(vals)
    return rows


def _per_class(doc: dict[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """A data-file mapping keyed by the query classes (in §2 order), then ``extra``.

    Raises:
        ValueError: when its keys are not :data:`CLASSES` + ``extra`` in that order.
    """
    if tuple(doc) != CLASSES + extra:
        raise ValueError(f"keys {tuple(doc)} are not the classes {CLASSES} + {extra}")
    return doc


def _pairs(doc: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
    """``{a: {b: v}}`` of a data file flattened to ``{(a, b): v}``, in file order."""
    return {(a, b): v for a, inner in doc.items() for b, v in inner.items()}


_S1 = _load("corpus.yaml")
_S2 = _load("queries.yaml")
_S3 = _load("arms.yaml")
_S4 = _load("experiments.yaml")

CLASSES: tuple[str, ...] = tuple(_S2["classes"])
"""The eight query classes in docs/STUDY.md §2 order."""

# §1 Corpus (main size)

CORPUS: dict[str, float] = _S1["corpus"]
"""§1 corpus counts at the main size (manifest keys)."""
CORPUS_SHARES: dict[str, float] = _S1["corpus_shares"]
"""§1 approximate derived figures: distractors ≈ 15 % of memories, ≈ 24 memories/session."""
GENERATOR: dict[str, float] = _S1["generator"]
"""§1 generator options of the capture (``manifest.options.corpus`` names)."""
SUPERSEDED_FACTS: int = _S1["superseded_facts"]
"""§1: 12 % of facts superseded = 300 facts."""
WORLD: dict[str, int] = _S1["world"]
"""§1 world: records per entity type."""
RESTATEMENTS: dict[str, float] = _S1["restatements"]
"""§1 restatements per fact."""
SIZES: dict[str, tuple[int, int]] = {k: tuple(v) for k, v in _S1["sizes"].items()}
"""§1 scaling sizes: our size name -> (memories, queries) published for the matching size
(targets 500 / 2,000 / 8,000 / 32,000; our config names them xs / s / m / l)."""

# §2 Query classes and relevance

QUERY_COUNTS: dict[str, int] = _per_class(_S2["query_counts"])
"""§2 table: queries per class at the main size (sum 313), in :data:`CLASSES` order."""
SIMILARITY_EXPRESSIBLE: int = _S2["similarity_expressible"]
"""§2: 120 of 313 queries answerable by similarity alone (38.3 %; 61.7 % need more)."""
SIMILARITY_SHARE: float = _S2["similarity_share"]
PREDICATE_SHARE: float = _S2["predicate_share"]
RELEVANCE_RULES: dict[str, float] = _S2["relevance_rules"]
"""§2 table: temporal cut-off day (``created_day ≤ 160``) and the least relevant memories
an aggregate (≥ 4) and a hybrid (≥ 3) question has."""
VALIDATION_COSINE: dict[str, float] = _per_class(_S2["validation_cosine"], ("random_pairs",))
"""§2 corpus validation: mean query–relevant cosine per class, and random memory pairs."""
IDENTIFIER_OVERLAP: dict[str, float] = _S2["identifier_overlap"]
"""§2 identifier overlap between query and relevant memories."""
DENSE_PROBE: dict[str, float] = _S2["dense_probe"]
"""§2 dense-failure probe on lexical queries: the top memory by cosine was a distractor in
6/6 probes; median rank of the first relevant memory 271 of 8,282."""

# §3 The ten arms

OVERALL_COLUMNS: tuple[str, ...] = tuple(_S3["overall"]["columns"])
"""Columns of the §3 ten-arm table: nDCG@10, recall, MRR, p50 ms, p95 ms, bytes/memory,
tokens/query @10."""
OVERALL: dict[str, tuple[float, ...]] = _table(_S3["overall"])
"""§3 ten-arm table, one tuple per arm in :data:`OVERALL_COLUMNS` order."""
BY_CLASS: dict[tuple[str, ...], tuple[float, ...]] = {
    tuple(k.split(", ")): v for k, v in _table(_S3["by_class"], CLASSES).items()
}
"""§3 nDCG@10 by class: row arms (the two B-tree arms share one row) -> the eight classes
in :data:`CLASSES` order."""
REFERENCE_ARMS: tuple[str, ...] = tuple(OVERALL)
"""The study's ten arms, in its table order."""


def study_arms(role: Callable[[Any], bool]) -> tuple[str, ...]:
    """The study's arms whose registered class plays ``role``, in the study's table order.

    Args:
        role: a test on an arm class (its ``family`` and ``capabilities`` declarations).

    Returns:
        The names of :data:`REFERENCE_ARMS` registered in :data:`agentmem.arms.ARMS` and
        passing ``role``.
    """
    from agentmem.arms import ARMS

    return tuple(a for a in REFERENCE_ARMS if a in ARMS and role(ARMS[a]))


FILE_ARMS: tuple[str, ...] = study_arms(lambda c: not c.capabilities.transactions)
"""The study's file arms: plain files, no transactions (capability grid)."""
DBMS_ARMS: tuple[str, ...] = study_arms(lambda c: c.capabilities.transactions)
"""The study's DBMS arms: writes are transactions."""
TEXT_ONLY_ARMS: tuple[str, ...] = study_arms(lambda c: c.capabilities.vector_access == "none")
"""The study's arms that store no vectors."""
VECTOR_ARMS: tuple[str, ...] = study_arms(lambda c: c.capabilities.vector_access != "none")
"""The study's arms that store a vector per memory."""
DBMS_TEXT_ARMS: tuple[str, ...] = tuple(a for a in DBMS_ARMS if a in TEXT_ONLY_ARMS)
"""The study's DBMS arms that rank by text alone."""

EXACT_COUNT: dict[str, float] = {a: (1.0 if a in DBMS_ARMS else 0.0) for a in REFERENCE_ARMS}
"""§3 claim: every DBMS arm answered every aggregate with the exact count (rate 1); the
file arms never did (rate 0)."""
DESIGN_PARAMS: dict[tuple[str, str], float] = _pairs(_S3["design_params"])
"""§3 arm design numbers: file-vec-meta fetches top k×4; the hybrid arms fuse top-50
branches by RRF with constant 60."""

# §4 Other experiments

POSTFILTER_QUERIES: int = _S4["postfilter_queries"]
"""§4: filtered queries in the post-filter sweep."""
POSTFILTER_ARM: str = _S4["postfilter_arm"]
"""§4: the arm the study swept (its overfetch factor)."""
POSTFILTER: dict[int, tuple[float, float, float | None]] = _table(_S4["postfilter"])
"""§4 post-filter sweep: overfetch -> (fill rate, recall, fraction of corpus scanned); the
scanned fraction is published for ×1 and ×128 only."""
SCALING_NDCG: dict[str, tuple[float, float, float, float]] = _table(
    _S4["scaling_ndcg"], tuple(SIZES)
)
"""§4 scaling: nDCG@10 at 609 / 1,995 / 8,282 / 33,197 memories (our xs / s / m / l)."""
SCALING_P50: dict[tuple[str, str], float] = _pairs(_S4["scaling_p50"])
"""§4 scaling latency: file-jsonl p50 3.0 → 131 ms; sqlite-fts p50 8.1 ms at 33k."""
SCALING_L: dict[tuple[str, str], float] = _pairs(_S4["scaling_l"])
"""§4 at 33,197 memories: pg-hybrid 137 MB; pg-hnsw ingest 34.9 s + index 12.9 s."""
BUDGET_K1: dict[str, float] = _S4["budget_k1"]
"""§4 token budget: arm -> nDCG at k = 1 (published for sqlite-fts)."""

CRASH: dict[str, tuple[int, int]] = {k: tuple(v) for k, v in _S4["crash"].items()}
"""§4 crash (SIGKILL during sustained writes): family -> (trials unreadable, trials).
JSON rewrite: 1/20 left a 0-byte file (the study's text says 3/20)."""
CRASH_REWRITE_TEXT: int = _S4["crash_rewrite_text"]
CRASH_REWRITE_LOST: int = _S4["crash_rewrite_lost"]
"""≈ 20,000 records lost in the JSON-rewrite failure (all of them)."""
CRASH_SQLITE_INTEGRITY_FAILURES: int = _S4["crash_sqlite_integrity_failures"]

LOST_UPDATE: dict[str, float] = _S4["lost_update"]
"""§4 lost update: 8 writers × 25 increments; the JSON file kept 25 of 200 (87.5 % lost);
SQLite and Postgres lost none (single connection in the study)."""
ANOMALY: dict[str, float] = _S4["anomaly"]
"""§4 update anomaly: a top-10 repair reached 1.52 of 4.2 restatements over 120 facts,
leaving 63.9 % stale."""
ANOMALY_ARM: str = _S4["anomaly_arm"]
"""Our arm compared with the study's repair search: the study's capture ran its top-10
repair probe on pg-hybrid (``tools/capture.mjs``, step "normalisation anomaly"); the other
arms' rows stand beside it in ``trials/anomaly.csv``."""
