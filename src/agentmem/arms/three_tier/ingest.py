"""Ingest of the three-tier arm: one turn into L1 (then compaction), and ``build``.

``build`` replays a corpus through the same per-turn path (:meth:`IngestMixin._ingest`),
buffering the rows evicted to L3 for one binary ``COPY``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import psycopg
from psycopg import sql

from agentmem.arms import base
from agentmem.arms.context import TIERS
from agentmem.arms.three_tier.compaction import CompactionMixin
from agentmem.arms.three_tier.records import TierEvent, elapsed_ms
from agentmem.arms.three_tier.schema import (
    INT_COLS,
    L3_EXTRA,
    L3_NAMES,
    MEM_COLUMNS,
    MEM_NAMES,
    pg_index_ddl,
)
from agentmem.sql.postgres.schema import BUILD_MAINTENANCE_WORK_MEM
from agentmem.tokens import count_tokens


class IngestMixin(CompactionMixin):
    """Turn ingest and ``build`` of :class:`~agentmem.arms.three_tier.ThreeTierArm`.

    Builds on :class:`~agentmem.arms.three_tier.compaction.CompactionMixin`: a turn that
    takes L1 past its cap triggers a compaction.
    """

    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
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
        mem = base.build_memories(corpus.memories, (*MEM_NAMES, "entity_ids"), self.name, store_dir)
        if mem["memory_id"].n_unique() != mem.height:
            raise base.ArmError(f"{self.name}: corpus memory ids are not unique ({store_dir})")
        mem = mem.sort("seq", maintain_order=True)
        ids = mem["memory_id"].to_list()
        mat = base.embedding_matrix(vectors, ids, self.name, store_dir)
        self._create_stores(store_dir, pg_indexes=False)
        db, conn = self._sqlite(), self._pg()
        buffer: list[tuple[Any, ...]] = []
        try:
            t0 = time.perf_counter()
            rows = mem.select(*MEM_NAMES, "entity_ids").iter_rows(named=True)
            ntoks = count_tokens(mem["body"].to_list()) if mem.height else []
            with db:
                for i, row in enumerate(rows):
                    self._ingest(row, mat[i], ntoks[i], buffer.extend)
            if buffer:
                copy = sql.SQL("COPY l3_memories ({}) FROM STDIN (FORMAT BINARY)").format(
                    sql.SQL(", ").join(map(sql.Identifier, L3_NAMES))
                )
                with conn.transaction(), conn.cursor() as cur, cur.copy(copy) as cp:
                    cp.set_types([t for _, t, _ in (*MEM_COLUMNS, *L3_EXTRA)])
                    for values in buffer:
                        cp.write_row(values)
            t1 = time.perf_counter()
            conn.execute(
                "SELECT set_config('maintenance_work_mem', %s, false)",
                (BUILD_MAINTENANCE_WORK_MEM,),
            )
            for stmt in pg_index_ddl(self.m, self.ef_construction):
                conn.execute(stmt)
            conn.execute("VACUUM (ANALYZE) l3_memories")
            conn.execute("RESET maintenance_work_mem")
            db.execute("ANALYZE")
            t2 = time.perf_counter()
        except (apsw.Error, psycopg.Error) as exc:
            where = self._where()
            self.close()
            raise base.ArmError(f"{self.name}: build of {where} failed: {exc}") from exc
        except base.ArmError:
            self.close()
            raise
        return base.BuildStats(ingest_ms=(t1 - t0) * 1e3, index_ms=(t2 - t1) * 1e3)

    def _normalise(self, row: dict[str, Any]) -> tuple[tuple[Any, ...], list[str]]:
        """Return the memory column values of ``row`` (in :data:`MEM_COLUMNS` order) and entities.

        Missing optional columns are ``None``; ``memory_id`` and ``body`` are required.

        Raises:
            ArmError: on a missing id or body, a value of the wrong type, or a NUL
                character in text (PostgreSQL text cannot hold it).
        """
        mid = row.get("memory_id")
        if not isinstance(mid, str) or not mid:
            raise base.ArmError(f"{self.name}: a memory row needs a non-empty str memory_id")
        if not isinstance(row.get("body"), str):
            raise base.ArmError(f"{self.name}: memory {mid!r} needs a str body")
        vals: list[Any] = []
        for col in MEM_NAMES:
            v = row.get(col)
            try:
                if v is None:
                    pass
                elif col in INT_COLS:
                    if isinstance(v, bool) or int(v) != v:
                        raise ValueError
                    v = int(v)
                elif col == "confidence":
                    v = float(v)
                elif not isinstance(v, str):
                    raise ValueError
            except (TypeError, ValueError):
                raise base.ArmError(
                    f"{self.name}: memory {mid!r} has a bad {col} value {v!r}"
                ) from None
            if isinstance(v, str) and "\x00" in v:
                raise base.ArmError(
                    f"{self.name}: memory {mid!r} {col} contains a NUL character, which "
                    "PostgreSQL text cannot store"
                )
            vals.append(v)
        ents = row.get("entity_ids")
        entities = [str(e) for e in ents] if ents is not None else []
        if any("\x00" in e for e in entities):
            raise base.ArmError(f"{self.name}: memory {mid!r} entity_ids contain a NUL character")
        return tuple(vals), entities

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
                    f"INSERT INTO l1_turns({', '.join(MEM_NAMES)}, entity_ids, body_tokens, "
                    f"embedding) VALUES ({', '.join('?' * (len(MEM_NAMES) + 3))})",
                    (*vals, json.dumps(entities), int(ntok), vec.tobytes()),
                )
        except apsw.ConstraintError:
            raise base.ArmError(
                f"{self.name}: memory {vals[0]!r} is already in L1 of {self._where()}"
            ) from None
        l1_ms = elapsed_ms(t0)
        compactions, moved, lat = self._compact_if_needed(l3_write, trigger=vals[0])
        t1 = time.perf_counter()
        total, n = self._l1_totals()
        lat["L1"] = l1_ms + elapsed_ms(t1)
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
            raise base.ArmError(f"{self.name}: L3 lookup on {self._where()} failed: {exc}") from exc
        if dup:
            raise base.ArmError(
                f"{self.name}: memory {vals[0]!r} is already in L3 of {self._where()}"
            )
        lookup_ms = elapsed_ms(t0)
        ntok = count_tokens([memory_row["body"]])[0]
        event = self._ingest(memory_row, vector, ntok, self._l3_insert)
        event.latency_ms["L3"] += lookup_ms
        return event
