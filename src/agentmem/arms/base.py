"""The arm protocol: the one interface every storage architecture implements.

An *arm* is one way of storing an agent's memories (a JSONL file, an HNSW index, an
SQLite database, a PostgreSQL schema, ...). The runner builds it from a corpus and its
embeddings and asks it queries; agent-style experiments write with :meth:`Arm.remember`
and read with :meth:`Arm.query`. An arm receives what a memory tool call carries (free
text, its embedding, a structured predicate), uses what its architecture can express and
returns ranked memory ids only; :mod:`agentmem.metrics` computes every score
(ann-benchmarks / BEIR style).

Adding an arm: one class implementing :class:`Arm` (subclass :class:`ArmBase`), one entry
point in the ``agentmem.arms`` group (or one line in the built-in registry), one entry
under ``arms:`` in the config; ``agentmem check-arm NAME`` runs the conformance suite
(docs/WRITING_AN_ARM.md).
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import polars as pl

from agentmem.arms.arrays import checked_vector, embedding_matrix, float32_array
from agentmem.arms.hooks import BareCall, BenchHooks, IngestHooks, QueryHooks, RawIngest
from agentmem.arms.knobs import Knob
from agentmem.arms.remembering import (
    MEMORY_DEFAULTS,
    SUPERSEDES,
    Remembered,
    build_memories,
    prepare_memories,
    with_supersedes,
)
from agentmem.errors import ArmError
from agentmem.types import (
    MEMORY_SCHEMA,
    PREDICATE_FIELDS,
    PREDICATE_OPS,
    VECTOR_DIM,
    Corpus,
    Embeddings,
    Predicate,
    Query,
    Result,
)

__all__ = [
    "MEMORY_SCHEMA",
    "PREDICATE_FIELDS",
    "PREDICATE_OPS",
    "SUPERSEDES",
    "VECTOR_DIM",
    "Arm",
    "ArmBase",
    "ArmError",
    "MEMORY_DEFAULTS",
    "BareCall",
    "BenchHooks",
    "IngestHooks",
    "Knob",
    "QueryHooks",
    "BuildStats",
    "Capabilities",
    "Corpus",
    "Embeddings",
    "Predicate",
    "Query",
    "RawIngest",
    "Remembered",
    "answer_all",
    "inert_ablations",
    "prefix_stable_at",
    "Result",
    "build_memories",
    "checked_vector",
    "embedding_matrix",
    "float32_array",
    "StorageStats",
    "prepare_memories",
    "with_supersedes",
]


@dataclass(frozen=True)
class Capabilities:
    """What an architecture can express; generates the capability grid (paper Table 2).

    Every attribute defaults to "cannot": an arm declares only what it can do.

    Attributes:
        predicate: applies structured predicates inside the engine.
        join: can join memories to other relations (sessions, facts, entities).
        aggregate: can return an exact count.
        vector_access: ``"none"``, ``"brute-force"``, ``"hnsw"``, ``"hnsw-filtered"``,
            ``"hnsw-iterative"``.
        text_access: ``"scan"``, ``"b-tree+like"``, ``"fts5-bm25"``, ``"gin-tsvector"``,
            or ``"none"``.
        transactions: writes are ACID transactions.
        filter_stage: where a predicate is applied: ``"none"`` (ignored),
            ``"post-filter"`` (on a ranked candidate list after the search, which can
            leave fewer than ``k`` results) or ``"in-search"`` (inside the engine's
            search: SQL ``WHERE``, a filtered index scan).
    """

    predicate: bool = False
    join: bool = False
    aggregate: bool = False
    vector_access: str = "none"
    text_access: str = "none"
    transactions: bool = False
    filter_stage: Literal["none", "post-filter", "in-search"] = "none"

    @classmethod
    def sql_engine(cls, vector_access: str, text_access: str) -> Capabilities:
        """An arm on a SQL engine (SQLite, PostgreSQL); only its access paths vary.

        Predicates, joins, exact counts and ACID writes; the predicate is applied inside
        the search.
        """
        return cls(True, True, True, vector_access, text_access, True, "in-search")

    @classmethod
    def vector_database(cls, vector_access: str, text_access: str = "none") -> Capabilities:
        """An arm on a vector database; only its access paths vary.

        Metadata filters inside the search and exact counts; no joins, no transactions.
        """
        return cls(True, False, True, vector_access, text_access, False, "in-search")


@dataclass
class StorageStats:
    """Bytes on disk from the engine's own accounting.

    Attributes:
        total_bytes: sum over ``objects``.
        objects: bytes per object (table, index, file), e.g. ``{"memories": 1234}``.
        source: how it was measured (``"dbstat"``, ``"pg_total_relation_size"``,
            ``"file sizes"``).
        counts: counts the store reports beside its bytes, e.g. ``{"memories": 2029,
            "unreadable_lines": 0}`` for ``file-jsonl``; empty when the arm reports none.
    """

    total_bytes: int
    objects: dict[str, int] = field(default_factory=dict)
    source: str = ""
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class BuildStats:
    """Timings of one build: ``ingest_ms`` (rows written) and ``index_ms`` (indexes built)."""

    ingest_ms: float
    index_ms: float


@runtime_checkable
class Arm(Protocol):
    """A storage architecture under test.

    Lifecycle: ``arm = ARMS[name](**params)``; then either ``arm.build(corpus, vectors,
    store_dir)`` (creates the store from scratch, leaves it open) or ``arm.open(store_dir)``
    (reopens a store built earlier, possibly by another process); then any number of
    ``remember`` / ``query`` / ``fetch`` / ``explain`` / ``storage`` calls, from any thread
    (:class:`ArmBase` serialises them); then ``close()`` (idempotent; stops any embedded
    server the arm started). Only :class:`ArmError`, and :class:`ValueError` for bad
    arguments, leave a method.

    ``query`` must never raise on hostile text (quotes, ``*``, ``:``, ``NEAR``, SQL,
    empty or 10,000-character strings): it returns an empty or best-effort result.
    """

    name: ClassVar[str]
    family: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    #: ``query(q, k).memory_ids == query(q, K).memory_ids[:k]`` for every ``k < K``: the
    #: ranking does not depend on ``k`` (a total order cut by LIMIT). False for arms whose
    #: search depth grows with ``k`` (HNSW candidate lists, overfetch, iterative scans).
    #: The token-budget sweep asks such arms once at the largest ``k``; the conformance
    #: tests check the claim on every query of the smoke corpus.
    prefix_stable: ClassVar[bool]

    def build(self, corpus: Corpus, vectors: Embeddings, store_dir: Path) -> BuildStats:
        """Create the store under ``store_dir`` from ``corpus`` and ``vectors``."""
        ...

    def open(self, store_dir: Path) -> None:
        """Reopen a store previously built under ``store_dir``.

        Raises:
            ArmError: when the store is missing or unreadable (message names the path).
        """
        ...

    def query(self, q: Query, k: int) -> Result:
        """Return at most ``k`` memory ids, best first (+ count when ``q.wants_count``)."""
        ...

    def remember(self, memories: pl.DataFrame, vectors: Embeddings) -> None:
        """Append ``memories`` to the open store through the engine's normal write path.

        The frame is validated and completed by :func:`prepare_memories` (``memory_id``,
        ``body`` and ``created_day`` required; other :data:`MEMORY_SCHEMA` columns
        optional). A row's :data:`SUPERSEDES` list names earlier memories it corrects:
        their ``superseded_by`` becomes the row's id, so a current-only query
        (``superseded_by is_null``) no longer returns them. The batch is visible to the
        next :meth:`query`; for the DBMS arms it is durable (committed) when the call
        returns, and all-or-nothing.

        Raises:
            ArmError: when the store is not open, the batch is invalid
                (:func:`prepare_memories`), a ``memory_id`` is already stored, a
                superseded id is not stored, or the engine fails (nothing is written then,
                for the DBMS arms).
        """
        ...

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the stored rows of ``memory_ids`` (the :data:`MEMORY_SCHEMA` columns).

        Rows come in the order asked, each once; ids the store does not hold are left
        out. ``superseded_by`` shows supersessions made by :meth:`remember`. Columns the
        store does not keep are null (``form``, for most arms).

        Raises:
            ArmError: when the store is not open or the engine fails.
        """
        ...

    def explain(self, q: Query, k: int = 10) -> str:
        """Return the engine's plan for ``q`` at result length ``k``, or a description.

        The plan is the engine's own (``EXPLAIN QUERY PLAN`` / ``EXPLAIN``) where it has one.
        """
        ...

    def storage(self) -> StorageStats:
        """Return bytes used, from the engine's own accounting, per object."""
        ...

    def close(self) -> None:
        """Release connections and stop servers; safe to call twice."""
        ...


def _guarded(fn: Callable[..., Any], op: str) -> Callable[..., Any]:
    """Wrap one public arm method: hold the instance's lock, let only ArmError/ValueError out."""

    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        lock = self.__dict__.get("_arm_lock")
        if lock is None:  # dict.setdefault is atomic: two first callers share one lock
            lock = self.__dict__.setdefault("_arm_lock", threading.RLock())
        with lock:
            try:
                return fn(self, *args, **kwargs)
            except (ArmError, ValueError):
                raise
            except Exception as exc:
                name = getattr(self, "name", type(self).__name__)
                raise ArmError(f"{name}: {op} failed: {type(exc).__name__}: {exc}") from exc

    method.__arm_guarded__ = True  # type: ignore[attr-defined]
    return method


class ArmBase:
    """Base class of the built-in arms: thread safety and the exception contract, once.

    Every public method a subclass defines (``build``, ``open``, ``query``, ``explain``,
    ``storage``, ``close`` and arm-specific ones such as ``ingest_turn``) is wrapped when
    the class is created so that

    * calls on one instance are serialised by a per-instance :class:`threading.RLock`
      (a connection, an apsw handle or a file position is never used by two threads at
      once; re-entrant, so a method may call another);
    * an exception other than :class:`ArmError` or :class:`ValueError` (bad arguments)
      leaves as ``ArmError("<arm>: <method> failed: <type>: <message>")`` with the
      original chained as ``__cause__``.

    Properties, static and class methods and names starting with ``_`` are not wrapped;
    neither are the functions a method returns (e.g. ``raw_query_call``'s bare call).

    Optional declarations an arm may set (read by sweeps and figures, never by name):

    * ``candidate_param``: the constructor parameter that sets the size of the candidate
      list the arm's filtered search draws from: the list a ``"post-filter"`` arm filters
      (``"overfetch"``) or the search breadth of an ``"in-search"`` ANN index that can
      still leave slots empty (an HNSW ``ef``); the post-filter sweep varies it.
    * ``exclusive_store``: the product refuses a second process on one store; readers
      open a private copy (:func:`agentmem.runner.opened`).
    * ``candidate_unit``: what the sweep's factor ``x`` sets ``candidate_param`` to:
      ``"per-result"`` (``x`` itself, candidates per requested result, as ``overfetch``)
      or ``"list"`` (``k * x``, a list length, as ``ef``).
    * ``ablations``: named constructor-parameter overrides, each taking one design choice
      out of the arm; the ablation sweep (:mod:`agentmem.sweeps.ablation`) reopens the
      arm's built store with each and scores the queries, but for the variants
      :meth:`inert_ablations` names on that store.
    * ``study_choices``: for each implementation choice of :data:`agentmem.choices.CHOICES`
      on which the arm differs from the study's arm of the same name, the
      constructor-parameter overrides that make it the study's; the choices sweep
      (:mod:`agentmem.sweeps.choices`) reopens the built store with them.
    * ``knobs``: the parameters the operating-points sweep (:mod:`agentmem.sweeps.pareto`)
      runs the arm at, each with its stage and default grid (:class:`Knob`).
    """

    candidate_param: ClassVar[str | None] = None
    candidate_unit: ClassVar[Literal["per-result", "list"]] = "per-result"
    #: True when the product locks its store to one process (Milvus Lite, local Qdrant):
    #: jobs that only read a built store (sweeps, probes) open a private copy of it, so two
    #: of them at once, or one beside a timing job, never meet the lock
    exclusive_store: ClassVar[bool] = False
    #: variant name -> constructor overrides (over the configured parameters) that remove
    #: one design choice; empty: the ablation sweep leaves the arm out
    ablations: ClassVar[dict[str, dict[str, Any]]] = {}
    #: choice name (a key of agentmem.choices.CHOICES) -> constructor overrides that make
    #: the arm the study's on that choice (query-time parameters only); empty: the arm has
    #: no study counterpart, or agrees with it
    study_choices: ClassVar[dict[str, dict[str, Any]]] = {}
    #: the constructor parameters the operating-points sweep varies, each with its stage
    #: and default grid (:class:`~agentmem.arms.knobs.Knob`); empty: the arm has none
    knobs: ClassVar[tuple[Knob, ...]] = ()
    #: CPU of one untimed query relative to a built-in arm's usual one, a scheduling hint
    #: and never a result: the workflow starts the external datasets' runs of a costlier
    #: arm first (its priority is ``query_cost - 1``), so its long run does not start last
    #: and leave a core idle at the end of the study
    query_cost: ClassVar[float] = 1.0

    def integrity_check(self) -> tuple[str, list[str]]:
        """Run the engine's own consistency check on the open store.

        Returns:
            ``(what was checked, problems found)``, ``[]`` when the store is intact. This
            default checks nothing beyond the store having opened (``"opens"``); arms
            whose engine has a check override it (``PRAGMA integrity_check``, ...).

        Raises:
            ArmError: when the store is not open or the check cannot run.
        """
        return "opens", []

    def inert_ablations(self) -> dict[str, str]:
        """The :attr:`ablations` that cannot change any answer on the open store, with why.

        A variant is inert when the store holds nothing its design choice acts on (no
        memory linked to an entity, none superseding another): every query then gets the
        configured arm's answer, and the ablation sweep scores the variant from that answer
        instead of asking every query again (:func:`inert_ablations`). This default names
        none; the conformance tests check an arm's claim on a store where it holds.

        Returns:
            ``{variant name: why it cannot fire here}``, a subset of :attr:`ablations`.

        Raises:
            ArmError: when the store is not open.
        """
        return {}

    def prefix_stable_to(self, k: int) -> bool:
        """Whether ``query(q, j).memory_ids == query(q, k).memory_ids[:j]`` for every ``j < k``.

        :attr:`Arm.prefix_stable` for every ``k``; an arm whose search depth is fixed up to
        a bound (a hybrid whose branches fetch ``max(k, candidates)``) overrides it. Read
        through :func:`prefix_stable_at`.
        """
        return bool(self.prefix_stable)  # type: ignore[attr-defined]

    def query_many(self, queries: Sequence[Query], k: int) -> list[Result]:
        """The answers to ``queries``, in their order, each equal to ``query(q, k)``.

        Untimed passes (the external datasets' runs, the token-budget sweep) ask for their
        answers this way (:func:`answer_all`). This default calls :meth:`query` once per
        query; an arm whose engine answers many searches in one call (a product's batch
        search) overrides it, and the conformance tests check the equality on every query
        of the smoke corpus.

        Raises:
            ArmError: as :meth:`query`.
        """
        return [self.query(q, k) for q in queries]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for attr, value in list(vars(cls).items()):
            if attr.startswith("_") or not inspect.isfunction(value):
                continue
            if getattr(value, "__arm_guarded__", False):
                continue
            setattr(cls, attr, _guarded(value, attr))


def answer_all(arm: Arm, queries: Sequence[Query], k: int) -> list[Result]:
    """Every answer of ``arm`` to ``queries`` at ``k``, in their order, untimed.

    ``arm.query_many`` when the arm has one (:meth:`ArmBase.query_many`: a batch search),
    else one :meth:`Arm.query` per query, so an arm written against the :class:`Arm`
    protocol alone needs nothing more.

    Raises:
        ArmError: as :meth:`Arm.query`; also when ``query_many`` answers a different
            number of queries than it was asked.
    """
    many = getattr(arm, "query_many", None)
    if many is None:
        return [arm.query(q, k) for q in queries]
    out = list(many(queries, k))
    if len(out) != len(queries):
        name = getattr(arm, "name", type(arm).__name__)
        raise ArmError(f"{name}: query_many answered {len(out)} of {len(queries)} queries")
    return out


def inert_ablations(arm: Arm) -> dict[str, str]:
    """``arm.inert_ablations()`` when the arm has it (:meth:`ArmBase.inert_ablations`), else ``{}``.

    Raises:
        ArmError: as the arm's method.
    """
    inert = getattr(arm, "inert_ablations", None)
    return dict(inert()) if inert is not None else {}


def prefix_stable_at(arm: Arm, k: int) -> bool:
    """Whether ``arm`` answers every ``j < k`` with the first ``j`` of its answer at ``k``.

    ``arm.prefix_stable_to(k)`` when the arm has it (:meth:`ArmBase.prefix_stable_to`),
    else its :attr:`Arm.prefix_stable` claim. The token-budget sweep asks such an arm once,
    at its largest ``k``; the conformance tests check the claim at ``k = 50`` on every
    smoke-corpus query.
    """
    bounded = getattr(arm, "prefix_stable_to", None)
    if bounded is not None:
        return bool(bounded(k))
    return bool(getattr(arm, "prefix_stable", False))
