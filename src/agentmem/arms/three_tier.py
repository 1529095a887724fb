"""The ``three-tier`` arm (family ``tiered``): the seed's three-tier agent memory, every tier real.

Tiers (REFERENCE §5, DESIGN §3):

* **L1 working memory** — the most recent turns, in an SQLite file ``tiers.db`` (apsw,
  WAL) under the store directory, capped at ``l1_max_tokens`` o200k tokens of turn text
  (:func:`agentmem.tokens.count_tokens` of each body). Searched by FTS5 (``porter
  unicode61``, safe match expression from :func:`agentmem.text.fts5_match`) and by
  recency (newest first = larger ``created_day``, then larger ``seq``).
* **L2 episodic summary nodes** — when a new turn takes L1 past ``l1_max_tokens``, the
  oldest turns are compacted (rolling compaction) until L1 holds at most
  ``(1 - compact_fraction) * l1_max_tokens`` tokens. The evicted turns are grouped by
  session; each group becomes one node ``(session_id, epoch)`` (epoch = 0, 1, 2, ... per
  session) whose summary is written by a :class:`~agentmem.summarise.Summariser`
  (default: the deterministic :class:`~agentmem.summarise.ExtractiveSummariser`) within
  ``summary_tokens`` tokens. A node keeps the ids of every memory it covers
  (``l2_covers``, provenance) with their metadata (so predicates apply in SQL) and, per
  memory, the excerpt of the summary that came from it. FTS5 indexes the summaries.
* **L3 semantic vectors** — PostgreSQL + pgvector (through
  :func:`agentmem.pg.connect_store`, embedded PostgreSQL 18 or ``AGENTMEM_PG_DSN``):
  table ``l3_memories`` with every memory column, ``embedding vector(384)``, an HNSW
  index (cosine) and B-tree indexes on the predicate columns.

**Decision: L3 holds exactly the memories that have left L1.** The raw memories are
partitioned between L1 and L3 (each memory lives in exactly one of them); L2 is derived
(summaries with provenance). Working memory is always in the context in full, so copying
it into L3 would only duplicate context; and the tier sizes reported by :meth:`storage`
are then what each tier really holds. Consequences: vector search does not see the
turns still in L1 (they are reached by keyword and recency), and exact counts are taken
over L1 ∪ L3 (:meth:`ThreeTierArm.query`).

Moving a memory out of L1 spans two engines without two-phase commit. Order: the turn
is committed to L1; on overflow the summaries are computed, the evicted rows are inserted
into L3 (``ON CONFLICT DO NOTHING``, committed), then one SQLite transaction inserts the
L2 nodes and deletes the rows from L1. A crash in between leaves L1 over its cap (and
maybe some rows in both L1 and L3): :meth:`ThreeTierArm.open` finishes the pending
compaction, and queries and counts de-duplicate ids meanwhile.

Ways to drive it:

* benchmark: ``build(corpus, vectors, store_dir)`` replays the memories in ``seq`` order
  through the same ingest logic (L3 rows are buffered and written with one binary
  ``COPY``, indexes built afterwards), then ``query(q, k)``.
* the arm contract: ``remember(memories, vectors)`` after ``build``/``open``/``create``
  sends each row through the path ``ingest_turn`` takes (L1 insert, rolling compaction
  into L2, eviction to L3) and applies corrections (``supersedes``) in every tier that
  holds the old memory; ``fetch(ids)`` reads rows back from L1 and L3.
* conversation (issue 8): ``create(store_dir)`` (empty store, indexes live), then per turn
  ``ingest_turn(row, vector) -> TierEvent`` and ``assemble_context(text, vector, k) ->
  AssembledContext`` (items with tier labels, o200k tokens per tier, latency per tier);
  ``reset()`` empties the tiers between conversations without restarting PostgreSQL.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import apsw
import numpy as np
import polars as pl
import psycopg
from psycopg import sql

from agentmem.arms.base import (
    VECTOR_DIM,
    ArmBase,
    ArmError,
    BareCall,
    BuildStats,
    Capabilities,
    Corpus,
    Embeddings,
    Predicate,
    Query,
    RawIngest,
    Result,
    StorageStats,
    checked_vector,
    prepare_memories,
)
from agentmem.arms.postgres import BUILD_MAINTENANCE_WORK_MEM
from agentmem.arms.postgres import MEMORY_COLUMNS as PG_MEMORY_COLUMNS
from agentmem.arms.postgres import predicate_sql as pg_predicate_sql
from agentmem.arms.rows import memory_frame, memory_rows_frame
from agentmem.arms.sqlite import format_plan
from agentmem.arms.sqlite import predicate_sql as sqlite_predicate_sql
from agentmem.pg import PgError, PgHandle, connect_store
from agentmem.summarise import (
    SUMMARISERS,
    Summariser,
    make_summariser,
    split_sentences,
    summariser_name,
)
from agentmem.text import fts5_match, query_terms
from agentmem.tokens import count_tokens

#: SQLite file of tiers L1 and L2 inside the store directory.
DB_NAME = "tiers.db"
#: Version of the on-disk layout, checked by :meth:`ThreeTierArm.open`.
LAYOUT_VERSION = "1"
#: Tier labels used in context items, token and latency dicts.
TIERS: tuple[str, str, str] = ("L1", "L2", "L3")

#: Memory columns in storage order: (name, PostgreSQL COPY type, PostgreSQL DDL type) —
#: the Postgres arms' memory columns (agentmem.arms.postgres) without the entity array.
_MEM_COLUMNS: tuple[tuple[str, str, str], ...] = tuple(
    c for c in PG_MEMORY_COLUMNS if c[0] != "entity_ids"
)
_MEM_NAMES = tuple(c for c, _, _ in _MEM_COLUMNS)
_INT_COLS = {"turn_no", "seq", "created_day", "tokens"}
_STR_COLS = {"memory_id", "session_id", "kind", "body", "fact_id", "source", "superseded_by"}
#: L3 columns after the memory columns.
_L3_EXTRA: tuple[tuple[str, str, str], ...] = (
    ("entity_ids", "text[]", "text[] NOT NULL DEFAULT '{}'"),
    ("body_tokens", "int4", "integer NOT NULL"),
    ("embedding", "vector", f"vector({VECTOR_DIM}) NOT NULL"),
)
_L3_NAMES = _MEM_NAMES + tuple(c for c, _, _ in _L3_EXTRA)
_L3_BTREE = ("session_id", "created_day", "fact_id", "superseded_by")

_SQLITE_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE l1_turns(
    id INTEGER PRIMARY KEY,              -- ingestion order: compaction evicts smallest first
    memory_id TEXT NOT NULL UNIQUE,
    session_id TEXT, turn_no INTEGER, seq INTEGER, kind TEXT, body TEXT NOT NULL,
    fact_id TEXT, created_day INTEGER, source TEXT, confidence REAL, superseded_by TEXT,
    tokens INTEGER,
    entity_ids TEXT NOT NULL DEFAULT '[]', -- JSON list
    body_tokens INTEGER NOT NULL,          -- o200k tokens of body (the cap's unit)
    embedding BLOB NOT NULL                -- float32[{VECTOR_DIM}], carried to L3 on eviction
);
CREATE INDEX l1_recency ON l1_turns(created_day, seq);
CREATE VIRTUAL TABLE l1_fts USING fts5(
    body, content='l1_turns', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER l1_fts_ai AFTER INSERT ON l1_turns BEGIN
    INSERT INTO l1_fts(rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER l1_fts_ad AFTER DELETE ON l1_turns BEGIN
    INSERT INTO l1_fts(l1_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TABLE l2_nodes(
    node_id INTEGER PRIMARY KEY,
    session_id TEXT,
    epoch INTEGER NOT NULL,                -- 0, 1, 2, ... per session
    first_seq INTEGER, last_seq INTEGER, first_day INTEGER, last_day INTEGER,
    n_covered INTEGER NOT NULL,
    source_tokens INTEGER NOT NULL,        -- o200k tokens of the compacted turns
    summary TEXT NOT NULL,
    summary_tokens INTEGER NOT NULL,       -- o200k tokens of summary
    summariser TEXT NOT NULL,
    trigger_memory_id TEXT,                -- the turn whose ingest caused the compaction
    UNIQUE(session_id, epoch)
);
CREATE VIRTUAL TABLE l2_fts USING fts5(
    summary, content='l2_nodes', content_rowid='node_id', tokenize='porter unicode61'
);
CREATE TRIGGER l2_fts_ai AFTER INSERT ON l2_nodes BEGIN
    INSERT INTO l2_fts(rowid, summary) VALUES (new.node_id, new.summary);
END;
CREATE TRIGGER l2_fts_ad AFTER DELETE ON l2_nodes BEGIN
    INSERT INTO l2_fts(l2_fts, rowid, summary) VALUES ('delete', old.node_id, old.summary);
END;
CREATE TABLE l2_covers(                  -- provenance: which memories a node covers
    node_id INTEGER NOT NULL REFERENCES l2_nodes(node_id),
    memory_id TEXT NOT NULL,
    ord INTEGER NOT NULL,                  -- position in the compacted run
    excerpt TEXT NOT NULL DEFAULT '',      -- the memory's sentences found in the summary
    session_id TEXT, seq INTEGER, created_day INTEGER, fact_id TEXT, superseded_by TEXT,
    PRIMARY KEY (node_id, memory_id)
);
CREATE INDEX l2_covers_memory ON l2_covers(memory_id);
"""

_SQLITE_TABLES = {"meta", "l1_turns", "l1_fts", "l2_nodes", "l2_fts", "l2_covers"}
#: Parameters that shape the stored tiers; a store must be reopened with the same values.
_LAYOUT_PARAMS = ("l1_max_tokens", "compact_fraction", "summary_tokens", "summariser")


# ------------------------------------------------------------------------ result types
@dataclass(frozen=True)
class Compaction:
    """One L2 node written by a rolling compaction.

    Attributes:
        node_id: the node's id in ``l2_nodes``.
        session_id: the session of every memory it covers.
        epoch: the node's number within its session (0, 1, ...).
        memory_ids: covered memories, oldest first (they moved to L3).
        source_tokens: o200k tokens of the covered turns.
        summary_tokens: o200k tokens of the summary (``<= summary_tokens`` parameter).
    """

    node_id: int
    session_id: str | None
    epoch: int
    memory_ids: tuple[str, ...]
    source_tokens: int
    summary_tokens: int


@dataclass
class TierEvent:
    """What one :meth:`ThreeTierArm.ingest_turn` did.

    Attributes:
        memory_id: the ingested turn.
        tokens: its o200k tokens.
        l1_tokens: L1 total tokens after the turn (always ``<= l1_max_tokens``).
        l1_turns: turns in L1 after the turn.
        compactions: L2 nodes written (empty when no compaction ran).
        moved_to_l3: memory ids moved from L1 to L3, oldest first.
        latency_ms: wall time per tier in milliseconds: ``"L1"`` (insert + accounting),
            ``"L2"`` (summarising + node writes + L1 deletes), ``"L3"`` (vector inserts;
            for :meth:`ThreeTierArm.ingest_turn` also the lookup that keeps ids unique
            across L1 and L3, so it is never 0 there).
    """

    memory_id: str
    tokens: int
    l1_tokens: int
    l1_turns: int
    compactions: list[Compaction] = field(default_factory=list)
    moved_to_l3: list[str] = field(default_factory=list)
    latency_ms: dict[str, float] = field(default_factory=dict)

    @property
    def compacted(self) -> bool:
        """Whether this turn triggered a compaction."""
        return bool(self.compactions)


@dataclass(frozen=True)
class ContextItem:
    """One piece of assembled context.

    Attributes:
        tier: ``"L1"`` (working-memory turn), ``"L2"`` (summary node) or ``"L3"``
            (vector-recalled memory).
        ref: the memory id (L1, L3) or ``"L2:<node_id>"``.
        text: the text that goes into the prompt (turn body or summary).
        tokens: o200k tokens of ``text``.
        memory_ids: the memories behind the item: ``(memory_id,)`` for L1/L3, the covered
            ids (provenance) for L2 — a summary covers them but need not quote them all.
        rank: position within its tier's selection (0 = first).
        keyword_hit: for L1, whether FTS5 matched the turn; for L2, whether FTS5 matched
            the summary (``False`` for nodes added by recency); always ``False`` for L3.
    """

    tier: str
    ref: str
    text: str
    tokens: int
    memory_ids: tuple[str, ...]
    rank: int
    keyword_hit: bool = False


class AssembledContext(NamedTuple):
    """Result of :meth:`ThreeTierArm.assemble_context` (unpacks as a 3-tuple).

    Attributes:
        items: context items, tier order L1 (chronological), L2, L3 (best first).
        tokens: o200k tokens per tier ``{"L1": ..., "L2": ..., "L3": ...}`` (sum of the
            items' ``tokens``).
        latency_ms: wall time per tier in milliseconds (each tier's SQL round trips).
    """

    items: list[ContextItem]
    tokens: dict[str, int]
    latency_ms: dict[str, float]

    @property
    def total_tokens(self) -> int:
        """Sum of ``tokens`` over the tiers."""
        return sum(self.tokens.values())

    def memory_ids(self) -> set[str]:
        """Every memory id behind the context (L2 provenance included)."""
        return {m for it in self.items for m in it.memory_ids}


@dataclass(frozen=True)
class _Stmt:
    """One statement :meth:`ThreeTierArm.query` runs: tier, label, engine, SQL, bindings."""

    tier: str
    label: str
    engine: str  # "sqlite" | "postgres"
    text: Any  # str for SQLite, sql.Composable for PostgreSQL
    params: dict[str, Any]


def _ms(t0: float) -> float:
    """Milliseconds since ``t0`` (a :func:`time.perf_counter` value)."""
    return (time.perf_counter() - t0) * 1e3


def _newest_key(day: Any, seq: Any) -> tuple[float, float]:
    """Sort key component for "newest first" that tolerates ``None``."""
    return (
        -(float(day) if day is not None else -math.inf),
        -(float(seq) if seq is not None else -math.inf),
    )


def rrf_fuse(lists: Iterable[list[tuple[str, Any, Any]]], rrf_k: int) -> list[tuple[str, float]]:
    """Fuse ranked lists by Reciprocal Rank Fusion (Cormack, Clarke & Buettcher 2009).

    ``score(d) = sum over lists containing d of 1 / (rrf_k + rank(d))``, ranks from 1.
    A list naming an id twice counts its first (best) rank only.

    Args:
        lists: ranked lists of ``(memory_id, created_day, seq)``, best first.
        rrf_k: the RRF constant (60 in the paper).

    Returns:
        ``(memory_id, score)`` best first; ties newest first (larger ``created_day``,
        then larger ``seq``), then by id.
    """
    score: dict[str, float] = {}
    when: dict[str, tuple[Any, Any]] = {}
    for ranked in lists:
        seen: set[str] = set()
        for rank, (mid, day, seq) in enumerate(ranked, start=1):
            if mid in seen:
                continue
            seen.add(mid)
            score[mid] = score.get(mid, 0.0) + 1.0 / (rrf_k + rank)
            when.setdefault(mid, (day, seq))
    order = sorted(score, key=lambda m: (-score[m], *_newest_key(*when[m]), m))
    return [(m, score[m]) for m in order]


def _check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` if it is an int ``>= minimum``, else raise ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


# --------------------------------------------------------------------------------- arm
class ThreeTierArm(ArmBase):
    """``three-tier``: L1 working memory (SQLite) + L2 summary nodes (SQLite) + L3 pgvector.

    See the module docstring for the tiers and the L1/L3 partition.

    ``query(q, k)`` searches every tier, each with the predicate in its SQL ``WHERE``:

    * ``L1 keyword``: FTS5 ``bm25`` over L1 turns (ties newest first), ``branch_k`` rows;
    * ``L1 recency``: the ``recent_k`` newest L1 turns (working memory is always present);
    * ``L2 summaries``: the ``l2_search_nodes`` best summaries by FTS5 ``bm25``, mapped back
      to their covered memory ids, ordered first by how many query terms the memory's own
      excerpt of the summary contains (``instr`` on the lower-cased excerpt: the sentences
      that matched point to the memories they came from), then by node rank, then newest
      first; ``branch_k`` rows. Covered memories the summary does not quote follow; an
      LLM summary that paraphrases yields no excerpts, so node rank alone orders then;
    * ``L3 vector``: pgvector HNSW, ``ORDER BY embedding <=> q`` among rows matching the
      predicate, ``branch_k`` rows (with ``hnsw.ef_search`` candidates; iterative scans off,
      so a selective predicate can underfill, as in ``pg-hnsw``).

    The lists are fused by Reciprocal Rank Fusion (Cormack, Clarke & Buettcher 2009):
    ``score = sum 1 / (rrf_k + rank)``, ties newest first; cut to ``k``. Text without
    search terms skips the two keyword lists (recency and vector still answer).
    Aggregates: the exact number of memories matching the predicate over L1 ∪ L3, each
    counted once: the matching L1 ids are read by SQL from SQLite and
    ``SELECT count(*) FROM (SELECT memory_id FROM l3_memories WHERE <predicate> UNION
    SELECT unnest(<L1 ids>)) u`` runs in PostgreSQL.

    Capabilities: predicates in every tier's SQL; exact counts; no join — memories are
    split between SQLite (L1) and PostgreSQL (L3), so no single engine can join them all
    to sessions, facts or entities; each tier's writes are ACID transactions in its engine
    (the L1→L3 move is ordered and idempotent, not atomic; see the module docstring).

    Args:
        l1_max_tokens: L1 cap in o200k tokens of turn bodies (seed: 3,000).
        compact_fraction: share of the cap a compaction frees: L1 is compacted down to
            ``floor((1 - compact_fraction) * l1_max_tokens)`` tokens; in ``(0, 1]``.
        summary_tokens: token budget of each L2 summary.
        summariser: ``"extractive"`` (deterministic, default), ``"openai"`` (an
            OpenAI-compatible endpoint from ``AGENTMEM_LLM_*``), or a
            :class:`~agentmem.summarise.Summariser` instance.
        recent_k: size of the ``L1 recency`` list in ``query`` (0 disables it).
        branch_k: candidates per keyword/vector list in ``query``.
        l2_search_nodes: summary nodes whose covered ids enter ``query``'s L2 list.
        l2_context_nodes: summary nodes put into an assembled context.
        rrf_k: RRF constant (60).
        m: HNSW ``m`` (pgvector default 16).
        ef_construction: HNSW build list size (pgvector default 64).
        ef_search: ``hnsw.ef_search`` (pgvector default 40).

    Raises:
        ValueError: on a parameter out of range or an unknown summariser name.
    """

    name: ClassVar[str] = "three-tier"
    prefix_stable: ClassVar[bool] = True
    family: ClassVar[str] = "tiered"
    capabilities: ClassVar[Capabilities] = Capabilities(
        predicate=True,
        join=False,
        aggregate=True,
        vector_access="hnsw-filtered",
        text_access="fts5-bm25",
        transactions=True,
        filter_stage="in-search",
    )
    bare_call: ClassVar[BareCall] = BareCall(
        "execute + fetchall of every tier statement (SQLite L1/L2, PostgreSQL L3)",
        "composing the tier statements with psycopg.sql, Python RRF fusion of the tier "
        "lists, per-tier timing",
    )

    def __init__(
        self,
        *,
        l1_max_tokens: int = 3000,
        compact_fraction: float = 0.5,
        summary_tokens: int = 200,
        summariser: str | Summariser = "extractive",
        recent_k: int = 5,
        branch_k: int = 50,
        l2_search_nodes: int = 3,
        l2_context_nodes: int = 1,
        rrf_k: int = 60,
        m: int = 16,
        ef_construction: int = 64,
        ef_search: int = 40,
    ) -> None:
        self.l1_max_tokens = _check_int("l1_max_tokens", l1_max_tokens, 1)
        if (
            isinstance(compact_fraction, bool)
            or not isinstance(compact_fraction, int | float)
            or not 0.0 < float(compact_fraction) <= 1.0
        ):
            raise ValueError(f"compact_fraction must be in (0, 1], got {compact_fraction!r}")
        self.compact_fraction = float(compact_fraction)
        self.summary_tokens = _check_int("summary_tokens", summary_tokens, 1)
        if isinstance(summariser, str):
            if summariser not in SUMMARISERS:
                raise ValueError(
                    f"unknown summariser {summariser!r}; choose one of {sorted(SUMMARISERS)}"
                )
            self._summariser: Summariser | None = None
            self.summariser = summariser
        elif isinstance(summariser, Summariser):
            self._summariser = summariser
            self.summariser = summariser_name(summariser)
        else:
            raise ValueError(f"summariser must be a name or a Summariser, got {summariser!r}")
        self.recent_k = _check_int("recent_k", recent_k, 0)
        self.branch_k = _check_int("branch_k", branch_k, 1)
        self.l2_search_nodes = _check_int("l2_search_nodes", l2_search_nodes, 1)
        self.l2_context_nodes = _check_int("l2_context_nodes", l2_context_nodes, 0)
        self.rrf_k = _check_int("rrf_k", rrf_k, 0)
        self.m = _check_int("m", m, 2)
        self.ef_construction = _check_int("ef_construction", ef_construction, 4)
        self.ef_search = _check_int("ef_search", ef_search, 1)
        self._db: apsw.Connection | None = None
        self._h: PgHandle | None = None
        self._store_dir: Path | None = None
        #: per-tier wall time (ms) of the last :meth:`query`
        self.last_latency_ms: dict[str, float] = {}

    # ------------------------------------------------------------------ properties
    @property
    def l1_target_tokens(self) -> int:
        """Tokens L1 is compacted down to: ``floor((1 - compact_fraction) * l1_max_tokens)``."""
        return math.floor((1.0 - self.compact_fraction) * self.l1_max_tokens + 1e-9)

    def _summ(self) -> Summariser:
        """Return the summariser, constructing it on first use (``openai`` reads env here)."""
        if self._summariser is None:
            self._summariser = make_summariser(self.summariser)
        return self._summariser

    def _layout(self) -> dict[str, str]:
        """Return the layout parameters as stored in ``meta``."""
        return {
            "layout_version": LAYOUT_VERSION,
            "l1_max_tokens": str(self.l1_max_tokens),
            "compact_fraction": repr(self.compact_fraction),
            "summary_tokens": str(self.summary_tokens),
            "summariser": self.summariser,
        }

    # ------------------------------------------------------------------ connections
    def _sqlite(self) -> apsw.Connection:
        """Return the open SQLite connection.

        Raises:
            ArmError: when the store was never built/created/opened or is closed.
        """
        if self._db is None:
            raise ArmError(f"{self.name}: store is not open (call build(), create() or open())")
        return self._db

    def _pg(self) -> psycopg.Connection:
        """Return the open PostgreSQL connection.

        Raises:
            ArmError: when the store was never built/created/opened or is closed.
        """
        if self._h is None or self._h.closed:
            raise ArmError(f"{self.name}: store is not open (call build(), create() or open())")
        return self._h.conn

    def _where(self) -> str:
        """Name the store in messages."""
        db = f", database {self._h.database}" if self._h is not None else ""
        return f"{self._store_dir}{db}"

    def _connect_sqlite(self, path: Path, *, create: bool) -> apsw.Connection:
        """Open ``path`` read-write (WAL, ``synchronous=NORMAL``); create it with ``create``.

        Raises:
            ArmError: naming ``path`` when SQLite cannot open it.
        """
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
        conn: apsw.Connection | None = None
        try:
            conn = apsw.Connection(str(path), flags=flags)
            if create:
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("PRAGMA synchronous=NORMAL")
        except apsw.Error as exc:
            if conn is not None:
                conn.close()
            raise ArmError(f"{self.name}: cannot open SQLite store {path}: {exc}") from exc
        return conn

    def _apply_pg_settings(self, conn: psycopg.Connection) -> None:
        """Load pgvector (its GUCs) and set ``hnsw.ef_search``; iterative scans off."""
        conn.execute("SELECT '[1]'::vector")
        conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(self.ef_search),))
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'off', false)")

    # ------------------------------------------------------------------ create / open
    def _pg_table_ddl(self) -> sql.Composable:
        """Return ``CREATE TABLE l3_memories (...)``."""
        cols = [
            sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(d))
            for c, _, d in (*_MEM_COLUMNS, *_L3_EXTRA)
        ]
        return sql.SQL("CREATE TABLE l3_memories ({})").format(sql.SQL(", ").join(cols))

    def _pg_index_ddl(self) -> list[sql.Composable]:
        """Return the B-tree (predicate columns) and HNSW (cosine) index statements."""
        out: list[sql.Composable] = [
            sql.SQL("CREATE INDEX {} ON l3_memories ({})").format(
                sql.Identifier(f"l3_{c}_idx"), sql.Identifier(c)
            )
            for c in _L3_BTREE
        ]
        out.append(
            sql.SQL(
                "CREATE INDEX l3_embedding_idx ON l3_memories "
                "USING hnsw (embedding vector_cosine_ops) WITH (m = {}, ef_construction = {})"
            ).format(sql.Literal(self.m), sql.Literal(self.ef_construction))
        )
        return out

    def _create_stores(self, store_dir: Path, *, pg_indexes: bool) -> None:
        """Create fresh, empty L1/L2 (SQLite) and L3 (PostgreSQL) stores and open them.

        Args:
            store_dir: the store directory (created); an existing ``tiers.db`` and this
                arm's database are replaced.
            pg_indexes: create L3's indexes now (``create``) or after a bulk load (``build``).

        Raises:
            ArmError: naming the store on any SQLite or PostgreSQL failure.
        """
        self.close()
        store_dir = Path(store_dir)
        store_dir.mkdir(parents=True, exist_ok=True)
        self._store_dir = store_dir
        path = store_dir / DB_NAME
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        db = self._connect_sqlite(path, create=True)
        self._db = db
        try:
            with db:
                db.execute(_SQLITE_SCHEMA)
                db.executemany(
                    "INSERT INTO meta(key, value) VALUES (?, ?)", list(self._layout().items())
                )
        except apsw.Error as exc:
            self.close()
            raise ArmError(f"{self.name}: cannot create {path}: {exc}") from exc
        try:
            self._h = connect_store(store_dir, self.name, create=True)
        except PgError as exc:
            self.close()
            raise ArmError(f"{self.name}: cannot create L3 store in {store_dir}: {exc}") from None
        conn = self._h.conn
        try:
            conn.execute(self._pg_table_ddl())
            if pg_indexes:
                for stmt in self._pg_index_ddl():
                    conn.execute(stmt)
            self._apply_pg_settings(conn)
        except psycopg.Error as exc:
            where = self._where()
            self.close()
            raise ArmError(f"{self.name}: cannot create L3 table in {where}: {exc}") from exc

    def create(self, store_dir: Path) -> None:
        """Create an empty store under ``store_dir`` for turn-by-turn use and leave it open.

        All indexes exist from the start (L3's HNSW index is maintained per insert).

        Raises:
            ArmError: naming the store on any SQLite or PostgreSQL failure.
        """
        self._create_stores(Path(store_dir), pg_indexes=True)

    def open(self, store_dir: Path) -> None:
        """Reopen a store built or created earlier under ``store_dir`` (maybe by another process).

        Checks the SQLite tables, the layout parameters recorded at build time
        (``l1_max_tokens``, ``compact_fraction``, ``summary_tokens``, ``summariser`` must
        equal this instance's) and the L3 table, then finishes any compaction a crash
        interrupted (L1 over its cap).

        Raises:
            ArmError: naming the path when ``tiers.db`` is missing or unreadable, a table
                is missing, the parameters differ, or the L3 database cannot be opened.
        """
        self.close()
        store_dir = Path(store_dir)
        self._store_dir = store_dir
        path = store_dir / DB_NAME
        if not path.is_file():
            raise ArmError(f"{self.name}: no three-tier store at {path} (missing {DB_NAME})")
        db = self._connect_sqlite(path, create=False)
        try:
            have = {r[0] for r in db.execute("SELECT name FROM sqlite_schema")}
            meta = (
                dict(db.execute("SELECT key, value FROM meta").fetchall()) if "meta" in have else {}
            )
        except apsw.Error as exc:
            db.close()
            raise ArmError(f"{self.name}: {path} is not a readable SQLite database: {exc}") from exc
        if _SQLITE_TABLES - have:
            db.close()
            raise ArmError(f"{self.name}: {path} lacks tables {sorted(_SQLITE_TABLES - have)}")
        want = self._layout()
        diff = {k: (meta.get(k), v) for k, v in want.items() if meta.get(k) != v}
        if diff:
            db.close()
            detail = ", ".join(f"{k}: stored {a!r}, arm has {b!r}" for k, (a, b) in diff.items())
            raise ArmError(
                f"{self.name}: store {path} was built with other tier parameters ({detail}); "
                "use the same parameters or rebuild"
            )
        self._db = db
        try:
            self._h = connect_store(store_dir, self.name, create=False)
        except PgError as exc:
            self.close()
            raise ArmError(f"{self.name}: cannot open L3 store in {store_dir}: {exc}") from None
        try:
            ok = self._h.conn.execute("SELECT to_regclass('l3_memories') IS NOT NULL").fetchone()
            if not ok or not ok[0]:
                where = self._where()
                self.close()
                raise ArmError(f"{self.name}: L3 database of {where} has no l3_memories table")
            self._apply_pg_settings(self._h.conn)
        except psycopg.Error as exc:
            where = self._where()
            self.close()
            raise ArmError(f"{self.name}: cannot read L3 of {where}: {exc}") from exc
        self._compact_if_needed(self._l3_insert, trigger=None)

    def reset(self) -> None:
        """Empty all three tiers of the open store (indexes and server stay up).

        For driving several conversations through one store (issue 8).

        Raises:
            ArmError: when the store is not open or a statement fails.
        """
        db, conn = self._sqlite(), self._pg()
        try:
            with db:
                db.execute("DELETE FROM l2_covers; DELETE FROM l2_nodes; DELETE FROM l1_turns;")
            conn.execute("TRUNCATE l3_memories")
        except (apsw.Error, psycopg.Error) as exc:
            raise ArmError(f"{self.name}: reset of {self._where()} failed: {exc}") from exc

    # ------------------------------------------------------------------------ build
    def build(self, corpus: Corpus, vectors: Embeddings, store_dir: Path) -> BuildStats:
        """Create the store from scratch by replaying ``corpus`` in ``seq`` order; leave it open.

        Every memory goes through the same ingest logic as :meth:`ingest_turn` (L1
        insert, rolling compaction into L2, eviction to L3) inside one SQLite
        transaction; the rows evicted to L3 are buffered and written with one binary
        ``COPY``. ``ingest_ms`` covers token counting, the replay (L1 and L2 writes with
        their FTS5 indexes, which are maintained incrementally, and the summarising) and
        the COPY; ``index_ms`` covers L3's B-tree and HNSW indexes, ``VACUUM (ANALYZE)``
        and SQLite's ``ANALYZE``.

        Args:
            corpus: the memories (columns of :class:`~agentmem.arms.base.Corpus`); ids must
                be unique.
            vectors: float32 ``(n, 384)`` embeddings keyed by memory id.
            store_dir: the store directory (``tiers.db`` and, embedded, ``pgdata/``).

        Returns:
            Build timings in milliseconds.

        Raises:
            ArmError: on missing columns, duplicate ids, missing or mis-shaped embeddings,
                or any engine error (the message names the store).
        """
        store_dir = Path(store_dir)
        mem = corpus.memories
        missing = [c for c in (*_MEM_NAMES, "entity_ids") if c not in mem.columns]
        if missing:
            raise ArmError(f"{self.name}: corpus memories lack columns {missing} ({store_dir})")
        if mem["memory_id"].n_unique() != mem.height:
            raise ArmError(f"{self.name}: corpus memory ids are not unique ({store_dir})")
        mem = mem.sort("seq", maintain_order=True)
        ids = mem["memory_id"].to_list()
        try:
            mat = np.ascontiguousarray(vectors.get(ids), dtype=np.float32)
        except KeyError as exc:
            raise ArmError(f"{self.name}: {exc.args[0]} ({store_dir})") from None
        if mat.ndim != 2 or mat.shape[1] != VECTOR_DIM:
            raise ArmError(
                f"{self.name}: embeddings have shape {mat.shape}, need (n, {VECTOR_DIM})"
            )
        self._create_stores(store_dir, pg_indexes=False)
        db, conn = self._sqlite(), self._pg()
        buffer: list[tuple[Any, ...]] = []
        try:
            t0 = time.perf_counter()
            rows = mem.select(*_MEM_NAMES, "entity_ids").iter_rows(named=True)
            ntoks = count_tokens(mem["body"].to_list()) if mem.height else []
            with db:
                for i, row in enumerate(rows):
                    self._ingest(row, mat[i], ntoks[i], buffer.extend)
            if buffer:
                copy = sql.SQL("COPY l3_memories ({}) FROM STDIN (FORMAT BINARY)").format(
                    sql.SQL(", ").join(map(sql.Identifier, _L3_NAMES))
                )
                with conn.transaction(), conn.cursor() as cur, cur.copy(copy) as cp:
                    cp.set_types([t for _, t, _ in (*_MEM_COLUMNS, *_L3_EXTRA)])
                    for values in buffer:
                        cp.write_row(values)
            t1 = time.perf_counter()
            conn.execute(
                "SELECT set_config('maintenance_work_mem', %s, false)",
                (BUILD_MAINTENANCE_WORK_MEM,),
            )
            for stmt in self._pg_index_ddl():
                conn.execute(stmt)
            conn.execute("VACUUM (ANALYZE) l3_memories")
            conn.execute("RESET maintenance_work_mem")
            db.execute("ANALYZE")
            t2 = time.perf_counter()
        except (apsw.Error, psycopg.Error) as exc:
            where = self._where()
            self.close()
            raise ArmError(f"{self.name}: build of {where} failed: {exc}") from exc
        except ArmError:
            self.close()
            raise
        return BuildStats(ingest_ms=(t1 - t0) * 1e3, index_ms=(t2 - t1) * 1e3)

    # ----------------------------------------------------------------------- ingest
    def _normalise(self, row: dict[str, Any]) -> tuple[tuple[Any, ...], list[str]]:
        """Return the memory column values of ``row`` (in :data:`_MEM_COLUMNS` order) and entities.

        Missing optional columns are ``None``; ``memory_id`` and ``body`` are required.

        Raises:
            ArmError: on a missing id or body, a value of the wrong type, or a NUL
                character in text (PostgreSQL text cannot hold it).
        """
        mid = row.get("memory_id")
        if not isinstance(mid, str) or not mid:
            raise ArmError(f"{self.name}: a memory row needs a non-empty str memory_id")
        if not isinstance(row.get("body"), str):
            raise ArmError(f"{self.name}: memory {mid!r} needs a str body")
        vals: list[Any] = []
        for col in _MEM_NAMES:
            v = row.get(col)
            try:
                if v is None:
                    pass
                elif col in _INT_COLS:
                    if isinstance(v, bool) or int(v) != v:
                        raise ValueError
                    v = int(v)
                elif col == "confidence":
                    v = float(v)
                elif not isinstance(v, str):
                    raise ValueError
            except (TypeError, ValueError):
                raise ArmError(f"{self.name}: memory {mid!r} has a bad {col} value {v!r}") from None
            if isinstance(v, str) and "\x00" in v:
                raise ArmError(
                    f"{self.name}: memory {mid!r} {col} contains a NUL character, which "
                    "PostgreSQL text cannot store"
                )
            vals.append(v)
        ents = row.get("entity_ids")
        entities = [str(e) for e in ents] if ents is not None else []
        if any("\x00" in e for e in entities):
            raise ArmError(f"{self.name}: memory {mid!r} entity_ids contain a NUL character")
        return tuple(vals), entities

    def _vector(self, vec: Any, what: str) -> np.ndarray:
        """Return ``vec`` as contiguous float32 ``(384,)``.

        Raises:
            ArmError: when it is missing, not 384 values, or not finite.
        """
        v = checked_vector(vec, self.name, what, VECTOR_DIM)
        if not np.all(np.isfinite(v)):
            raise ArmError(f"{self.name}: {what} embedding has non-finite values")
        return v

    def _ingest(
        self,
        row: dict[str, Any],
        vec: np.ndarray,
        ntok: int,
        l3_write: Callable[[list[tuple[Any, ...]]], None],
    ) -> TierEvent:
        """Insert one turn into L1, then compact if L1 passed its cap (build and turns)."""
        db = self._sqlite()
        vals, entities = self._normalise(row)
        vec = self._vector(vec, f"memory {vals[0]!r}")
        t0 = time.perf_counter()
        try:
            with db:
                db.execute(
                    f"INSERT INTO l1_turns({', '.join(_MEM_NAMES)}, entity_ids, body_tokens, "
                    f"embedding) VALUES ({', '.join('?' * (len(_MEM_NAMES) + 3))})",
                    (*vals, json.dumps(entities), int(ntok), vec.tobytes()),
                )
        except apsw.ConstraintError:
            raise ArmError(
                f"{self.name}: memory {vals[0]!r} is already in L1 of {self._where()}"
            ) from None
        l1_ms = _ms(t0)
        compactions, moved, lat = self._compact_if_needed(l3_write, trigger=vals[0])
        t1 = time.perf_counter()
        total, n = self._l1_totals()
        lat["L1"] = l1_ms + _ms(t1)
        return TierEvent(
            memory_id=vals[0],
            tokens=int(ntok),
            l1_tokens=total,
            l1_turns=n,
            compactions=compactions,
            moved_to_l3=moved,
            latency_ms={t: lat.get(t, 0.0) for t in TIERS},
        )

    def ingest_turn(self, memory_row: dict[str, Any], vector: Any) -> TierEvent:
        """Add one conversation turn (a memory) to working memory; compact if L1 overflows.

        The turn is committed to L1; when L1 then holds more than ``l1_max_tokens`` tokens,
        the oldest turns are compacted into L2 nodes (one per session) and moved to L3
        until L1 holds at most :attr:`l1_target_tokens` (the new turn itself is compacted
        when it alone exceeds that).

        Args:
            memory_row: the memory columns (``memory_id`` and ``body`` required; others
                optional, e.g. a row of ``corpus.memories.iter_rows(named=True)``).
            vector: its embedding, 384 float values.

        Returns:
            The :class:`TierEvent` (L1 state after the turn, compactions, per-tier ms).

        Raises:
            ArmError: when the store is not open, the row or vector is invalid, the id is
                already stored, or an engine fails.
        """
        self._sqlite()
        vals, _ = self._normalise(memory_row)
        t0 = time.perf_counter()
        try:
            dup = (
                self._pg()
                .execute("SELECT 1 FROM l3_memories WHERE memory_id = %s", (vals[0],))
                .fetchone()
            )
        except psycopg.Error as exc:
            raise ArmError(f"{self.name}: L3 lookup on {self._where()} failed: {exc}") from exc
        if dup:
            raise ArmError(f"{self.name}: memory {vals[0]!r} is already in L3 of {self._where()}")
        lookup_ms = _ms(t0)
        ntok = count_tokens([memory_row["body"]])[0]
        event = self._ingest(memory_row, vector, ntok, self._l3_insert)
        event.latency_ms["L3"] += lookup_ms
        return event

    def remember(self, memories: pl.DataFrame, vectors: Embeddings) -> None:
        """Add memories as turns, through the path :meth:`ingest_turn` takes; apply corrections.

        The batch is validated by :func:`~agentmem.arms.base.prepare_memories`, then every
        row is checked (no NUL character, which PostgreSQL text cannot hold) and its id
        looked up in L1 and L3 before anything is written. Each row, in order, is committed
        to L1 and may trigger a rolling compaction (L2 nodes written, the oldest turns
        moved to L3), exactly as :meth:`ingest_turn`. Then each memory named in a row's
        ``supersedes`` list gets ``superseded_by`` = that row's id wherever it is held: its
        L1 row and its L2 provenance row (one SQLite transaction) and its L3 row (one
        PostgreSQL transaction), so a current-only query no longer returns it from any
        tier. Each L1 insert and compaction is committed when it is made (WAL,
        ``synchronous=NORMAL``), L3 writes in PostgreSQL transactions; the engines are not
        committed together (module docstring), so an engine failure part-way leaves the
        rows before it stored.

        Args:
            memories: the rows (:func:`~agentmem.arms.base.prepare_memories`).
            vectors: their embeddings (``(n, 384)``).

        Raises:
            ArmError: when the store is not open, the batch is invalid, a value holds a NUL
                character, an id is already stored (L1 or L3), a superseded id is neither
                stored nor in the batch, or an engine or the summariser fails.
        """
        self._sqlite()
        self._pg()
        batch = prepare_memories(memories, vectors, self.name)
        ids = batch.ids
        if not ids:
            return
        rows = batch.memories.select(*_MEM_NAMES, "entity_ids").rows(named=True)
        for r in rows:
            self._normalise(r)
        held = self._held(ids)
        dup = next((m for m in ids if m in held), None)
        if dup is not None:
            raise ArmError(f"{self.name}: memory {dup!r} is already stored in {self._where()}")
        olds = {old for old, _ in batch.supersessions} - set(ids)
        stored = self._held(sorted(olds)) if olds else set()
        for old, new in batch.supersessions:
            if old in olds and old not in stored:
                raise ArmError(
                    f"{self.name}: memory {new!r} supersedes {old!r}, which is not stored in "
                    f"{self._where()}"
                )
        ntoks = count_tokens([r["body"] for r in rows])
        for i, r in enumerate(rows):
            self._ingest(r, batch.vectors[i], ntoks[i], self._l3_insert)
        if batch.supersessions:
            self._supersede([(new, old) for old, new in batch.supersessions])

    def _held(self, ids: Sequence[str]) -> set[str]:
        """Return the ids of ``ids`` stored in L1 or L3.

        Raises:
            ArmError: when an engine fails.
        """
        try:
            l1 = self._sqlite().execute(
                "SELECT memory_id FROM l1_turns "
                "WHERE memory_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(ids)),),
            )
            got = {r[0] for r in l1}
            l3 = self._pg().execute(
                "SELECT memory_id FROM l3_memories WHERE memory_id = ANY(%s)", (list(ids),)
            )
            got.update(r[0] for r in l3.fetchall())
        except (apsw.Error, psycopg.Error) as exc:
            raise ArmError(f"{self.name}: id lookup on {self._where()} failed: {exc}") from exc
        return got

    def _supersede(self, pairs: list[tuple[str, str]]) -> None:
        """Set ``superseded_by`` (``(new, old)`` pairs) in L1, L2 provenance and L3.

        Raises:
            ArmError: when an engine fails.
        """
        db, conn = self._sqlite(), self._pg()
        try:
            with db:
                db.executemany("UPDATE l1_turns SET superseded_by = ? WHERE memory_id = ?", pairs)
                db.executemany("UPDATE l2_covers SET superseded_by = ? WHERE memory_id = ?", pairs)
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "UPDATE l3_memories SET superseded_by = %s WHERE memory_id = %s", pairs
                )
        except (apsw.Error, psycopg.Error) as exc:
            raise ArmError(f"{self.name}: correction in {self._where()} failed: {exc}") from exc

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """Return the stored rows of ``memory_ids`` from L1 and L3 (L1's when in both).

        ``form`` is null (the tiers do not keep it).

        Returns:
            The :data:`~agentmem.arms.base.MEMORY_SCHEMA` columns, one row per stored id
            asked, in the order asked.

        Raises:
            ArmError: when the store is not open or an engine fails.
        """
        db, conn = self._sqlite(), self._pg()
        ids = [str(m) for m in memory_ids]
        names = ", ".join(_MEM_NAMES)
        try:
            l1 = [
                (*r[:-1], json.loads(r[-1] or "[]"))
                for r in db.execute(
                    f"SELECT {names}, entity_ids FROM l1_turns "
                    "WHERE memory_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids),),
                )
            ]
            l3 = conn.execute(
                f"SELECT {names}, entity_ids FROM l3_memories WHERE memory_id = ANY(%s)",
                (ids,),
            ).fetchall()
        except (apsw.Error, psycopg.Error) as exc:
            raise ArmError(f"{self.name}: fetch on {self._where()} failed: {exc}") from exc
        frame = memory_rows_frame([*l1, *l3], [*_MEM_NAMES, "entity_ids"])
        return memory_frame(frame, ids)

    def _l3_insert(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert evicted rows into L3 in one transaction (``ON CONFLICT DO NOTHING``).

        Raises:
            ArmError: on a PostgreSQL error.
        """
        if not rows:
            return
        conn = self._pg()
        stmt = sql.SQL(
            "INSERT INTO l3_memories ({}) VALUES ({}) ON CONFLICT (memory_id) DO NOTHING"
        ).format(
            sql.SQL(", ").join(map(sql.Identifier, _L3_NAMES)),
            sql.SQL(", ").join(sql.Placeholder() * len(_L3_NAMES)),
        )
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(stmt, rows)
        except psycopg.Error as exc:
            raise ArmError(f"{self.name}: L3 insert into {self._where()} failed: {exc}") from exc

    def _l1_totals(self) -> tuple[int, int]:
        """Return ``(tokens, turns)`` currently in L1."""
        row = (
            self._sqlite()
            .execute("SELECT coalesce(sum(body_tokens), 0), count(*) FROM l1_turns")
            .fetchall()[0]
        )
        return int(row[0]), int(row[1])

    def _compact_if_needed(
        self, l3_write: Callable[[list[tuple[Any, ...]]], None], trigger: str | None
    ) -> tuple[list[Compaction], list[str], dict[str, float]]:
        """Run one rolling compaction when L1 exceeds ``l1_max_tokens``.

        Evicts the oldest turns (ingestion order) until L1 holds at most
        :attr:`l1_target_tokens`; groups them by session (first-appearance order); writes
        one summary node per group; sends the rows to ``l3_write``; then, in one SQLite
        transaction, inserts nodes and provenance and deletes the rows from L1.

        Returns:
            ``(compactions, moved memory ids, {"L2": ms, "L3": ms})``.

        Raises:
            ArmError: on an engine or summariser failure (L1 is left unchanged then).
        """
        db = self._sqlite()
        lat = {"L2": 0.0, "L3": 0.0}
        total, _ = self._l1_totals()
        if total <= self.l1_max_tokens:
            return [], [], lat
        t0 = time.perf_counter()
        cols = ("id", *_MEM_NAMES, "entity_ids", "body_tokens", "embedding")
        evict: list[dict[str, Any]] = []
        for r in db.execute(f"SELECT {', '.join(cols)} FROM l1_turns ORDER BY id"):
            if total <= self.l1_target_tokens:
                break
            d = dict(zip(cols, r, strict=True))
            evict.append(d)
            total -= int(d["body_tokens"])
        groups: dict[str | None, list[dict[str, Any]]] = {}
        for d in evict:
            groups.setdefault(d["session_id"], []).append(d)
        summ = self._summ()
        sname = summariser_name(summ)
        drafts: list[tuple[str | None, list[dict[str, Any]], str, int, list[str]]] = []
        try:
            for sid, group in groups.items():
                summary = summ.summarise([d["body"] for d in group], self.summary_tokens)
                stoks = count_tokens([summary])[0] if summary else 0
                if stoks > self.summary_tokens:
                    raise ArmError(
                        f"{self.name}: summariser {sname!r} returned {stoks} tokens, over the "
                        f"budget of {self.summary_tokens}"
                    )
                excerpts = [
                    "\n".join(s for s in split_sentences(d["body"]) if s in summary) for d in group
                ]
                drafts.append((sid, group, summary, stoks, excerpts))
        except ArmError:
            raise
        except Exception as exc:  # a summariser may raise anything (HTTP, parsing, ...)
            raise ArmError(f"{self.name}: summariser {sname!r} failed: {exc}") from exc
        lat["L2"] += _ms(t0)

        t1 = time.perf_counter()
        l3_write(
            [
                (
                    *(d[c] for c in _MEM_NAMES),
                    json.loads(d["entity_ids"] or "[]"),
                    int(d["body_tokens"]),
                    np.frombuffer(d["embedding"], dtype=np.float32),
                )
                for d in evict
            ]
        )
        lat["L3"] += _ms(t1)

        t2 = time.perf_counter()
        compactions: list[Compaction] = []
        try:
            with db:
                for sid, group, summary, stoks, excerpts in drafts:
                    epoch = int(
                        db.execute(
                            "SELECT coalesce(max(epoch) + 1, 0) FROM l2_nodes "
                            "WHERE session_id IS ?",
                            (sid,),
                        ).fetchall()[0][0]
                    )
                    days = [d["created_day"] for d in group if d["created_day"] is not None]
                    seqs = [d["seq"] for d in group if d["seq"] is not None]
                    src = sum(int(d["body_tokens"]) for d in group)
                    db.execute(
                        "INSERT INTO l2_nodes(session_id, epoch, first_seq, last_seq, first_day, "
                        "last_day, n_covered, source_tokens, summary, summary_tokens, summariser, "
                        "trigger_memory_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            sid,
                            epoch,
                            min(seqs, default=None),
                            max(seqs, default=None),
                            min(days, default=None),
                            max(days, default=None),
                            len(group),
                            src,
                            summary,
                            stoks,
                            sname,
                            trigger,
                        ),
                    )
                    node_id = int(db.last_insert_rowid())
                    db.executemany(
                        "INSERT INTO l2_covers(node_id, memory_id, ord, excerpt, session_id, seq, "
                        "created_day, fact_id, superseded_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [
                            (
                                node_id,
                                d["memory_id"],
                                i,
                                excerpts[i],
                                d["session_id"],
                                d["seq"],
                                d["created_day"],
                                d["fact_id"],
                                d["superseded_by"],
                            )
                            for i, d in enumerate(group)
                        ],
                    )
                    compactions.append(
                        Compaction(
                            node_id=node_id,
                            session_id=sid,
                            epoch=epoch,
                            memory_ids=tuple(d["memory_id"] for d in group),
                            source_tokens=src,
                            summary_tokens=stoks,
                        )
                    )
                db.executemany("DELETE FROM l1_turns WHERE id = ?", [(d["id"],) for d in evict])
        except apsw.Error as exc:
            raise ArmError(f"{self.name}: compaction in {self._where()} failed: {exc}") from exc
        lat["L2"] += _ms(t2)
        return compactions, [d["memory_id"] for d in evict], lat

    # ------------------------------------------------------------------------ query
    def _statements(self, q: Query, k: int) -> list[_Stmt]:
        """Return the ranking statements :meth:`query` runs (keyword ones only with terms)."""
        cond, params = sqlite_predicate_sql(q.predicate)
        pcond, pparams = pg_predicate_sql(q.predicate)
        match = fts5_match(q.text)
        bk = max(int(self.branch_k), 1)
        out: list[_Stmt] = []
        if match is not None:
            out.append(
                _Stmt(
                    "L1",
                    "L1 keyword",
                    "sqlite",
                    "SELECT m.memory_id, m.created_day, m.seq FROM l1_fts "
                    "JOIN l1_turns AS m ON m.id = l1_fts.rowid "
                    f"WHERE l1_fts MATCH :match AND {cond} "
                    "ORDER BY bm25(l1_fts), m.created_day DESC, m.seq DESC LIMIT :bk",
                    {**params, "match": match, "bk": bk},
                )
            )
        if self.recent_k > 0:
            out.append(
                _Stmt(
                    "L1",
                    "L1 recency",
                    "sqlite",
                    f"SELECT m.memory_id, m.created_day, m.seq FROM l1_turns AS m WHERE {cond} "
                    "ORDER BY m.created_day DESC, m.seq DESC LIMIT :rk",
                    {**params, "rk": int(self.recent_k)},
                )
            )
        if match is not None:
            terms = query_terms(q.text)
            hits = " + ".join(f"(instr(lower(m.excerpt), :t{i}) > 0)" for i in range(len(terms)))
            out.append(
                _Stmt(
                    "L2",
                    "L2 summaries",
                    "sqlite",
                    "WITH nodes AS (SELECT rowid AS node_id, bm25(l2_fts) AS score FROM l2_fts "
                    "WHERE l2_fts MATCH :match ORDER BY score, rowid DESC LIMIT :nk) "
                    "SELECT m.memory_id, m.created_day, m.seq FROM nodes "
                    "JOIN l2_covers AS m ON m.node_id = nodes.node_id "
                    f"WHERE {cond} "
                    f"ORDER BY ({hits}) DESC, nodes.score, nodes.node_id DESC, "
                    "m.created_day DESC, m.seq DESC LIMIT :bk",
                    {
                        **params,
                        **{f"t{i}": t for i, t in enumerate(terms)},
                        "match": match,
                        "nk": int(self.l2_search_nodes),
                        "bk": bk,
                    },
                )
            )
        out.append(
            _Stmt(
                "L3",
                "L3 vector",
                "postgres",
                sql.SQL(
                    "SELECT memory_id, created_day, seq FROM l3_memories WHERE {} "
                    "ORDER BY embedding <=> %(qv)s LIMIT %(bk)s"
                ).format(pcond),
                {**pparams, "qv": self._vector(q.embedding, f"query {q.query_id!r}"), "bk": bk},
            )
        )
        return out

    def _count_statements(self, q: Query) -> tuple[_Stmt, Callable[[list[str]], _Stmt]]:
        """Return the L1 id statement and a builder of the L1 ∪ L3 count statement."""
        cond, params = sqlite_predicate_sql(q.predicate)
        pcond, pparams = pg_predicate_sql(q.predicate)
        l1 = _Stmt(
            "L1",
            "count: L1 ids",
            "sqlite",
            f"SELECT m.memory_id FROM l1_turns AS m WHERE {cond}",
            params,
        )

        def union(l1_ids: list[str]) -> _Stmt:
            return _Stmt(
                "L3",
                "count: L1 ∪ L3",
                "postgres",
                sql.SQL(
                    "SELECT count(*) FROM (SELECT memory_id FROM l3_memories WHERE {} "
                    "UNION SELECT unnest(%(l1)s::text[])) AS u"
                ).format(pcond),
                {**pparams, "l1": l1_ids},
            )

        return l1, union

    def _run(self, st: _Stmt) -> list[tuple[Any, ...]]:
        """Execute one statement on its engine and return all rows."""
        if st.engine == "sqlite":
            return [tuple(r) for r in self._sqlite().execute(st.text, st.params)]
        return [tuple(r) for r in self._pg().execute(st.text, st.params).fetchall()]

    def raw_ingest(self) -> RawIngest:
        """The raw bulk path: the final tier tables written raw (SQLite and ``COPY``)."""
        return RawIngest(
            "tables",
            "tiers.db",
            ("l1_turns", "l2_nodes", "l2_covers"),
            ("l3_memories",),
            beyond="the architecture's replay: one L1 insert per memory with FTS5 triggers, "
            "o200k token counts, rolling compaction with extractive summaries into L2, "
            "eviction to L3 (the raw path writes only the final rows)",
        )

    def query(self, q: Query, k: int) -> Result:
        """Return at most ``k`` memory ids fused over the three tiers, plus the count if wanted.

        See the class docstring for the lists and the fusion. Per-tier wall time of this
        call is left in :attr:`last_latency_ms` (``"L1"``, ``"L2"``, ``"L3"``, ``"fuse"``,
        and ``"count"`` when counting).

        Raises:
            ArmError: when the store is not open, the query embedding is bad, or an engine
                fails; hostile text itself never raises.
        """
        self._sqlite()
        self._pg()
        lat = {t: 0.0 for t in TIERS}
        ids: list[str] = []
        count: int | None = None
        try:
            if k > 0:
                lists: list[list[tuple[str, Any, Any]]] = []
                for st in self._statements(q, k):
                    t0 = time.perf_counter()
                    lists.append([(r[0], r[1], r[2]) for r in self._run(st)])
                    lat[st.tier] += _ms(t0)
                t0 = time.perf_counter()
                ids = [m for m, _ in rrf_fuse(lists, self.rrf_k)[:k]]
                lat["fuse"] = _ms(t0)
            if q.wants_count:
                t0 = time.perf_counter()
                l1, union = self._count_statements(q)
                l1_ids = [r[0] for r in self._run(l1)]
                count = int(self._run(union(l1_ids))[0][0])
                lat["count"] = _ms(t0)
        except (apsw.Error, psycopg.Error) as exc:
            raise ArmError(
                f"{self.name}: query {q.query_id!r} on {self._where()} failed: {exc}"
            ) from exc
        self.last_latency_ms = lat
        return Result(memory_ids=ids[:k], count=count)

    def raw_query_call(
        self, q: Query, k: int
    ) -> Callable[[], tuple[list[list[Any]], list[list[Any]]]]:
        """Return a zero-argument function making exactly the driver calls :meth:`query` makes.

        The tier statements (:meth:`_statements`) and the count statements are built here,
        once (PostgreSQL ones rendered to their SQL text); each call of the returned
        function only executes them on their engines (SQLite, PostgreSQL) and fetches every
        row, passing the L1 ids read by the count's first statement to its second. No RRF
        fusion (:meth:`raw_ids` does it), no per-tier timing. The harness-overhead
        benchmark (:mod:`agentmem.bench`) times it against :meth:`query`.

        Returns:
            A function returning ``(ranked, counted)``: one list of rows per tier
            statement, then one per count statement (empty unless ``q.wants_count``).

        Raises:
            ArmError: when the store is not open or the query embedding is bad.
        """
        db, conn = self._sqlite(), self._pg()

        def bare(st: _Stmt) -> tuple[bool, Any, dict[str, Any]]:
            pg = st.engine != "sqlite"
            return pg, (st.text.as_string(conn) if pg else st.text), st.params

        stmts = [bare(st) for st in self._statements(q, k)] if k > 0 else []
        count: tuple[Any, Any] | None = None
        if q.wants_count:
            l1, union = self._count_statements(q)
            count = (bare(l1), bare(union([])))

        def call() -> tuple[list[list[Any]], list[list[Any]]]:
            out = [
                (conn if pg else db).execute(text, params).fetchall() for pg, text, params in stmts
            ]
            counted: list[list[Any]] = []
            if count is not None:
                (_, l1_text, l1_params), (_, u_text, u_params) = count
                l1_rows = db.execute(l1_text, l1_params).fetchall()
                counted.append(l1_rows)
                u_rows = conn.execute(u_text, {**u_params, "l1": [r[0] for r in l1_rows]})
                counted.append(u_rows.fetchall())
            return out, counted

        return call

    def raw_ids(self, raw: tuple[list[list[Any]], list[list[Any]]], k: int) -> list[str]:
        """The ids :meth:`query` makes of the bare call's rows: RRF over the tier lists, top ``k``.

        Args:
            raw: ``(ranked, counted)`` from the function :meth:`raw_query_call` returned.
            k: the result length the call was made for.

        Returns:
            At most ``k`` memory ids, best first (:func:`rrf_fuse` with ``rrf_k``).
        """
        if k <= 0:
            return []
        lists = [[(r[0], r[1], r[2]) for r in rows] for rows in raw[0]]
        return [m for m, _ in rrf_fuse(lists, self.rrf_k)[:k]]

    # ------------------------------------------------------------- assemble context
    def assemble_context(
        self,
        query_text: str,
        query_vec: Any,
        k: int = 5,
        *,
        predicate: Predicate | None = None,
    ) -> AssembledContext:
        """Assemble the context an agent would see for one turn: L1 + L2 + L3.

        * **L1**: the whole working memory (every L1 turn, chronological — at most
          ``l1_max_tokens`` tokens); FTS5 marks the turns matching ``query_text``
          (``keyword_hit``).
        * **L2**: ``l2_context_nodes`` summary nodes: the best by FTS5 ``bm25`` over the
          summaries (ties newest), then the newest nodes to fill up (the running summary).
        * **L3**: the ``k`` nearest memories by HNSW cosine distance.

        ``predicate`` (optional) restricts L2 (a node qualifies when one of its covered
        memories matches) and L3; working memory is always included whole.

        Args:
            query_text: the turn's text or probe question (untrusted; may be empty).
            query_vec: its embedding, 384 floats.
            k: memories recalled from L3 (``0`` disables L3).
            predicate: optional structured filter for L2 and L3.

        Returns:
            :class:`AssembledContext` ``(items, tokens per tier, latency ms per tier)``.

        Raises:
            ArmError: when the store is not open, the vector is bad, or an engine fails.
        """
        db = self._sqlite()
        conn = self._pg()
        qv = self._vector(query_vec, "context query")
        match = fts5_match(query_text or "")
        cond, params = sqlite_predicate_sql(predicate)
        pcond, pparams = pg_predicate_sql(predicate)
        items: list[ContextItem] = []
        lat = {t: 0.0 for t in TIERS}
        try:
            t0 = time.perf_counter()
            hits: set[str] = set()
            if match is not None:
                hits = {
                    r[0]
                    for r in db.execute(
                        "SELECT m.memory_id FROM l1_fts JOIN l1_turns AS m "
                        "ON m.id = l1_fts.rowid WHERE l1_fts MATCH ?",
                        (match,),
                    )
                }
            for i, (mid, body, ntok) in enumerate(
                db.execute("SELECT memory_id, body, body_tokens FROM l1_turns ORDER BY id")
            ):
                items.append(ContextItem("L1", mid, body, int(ntok), (mid,), i, mid in hits))
            lat["L1"] = _ms(t0)

            t0 = time.perf_counter()
            nodes: list[tuple[int, str, int, bool]] = []
            want = int(self.l2_context_nodes)
            exists = f"EXISTS (SELECT 1 FROM l2_covers AS m WHERE m.node_id = n.node_id AND {cond})"
            if want > 0 and match is not None:
                nodes += [
                    (int(r[0]), r[1], int(r[2]), True)
                    for r in db.execute(
                        "SELECT n.node_id, n.summary, n.summary_tokens FROM l2_fts "
                        "JOIN l2_nodes AS n ON n.node_id = l2_fts.rowid "
                        f"WHERE l2_fts MATCH :match AND {exists} "
                        "ORDER BY bm25(l2_fts), n.node_id DESC LIMIT :n",
                        {**params, "match": match, "n": want},
                    )
                ]
            if len(nodes) < want:
                have = [n[0] for n in nodes]
                nodes += [
                    (int(r[0]), r[1], int(r[2]), False)
                    for r in db.execute(
                        "SELECT n.node_id, n.summary, n.summary_tokens FROM l2_nodes AS n "
                        f"WHERE {exists} AND n.node_id NOT IN (SELECT value FROM json_each(:have)) "
                        "ORDER BY n.node_id DESC LIMIT :n",
                        {**params, "have": json.dumps(have), "n": want - len(nodes)},
                    )
                ]
            for i, (node_id, summary, ntok, hit) in enumerate(nodes):
                covered = tuple(
                    r[0]
                    for r in db.execute(
                        "SELECT memory_id FROM l2_covers WHERE node_id = ? ORDER BY ord",
                        (node_id,),
                    )
                )
                items.append(ContextItem("L2", f"L2:{node_id}", summary, ntok, covered, i, hit))
            lat["L2"] = _ms(t0)

            t0 = time.perf_counter()
            if k > 0:
                rows = conn.execute(
                    sql.SQL(
                        "SELECT memory_id, body, body_tokens FROM l3_memories WHERE {} "
                        "ORDER BY embedding <=> %(qv)s LIMIT %(k)s"
                    ).format(pcond),
                    {**pparams, "qv": qv, "k": int(k)},
                ).fetchall()
                for i, (mid, body, ntok) in enumerate(rows):
                    items.append(ContextItem("L3", mid, body, int(ntok), (mid,), i, False))
            lat["L3"] = _ms(t0)
        except (apsw.Error, psycopg.Error) as exc:
            raise ArmError(
                f"{self.name}: assembling context on {self._where()} failed: {exc}"
            ) from exc
        tokens = {t: sum(it.tokens for it in items if it.tier == t) for t in TIERS}
        return AssembledContext(items=items, tokens=tokens, latency_ms=lat)

    # ------------------------------------------------------------------ introspection
    def tier_stats(self) -> dict[str, int]:
        """Return what each tier holds now.

        Returns:
            ``{"l1_turns", "l1_tokens", "l2_nodes", "l2_covered", "l2_summary_tokens",
            "l3_rows"}``.

        Raises:
            ArmError: when the store is not open or a statement fails.
        """
        db, conn = self._sqlite(), self._pg()
        try:
            tokens, turns = self._l1_totals()
            nodes, stoks = db.execute(
                "SELECT count(*), coalesce(sum(summary_tokens), 0) FROM l2_nodes"
            ).fetchall()[0]
            covered = db.execute("SELECT count(*) FROM l2_covers").fetchall()[0][0]
            l3 = conn.execute("SELECT count(*) FROM l3_memories").fetchone()[0]  # type: ignore[index]
        except (apsw.Error, psycopg.Error) as exc:
            raise ArmError(f"{self.name}: tier stats of {self._where()} failed: {exc}") from exc
        return {
            "l1_turns": turns,
            "l1_tokens": tokens,
            "l2_nodes": int(nodes),
            "l2_covered": int(covered),
            "l2_summary_tokens": int(stoks),
            "l3_rows": int(l3),
        }

    def explain(self, q: Query, k: int = 10) -> str:
        """Return the real plans of every statement :meth:`query` runs for ``q``.

        SQLite statements get ``EXPLAIN QUERY PLAN`` (an indented tree); PostgreSQL ones
        ``EXPLAIN (FORMAT JSON, SETTINGS)`` (JSON), preceded by the session's ``hnsw.*``
        settings (``SETTINGS`` lists only non-default ones). The count's
        PostgreSQL statement is explained with the L1 ids the SQLite statement returns.

        Args:
            q: the query.
            k: the result size (does not change the plans).

        Returns:
            One block per statement: ``-- <label> [<engine>]: <SQL>`` then the plan.

        Raises:
            ArmError: when the store is not open or EXPLAIN fails.
        """
        db, conn = self._sqlite(), self._pg()
        stmts = self._statements(q, max(k, 1))
        if fts5_match(q.text) is None:
            note = "-- L1 keyword, L2 summaries: no statement runs (the text has no terms)"
        else:
            note = ""
        parts = [note] if note else []
        try:
            count_l1: _Stmt | None = None
            union: Callable[[list[str]], _Stmt] | None = None
            if q.wants_count:
                count_l1, union = self._count_statements(q)
                stmts.append(count_l1)
            for st in stmts:
                parts.append(self._explain_one(db, conn, st))
            if count_l1 is not None and union is not None:
                l1_ids = [r[0] for r in self._run(count_l1)]
                parts.append(self._explain_one(db, conn, union(l1_ids)))
        except (apsw.Error, psycopg.Error) as exc:
            raise ArmError(f"{self.name}: explain on {self._where()} failed: {exc}") from exc
        return "\n\n".join(parts)

    def _explain_one(self, db: apsw.Connection, conn: psycopg.Connection, st: _Stmt) -> str:
        """Return one statement's header line and engine plan."""
        if st.engine == "sqlite":
            rows = db.execute("EXPLAIN QUERY PLAN " + st.text, st.params).fetchall()
            return f"-- {st.label} [sqlite]: {' '.join(st.text.split())}\n{format_plan(rows)}"
        row = conn.execute(
            sql.SQL("EXPLAIN (FORMAT JSON, SETTINGS) ") + st.text, st.params
        ).fetchone()
        doc = row[0] if row is not None else []
        if isinstance(doc, str):
            doc = json.loads(doc)
        text = st.text.as_string(conn)
        settings = {
            key: conn.execute("SELECT current_setting(%s)", (key,)).fetchone()[0]  # type: ignore[index]
            for key in ("hnsw.ef_search", "hnsw.iterative_scan")
        }
        return (
            f"-- {st.label} [postgres]: {' '.join(text.split())}\n"
            f"-- session settings: {json.dumps(settings)}\n{json.dumps(doc, indent=2)}"
        )

    def storage(self) -> StorageStats:
        """Return bytes per object of both engines, from their own accounting.

        SQLite (after a WAL checkpoint): ``dbstat`` ``sum(pgsize)`` per table, index and
        FTS5 shadow table, named ``sqlite:<name>`` (plus ``sqlite:tiers.db-wal`` if a
        non-empty WAL remains). PostgreSQL: per relation of the store's schema, the heap
        (``pg_table_size`` minus TOAST), TOAST (``pg:<table> (toast)``) and each index
        (``pg_total_relation_size``), named ``pg:<name>``.

        Raises:
            ArmError: when the store is not open or the accounting queries fail.
        """
        db, conn = self._sqlite(), self._pg()
        objects: dict[str, int] = {}
        path = Path(self._store_dir or ".") / DB_NAME
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            for n, b in db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
                objects[f"sqlite:{n}"] = int(b)
        except apsw.Error as exc:
            raise ArmError(f"{self.name}: dbstat on {path} failed: {exc}") from exc
        wal = Path(str(path) + "-wal")
        if wal.is_file() and os.path.getsize(wal) > 0:
            objects[f"sqlite:{wal.name}"] = os.path.getsize(wal)
        try:
            tables = conn.execute(
                "SELECT c.oid, c.relname, c.reltoastrelid::oid, pg_table_size(c.oid), "
                "CASE WHEN c.reltoastrelid = 0 THEN 0 "
                "ELSE pg_total_relation_size(c.reltoastrelid) END "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
                "ORDER BY c.relname"
            ).fetchall()
            for oid, relname, toast_oid, table_size, toast_size in tables:
                objects[f"pg:{relname}"] = int(table_size) - int(toast_size)
                if int(toast_oid) != 0:
                    objects[f"pg:{relname} (toast)"] = int(toast_size)
                for iname, isize in conn.execute(
                    "SELECT ci.relname, pg_total_relation_size(ci.oid) FROM pg_index i "
                    "JOIN pg_class ci ON ci.oid = i.indexrelid WHERE i.indrelid = %s "
                    "ORDER BY ci.relname",
                    (oid,),
                ):
                    objects[f"pg:{iname}"] = int(isize)
        except psycopg.Error as exc:
            raise ArmError(f"{self.name}: storage query on {self._where()} failed: {exc}") from exc
        return StorageStats(
            total_bytes=sum(objects.values()),
            objects=objects,
            source="dbstat + pg_total_relation_size",
        )

    def close(self) -> None:
        """Close SQLite and PostgreSQL; stop the embedded server if this was its last user.

        Safe to call twice.
        """
        db, self._db = self._db, None
        h, self._h = self._h, None
        try:
            if db is not None:
                db.close()
        finally:
            if h is not None:
                h.close()


__all__ = [
    "AssembledContext",
    "Compaction",
    "ContextItem",
    "ThreeTierArm",
    "TierEvent",
    "rrf_fuse",
]
