"""Remember of the three-tier arm: new memories as turns, corrections in every tier, fetch.

A correction (``supersedes``) sets ``superseded_by`` wherever the old memory is held: its
L1 row, its L2 provenance rows and its L3 row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import apsw
import polars as pl
import psycopg

from agentmem.arms import base
from agentmem.arms.rows import memory_frame, memory_rows_frame
from agentmem.arms.three_tier.ingest import IngestMixin
from agentmem.arms.three_tier.schema import MEM_NAMES
from agentmem.tokens import count_tokens


class RememberMixin(IngestMixin):
    """``remember`` and ``fetch`` of :class:`~agentmem.arms.three_tier.ThreeTierArm`.

    Builds on :class:`~agentmem.arms.three_tier.ingest.IngestMixin`: remembered rows take
    the path of :meth:`~agentmem.arms.three_tier.ThreeTierArm.ingest_turn`.
    """

    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
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
        committed together (``docs/arms/three-tier.md``), so an engine failure part-way
        leaves the rows before it stored.

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
        batch = base.prepare_memories(memories, vectors, self.name)
        ids = batch.ids
        if not ids:
            return
        rows = batch.memories.select(*MEM_NAMES, "entity_ids").rows(named=True)
        for r in rows:
            self._normalise(r)
        held = self._held(ids)
        dup = next((m for m in ids if m in held), None)
        if dup is not None:
            raise base.ArmError(f"{self.name}: memory {dup!r} is already stored in {self._where()}")
        olds = {old for old, _ in batch.supersessions} - set(ids)
        stored = self._held(sorted(olds)) if olds else set()
        for old, new in batch.supersessions:
            if old in olds and old not in stored:
                raise base.ArmError(
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
            raise base.ArmError(f"{self.name}: id lookup on {self._where()} failed: {exc}") from exc
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
            raise base.ArmError(
                f"{self.name}: correction in {self._where()} failed: {exc}"
            ) from exc

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
        names = ", ".join(MEM_NAMES)
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
            raise base.ArmError(f"{self.name}: fetch on {self._where()} failed: {exc}") from exc
        frame = memory_rows_frame([*l1, *l3], [*MEM_NAMES, "entity_ids"])
        return memory_frame(frame, ids)
