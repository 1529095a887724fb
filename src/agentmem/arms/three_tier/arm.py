"""The ``three-tier`` arm class: parameters, declarations, create/open/reset.

Its other methods come from the mixins of this package, one per concern (ingest,
compaction, remember, retrieval, context); ``docs/arms/three-tier.md`` describes the tiers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import apsw
import psycopg

from agentmem.arms import base
from agentmem.arms.knobs import Knob
from agentmem.arms.three_tier.context import ContextMixin
from agentmem.arms.three_tier.remember import RememberMixin
from agentmem.arms.three_tier.retrieval import RetrievalMixin
from agentmem.arms.three_tier.schema import DB_NAME, SQLITE_TABLES
from agentmem.pg import PgError, PgHandle, open_store
from agentmem.summarise import SUMMARISERS, Summariser, summariser_name


def _check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` if it is an int ``>= minimum``, else raise ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class ThreeTierArm(RememberMixin, RetrievalMixin, ContextMixin):
    """``three-tier``: L1 working memory (SQLite) + L2 summary nodes (SQLite) + L3 pgvector.

    The tiers, the L1/L3 partition and the order of the writes across the two engines are
    described in ``docs/arms/three-tier.md``.

    ``query(q, k)`` searches every tier, each with the predicate in its SQL ``WHERE``:

    * ``L1 keyword``: FTS5 ``bm25`` over L1 turns (ties newest first), ``branch_k`` rows;
    * ``L1 recency``: the ``recent_k`` newest L1 turns (working memory is always present);
    * ``L2 summaries``: the ``l2_search_nodes`` best summaries by FTS5 ``bm25`` (of the
      query's scope, when it has one), mapped back to their covered memory ids, ordered
      first by how many query terms the memory's own excerpt of the summary contains
      (``instr`` on the lower-cased excerpt: the sentences that matched point to the
      memories they came from), then by node rank, then newest first; ``branch_k`` rows.
      Covered memories the summary does not quote follow; an LLM summary that
      paraphrases yields no excerpts, so node rank alone orders then. A memory of L3
      whose sentences its node's summary left out is reached by keyword only through the
      node's other sentences: by its own words, only ``L3 vector`` finds it;
    * ``L3 vector``: pgvector HNSW, ``ORDER BY embedding <=> q`` among rows matching the
      predicate, ``branch_k`` rows (with ``hnsw.ef_search`` candidates; iterative scans off,
      so a selective predicate can underfill, as in ``pg-hnsw``). Rows at equal distance
      come in the order the scan meets them (no tie-break: which of many equidistant rows
      an approximate scan returns is the index's choice).

    The lists are fused by Reciprocal Rank Fusion (Cormack, Clarke & Buettcher 2009):
    ``score = sum 1 / (rrf_k + rank)``; equal scores newest first (larger ``created_day``,
    then larger ``seq``), then by memory id (:func:`rrf_fuse`); cut to ``k``. Text without
    search terms skips the two keyword lists (recency and vector still answer).
    Aggregates: the exact number of memories matching the predicate over L1 ∪ L3, each
    counted once: the matching L1 ids are read by SQL from SQLite and
    ``SELECT count(*) FROM (SELECT memory_id FROM l3_memories WHERE <predicate> UNION
    SELECT unnest(<L1 ids>)) u`` runs in PostgreSQL.

    Scope: in every tier's search. ``scope_id`` is stored with each L1 turn, each L2
    provenance row and node (compaction groups by scope and session, so a summary never
    mixes two scopes) and each L3 row (partial B-tree index ``l3_scope_id_idx``); a
    query's scope is AND-ed with its predicate in every tier's ``WHERE`` and in both
    count statements, and restricts the L2 summary search to the scope's nodes. L3's
    HNSW scan post-filters, as in ``pg-hnsw``: a selective scope can leave the L3 list
    short.

    Capabilities: predicates in every tier's SQL; exact counts; no join — memories are
    split between SQLite (L1) and PostgreSQL (L3), so no single engine can join them all
    to sessions, facts or entities; each tier's writes are ACID transactions in its engine
    (the L1→L3 move is ordered and idempotent, not atomic; see ``docs/arms/three-tier.md``).

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
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("ef_search", "query", (20, 80), "hnswlib ef of the vector tier"),
        Knob("branch_k", "query", (), "candidates per branch before RRF"),
        Knob("m", "build", (), "HNSW links per node of the vector tier"),
    )
    prefix_stable: ClassVar[bool] = True
    family: ClassVar[str] = "tiered"
    capabilities: ClassVar[base.Capabilities] = base.Capabilities(
        predicate=True,
        aggregate=True,
        vector_access="hnsw-filtered",
        text_access="fts5-bm25",
        transactions=True,
        filter_stage="in-search",
    )
    bare_call: ClassVar[base.BareCall] = base.BareCall(
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

    # ------------------------------------------------------------------ create / open
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
            raise base.ArmError(f"{self.name}: no three-tier store at {path} (missing {DB_NAME})")
        db = self._connect_sqlite(path, create=False)
        try:
            have = {r[0] for r in db.execute("SELECT name FROM sqlite_schema")}
            meta = (
                dict(db.execute("SELECT key, value FROM meta").fetchall()) if "meta" in have else {}
            )
        except apsw.Error as exc:
            db.close()
            raise base.ArmError(
                f"{self.name}: {path} is not a readable SQLite database: {exc}"
            ) from exc
        if SQLITE_TABLES - have:
            db.close()
            raise base.ArmError(f"{self.name}: {path} lacks tables {sorted(SQLITE_TABLES - have)}")
        want = self._layout()
        diff = {k: (meta.get(k), v) for k, v in want.items() if meta.get(k) != v}
        if diff:
            db.close()
            detail = ", ".join(f"{k}: stored {a!r}, arm has {b!r}" for k, (a, b) in diff.items())
            raise base.ArmError(
                f"{self.name}: store {path} was built with other tier parameters ({detail}); "
                "use the same parameters or rebuild"
            )
        self._db = db
        try:
            self._h = open_store(store_dir, self.name, create=False, what="L3 store")
        except PgError:
            self.close()
            raise
        try:
            ok = self._h.conn.execute("SELECT to_regclass('l3_memories') IS NOT NULL").fetchone()
            if not ok or not ok[0]:
                where = self._where()
                self.close()
                raise base.ArmError(f"{self.name}: L3 database of {where} has no l3_memories table")
            self._apply_pg_settings(self._h.conn)
        except psycopg.Error as exc:
            where = self._where()
            self.close()
            raise base.ArmError(f"{self.name}: cannot read L3 of {where}: {exc}") from exc
        self._compact_if_needed(self._l3_insert, trigger=None)

    def reset(self) -> None:
        """Empty all three tiers of the open store (indexes and server stay up).

        For driving several conversations through one store.

        Raises:
            ArmError: when the store is not open or a statement fails.
        """
        db, conn = self._sqlite(), self._pg()
        try:
            with db:
                db.execute("DELETE FROM l2_covers; DELETE FROM l2_nodes; DELETE FROM l1_turns;")
            conn.execute("TRUNCATE l3_memories")
        except (apsw.Error, psycopg.Error) as exc:
            raise base.ArmError(f"{self.name}: reset of {self._where()} failed: {exc}") from exc

    def raw_ingest(self) -> base.RawIngest:
        """The raw bulk path: the final tier tables written raw (SQLite and ``COPY``)."""
        return base.RawIngest(
            "tables",
            "tiers.db",
            ("l1_turns", "l2_nodes", "l2_covers"),
            ("l3_memories",),
            beyond="the architecture's replay: one L1 insert per memory with FTS5 triggers, "
            "o200k token counts, rolling compaction with extractive summaries into L2, "
            "eviction to L3 (the raw path writes only the final rows)",
        )
