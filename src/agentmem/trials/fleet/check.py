"""The checks after a fleet run, made by a process that took no part in it.

:func:`check_store` opens the store with a new arm instance and asks, through the arm
contract only: is every acknowledged write there (``fetch``), is any stored twice (the
store's row count against the distinct ids it holds), is every acknowledged correction
in force (the superseded memories' ``superseded_by`` names it) and returned by a
current-only recall, does the engine's own integrity check pass
(:meth:`~agentmem.arms.base.ArmBase.integrity_check`) and does the store still answer a
query. Definitions: docs/experiments/fleet.md.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from agentmem.arms.base import ArmError
from agentmem.trials.fleet.workload import FleetData
from agentmem.types import Query

__all__ = ["check_store", "stored_rows"]


def stored_rows(arm: Any, data: FleetData) -> int | None:
    """Rows the store holds, duplicates included, or ``None`` when it cannot say.

    From the store's own count (``StorageStats.counts["memories"]``) where it reports
    one, else from an exact ``COUNT`` (a count query without predicate) for an arm that
    can aggregate.
    """
    counts = arm.storage().counts
    if "memories" in counts:
        return int(counts["memories"])
    if getattr(arm.capabilities, "aggregate", False):
        q = Query(
            query_id="fleet-count",
            text="",
            embedding=data.queries[0].embedding,
            wants_count=True,
        )
        n = arm.query(q, 1).count
        return None if n is None else int(n)
    return None


def _fetched(arm: Any, ids: list[str]) -> list[tuple[str, Any]]:
    """``(memory_id, superseded_by)`` of every row ``fetch`` returns for ``ids`` (500 a call)."""
    rows: list[tuple[str, Any]] = []
    for i in range(0, len(ids), 500):
        rows += arm.fetch(ids[i : i + 500]).select("memory_id", "superseded_by").rows()
    return rows


def check_store(data: FleetData, msg: dict[str, Any]) -> dict[str, Any]:
    """Check a store after a run (the ``check`` command of an agent process).

    Args:
        data: the fleet corpus the store was built from.
        msg: ``arm``, ``params``, ``store``; ``acked`` (this run's acknowledged writes),
            ``attempted`` (this run's writes tried), ``earlier`` (writes acknowledged
            before this run), ``earlier_attempted`` (every write tried before this
            run), ``corrections`` (``[new id, superseded ids]`` of this
            run's acknowledged corrections), ``k``.

    Returns:
        ``opened`` (bool) and ``open_error``; ``lost`` (acknowledged this run, not
        found; ``None`` when the store cannot be read back), ``lost_earlier`` (corpus
        memories and earlier runs' acknowledged writes no longer found),
        ``unacked_present`` (writes that failed but are stored), ``duplicated``
        (rows beyond one per distinct id, ``None`` when the store cannot count),
        ``corrections_in_force`` / ``corrections_returned``, ``integrity_check`` (what
        the engine checked) and ``integrity`` (problems found, ``[]`` when intact).
    """
    from agentmem.arms.factory import make_arm

    acked: list[str] = list(msg.get("acked", []))
    attempted: list[str] = list(msg.get("attempted", []))
    earlier: list[str] = list(msg.get("earlier", []))
    earlier_attempted: list[str] = list(msg.get("earlier_attempted", earlier))
    corrections: list[list[Any]] = list(msg.get("corrections", []))
    problems: list[str] = []
    out: dict[str, Any] = dict.fromkeys(
        (
            "open_error",
            "integrity_check",
            "lost",
            "lost_earlier",
            "unacked_present",
            "duplicated",
            "corrections_in_force",
            "corrections_returned",
        )
    )
    out.update(opened=False, integrity=problems)
    arm = make_arm(msg["arm"], msg.get("params"))
    try:
        try:
            arm.open(msg["store"])
        except (ArmError, ValueError) as exc:
            out["open_error"] = str(exc)
            problems.append(f"cannot open: {exc}")
            return out
        out["opened"] = True
        try:
            # optional: a plug-in arm outside ArmBase may not have the engine check
            engine_check = getattr(arm, "integrity_check", lambda: ("opens", []))
            what, found_problems = engine_check()
            problems.extend(found_problems)
        except (ArmError, ValueError) as exc:
            what = "integrity check"
            problems.append(f"integrity check failed: {exc}")
        out["integrity_check"] = what
        try:
            arm.query(data.queries[0], int(msg.get("k", 10)))
        except (ArmError, ValueError) as exc:
            problems.append(f"a recall fails: {exc}")
        corpus_ids = data.memories.get_column("memory_id").to_list()
        try:
            known = list(dict.fromkeys(corpus_ids + earlier_attempted + attempted))
            found = {m for m, _ in _fetched(arm, known)}
            rows = stored_rows(arm, data)
        except (ArmError, ValueError) as exc:
            problems.append(f"reading the store back fails: {exc}")
            return out
        acked_set = set(acked)
        out["lost"] = sum(1 for m in acked if m not in found)
        out["lost_earlier"] = sum(1 for m in corpus_ids + earlier if m not in found)
        out["unacked_present"] = sum(1 for m in attempted if m in found and m not in acked_set)
        out["duplicated"] = None if rows is None else max(0, rows - len(found))
        in_force = returned = 0
        stored = [(new_id, olds) for new_id, olds in corrections if new_id in found]
        superseded_by: dict[str, list[Any]] = {}  # one fetch for every correction's olds
        for m, by in _fetched(arm, [m for _, olds in stored for m in olds]):
            superseded_by.setdefault(m, []).append(by)
        for new_id, olds in stored:
            by = [b for m in dict.fromkeys(olds) for b in superseded_by.get(m, [])]
            if len(by) == len(olds) and all(b == new_id for b in by):
                in_force += 1
            source = olds[-1]  # the correction restates its fact's latest memory
            q = data.current_query(new_id, data.body(source), data.vectors.get([source])[0])
            ids = arm.query(q, int(msg.get("k", 10))).memory_ids
            if new_id in ids and not set(olds) & set(ids):
                returned += 1
        out["corrections_in_force"] = in_force
        out["corrections_returned"] = returned
        return out
    except (ArmError, ValueError, pl.exceptions.PolarsError) as exc:
        problems.append(f"check failed: {exc}")
        return out
    finally:
        try:
            arm.close()
        except (ArmError, ValueError) as exc:
            problems.append(f"close failed: {exc}")
