"""Rolling compaction of the three-tier arm: L1 overflow -> L2 summary nodes, rows -> L3.

The order of the writes across the two engines, and why it is safe to repeat after a
crash, is in ``docs/arms/three-tier.md``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import apsw
import numpy as np

from agentmem.arms import base
from agentmem.arms.three_tier.records import Compaction, elapsed_ms
from agentmem.arms.three_tier.schema import MEM_NAMES
from agentmem.arms.three_tier.store import TierStore
from agentmem.summarise import split_sentences, summariser_name
from agentmem.tokens import count_tokens


class CompactionMixin(TierStore):
    """Compaction of :class:`~agentmem.arms.three_tier.ThreeTierArm` (L1 -> L2 + L3).

    Subclasses :class:`~agentmem.arms.three_tier.store.TierStore`, whose state it uses.
    """

    def _compact_if_needed(
        self, l3_write: Callable[[list[tuple[Any, ...]]], None], trigger: str | None
    ) -> tuple[list[Compaction], list[str], dict[str, float]]:
        """Run one rolling compaction when L1 exceeds ``l1_max_tokens``.

        Evicts the oldest turns (ingestion order) until L1 holds at most
        :attr:`l1_target_tokens`; groups them by (scope, session) (first-appearance order),
        so no summary mixes two scopes' memories; writes one summary node per group; sends
        the rows to ``l3_write``; then, in one SQLite transaction, inserts nodes and
        provenance and deletes the rows from L1.

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
        cols = ("id", *MEM_NAMES, "entity_ids", "body_tokens", "embedding")
        evict: list[dict[str, Any]] = []
        for r in db.execute(f"SELECT {', '.join(cols)} FROM l1_turns ORDER BY id"):
            if total <= self.l1_target_tokens:
                break
            d = dict(zip(cols, r, strict=True))
            evict.append(d)
            total -= int(d["body_tokens"])
        groups: dict[tuple[str | None, str | None], list[dict[str, Any]]] = {}
        for d in evict:  # one summary never mixes two scopes' memories
            groups.setdefault((d["scope_id"], d["session_id"]), []).append(d)
        summ = self._summ()
        sname = summariser_name(summ)
        drafts: list[
            tuple[tuple[str | None, str | None], list[dict[str, Any]], str, int, list[str]]
        ] = []
        try:
            for key, group in groups.items():
                summary = summ.summarise([d["body"] for d in group], self.summary_tokens)
                stoks = count_tokens([summary])[0] if summary else 0
                if stoks > self.summary_tokens:
                    raise base.ArmError(
                        f"{self.name}: summariser {sname!r} returned {stoks} tokens, over the "
                        f"budget of {self.summary_tokens}"
                    )
                excerpts = [
                    "\n".join(s for s in split_sentences(d["body"]) if s in summary) for d in group
                ]
                drafts.append((key, group, summary, stoks, excerpts))
        except base.ArmError:
            raise
        except Exception as exc:  # a summariser may raise anything (HTTP, parsing, ...)
            raise base.ArmError(f"{self.name}: summariser {sname!r} failed: {exc}") from exc
        lat["L2"] += elapsed_ms(t0)

        t1 = time.perf_counter()
        l3_write(
            [
                (
                    *(d[c] for c in MEM_NAMES),
                    json.loads(d["entity_ids"] or "[]"),
                    int(d["body_tokens"]),
                    np.frombuffer(d["embedding"], dtype=np.float32),
                )
                for d in evict
            ]
        )
        lat["L3"] += elapsed_ms(t1)

        t2 = time.perf_counter()
        compactions: list[Compaction] = []
        try:
            with db:
                for (scope, sid), group, summary, stoks, excerpts in drafts:
                    epoch = int(
                        db.execute(
                            "SELECT coalesce(max(epoch) + 1, 0) FROM l2_nodes "
                            "WHERE session_id IS ? AND scope_id IS ?",
                            (sid, scope),
                        ).fetchall()[0][0]
                    )
                    days = [d["created_day"] for d in group if d["created_day"] is not None]
                    seqs = [d["seq"] for d in group if d["seq"] is not None]
                    src = sum(int(d["body_tokens"]) for d in group)
                    db.execute(
                        "INSERT INTO l2_nodes(session_id, scope_id, epoch, first_seq, last_seq, "
                        "first_day, last_day, n_covered, source_tokens, summary, summary_tokens, "
                        "summariser, trigger_memory_id) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            sid,
                            scope,
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
                        "created_day, fact_id, superseded_by, scope_id) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                                d["scope_id"],
                            )
                            for i, d in enumerate(group)
                        ],
                    )
                    compactions.append(
                        Compaction(
                            node_id=node_id,
                            session_id=sid,
                            scope_id=scope,
                            epoch=epoch,
                            memory_ids=tuple(d["memory_id"] for d in group),
                            source_tokens=src,
                            summary_tokens=stoks,
                        )
                    )
                db.executemany("DELETE FROM l1_turns WHERE id = ?", [(d["id"],) for d in evict])
        except apsw.Error as exc:
            raise base.ArmError(
                f"{self.name}: compaction in {self._where()} failed: {exc}"
            ) from exc
        lat["L2"] += elapsed_ms(t2)
        return compactions, [d["memory_id"] for d in evict], lat
