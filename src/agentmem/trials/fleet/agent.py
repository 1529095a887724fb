"""One fleet agent process: opens a store, runs its operations, reports what happened.

``python -m agentmem.trials.fleet agent --corpus DIR --embeddings FILE`` (or a child the
zygote forked with these arguments, :mod:`.zygote`) loads the fleet corpus once, prints
``{"ready": true}`` and then answers one JSON command per stdin line (a protocol private
to :mod:`agentmem.trials.fleet.runner`):

* ``{"cmd": "open", "arm", "params", "store"}``: open the store with a new arm instance
  (its own connection); answers ``{"opened": true}`` or ``{"error": message}``.
* ``{"cmd": "run", "run", "agent", "ops", "k", "retries", "acks"}``: prepare the
  operations and run the first one (the warm-up write) untimed, answer
  ``{"warmed": true}``, wait for the line ``{"cmd": "go"}`` (the runner sends it to every
  agent once all are warmed), run the rest timed, then close the arm; with ``acks``
  every acknowledged write is printed as ``{"ack": id}`` the moment its ``remember``
  returns (the SIGKILL variant reads them). Answers ``{"done": stats}``.
* ``{"cmd": "check", ...}``: the after-run checks (:func:`agentmem.trials.fleet.check.check_store`).
* ``{"cmd": "exit"}``.

Errors an operation meets are classified by :func:`error_kind` and retried up to
``retries`` times (after 5, 10, 20 ... ms, at most 0.5 s); an operation that still fails is counted
once under its kind and its write is not acknowledged.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from agentmem.arms.base import ArmError
from agentmem.trials.fleet.workload import FleetData, Op

__all__ = ["ERROR_KINDS", "agent_main", "error_kind", "run_ops"]

#: Error kinds counted per run, in column order.
ERROR_KINDS: tuple[str, ...] = ("busy", "serialization", "conflict", "exception")

_BUSY = ("database is locked", "sqlite_busy", "busyerror", "database table is locked")
_SERIAL = ("could not serialize", "serializationfailure", "deadlock")
_CONFLICT = ("conflict", "concurrent", "version mismatch", "retryable")


def error_kind(exc: BaseException) -> str:
    """Classify a failed arm call by the errors chained inside it.

    Walks ``exc`` and its ``__cause__`` / ``__context__`` chain and looks at each type
    name and message: SQLite's ``BUSY`` / ``database is locked`` -> ``"busy"``;
    PostgreSQL's serialization failure or deadlock -> ``"serialization"``; a product's
    commit or version conflict -> ``"conflict"``; anything else -> ``"exception"``.
    """
    seen: list[str] = []
    e: BaseException | None = exc
    while e is not None and len(seen) < 16:
        seen.append(f"{type(e).__name__} {e}".lower())
        e = e.__cause__ or e.__context__
    text = " | ".join(seen)
    if any(s in text for s in _BUSY):
        return "busy"
    if any(s in text for s in _SERIAL):
        return "serialization"
    if any(s in text for s in _CONFLICT):
        return "conflict"
    return "exception"


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def run_ops(
    arm: Any,
    data: FleetData,
    run: str,
    agent: int,
    ops: list[Op],
    *,
    k: int = 10,
    retries: int = 3,
    acks: bool = False,
    untimed: int = 1,
    barrier: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run one agent's operations on an open arm; the arm is left open.

    Args:
        arm: an open arm.
        data: the fleet corpus.
        run: the run's name (scopes of new memories).
        agent: this agent's index.
        ops: the operations (:func:`~agentmem.trials.fleet.workload.plan_runs`).
        k: results per recall.
        retries: retries of a failed call before it counts as an error.
        acks: print ``{"ack": id}`` after each acknowledged write.
        untimed: leading operations run before the clock starts (the warm-up write):
            their writes are attempted and acknowledged like the others, but no latency,
            error or read-your-writes recall of theirs is counted.
        barrier: called after the untimed operations, before the clock starts (the
            agent process reports "warmed" and waits for the runner's "go", so that
            every agent's timed operations start together).

    Returns:
        ``t0`` / ``t1`` (``time.monotonic()`` seconds at the first call and after the
        last, comparable across processes), ``recall_ms`` / ``remember_ms`` /
        ``correction_ms`` (latency of each successful call, retries included),
        ``error_samples`` (kind -> the first message of that kind, retried or not),
        ``acked`` (ids of acknowledged writes), ``corrections`` (``[new id, superseded
        ids]`` of acknowledged corrections), ``errors`` (kind -> failed operations),
        ``retries``, ``ryw_checks`` / ``ryw_hits`` (read-your-writes recalls and how
        many found the write), ``attempted`` (ids of every write tried).
    """
    prepared: list[tuple[Op, Any]] = []
    for op in ops:  # frames and queries built before the clock starts
        if op[0] == "recall":
            prepared.append((op, data.queries[int(op[1])]))
        else:
            prepared.append((op, data.new_memory(op, run, agent)))
    out: dict[str, Any] = {
        "recall_ms": [],
        "remember_ms": [],
        "correction_ms": [],
        "acked": [],
        "attempted": [],
        "corrections": [],
        "errors": dict.fromkeys(ERROR_KINDS, 0),
        "error_samples": {},
        "retries": 0,
        "ryw_checks": 0,
        "ryw_hits": 0,
    }

    def call(fn: Any, *args: Any) -> tuple[bool, Any]:
        for attempt in range(retries + 1):
            try:
                return True, fn(*args)
            except (ArmError, ValueError) as exc:
                kind = error_kind(exc)
                out["error_samples"].setdefault(kind, str(exc)[:300])
                if attempt == retries:
                    out["errors"][kind] += 1
                    return False, None
                out["retries"] += 1
                time.sleep(min(0.005 * 2**attempt, 0.5))
        return False, None  # pragma: no cover - the loop always returns

    for (kind, _key, new_id), payload in prepared[:untimed]:
        if kind != "recall":
            out["attempted"].append(new_id)
            try:
                arm.remember(*payload[:2])
            except (ArmError, ValueError):
                continue
            out["acked"].append(new_id)
            if acks:
                _emit({"ack": new_id})
    if barrier is not None:
        barrier()
    out["t0"] = time.monotonic()
    for (kind, _key, new_id), payload in prepared[untimed:]:
        t = time.perf_counter_ns()
        if kind == "recall":
            ok, _ = call(arm.query, payload, k)
            if ok:
                out["recall_ms"].append((time.perf_counter_ns() - t) / 1e6)
            continue
        frame, vecs, olds = payload
        out["attempted"].append(new_id)
        ok, _ = call(arm.remember, frame, vecs)
        if not ok:
            continue
        out[f"{kind}_ms"].append((time.perf_counter_ns() - t) / 1e6)
        out["acked"].append(new_id)
        if acks:
            _emit({"ack": new_id})
        if kind == "correction":
            out["corrections"].append([new_id, olds])
            continue
        out["ryw_checks"] += 1
        ok, res = call(arm.query, data.own_write_query(frame, vecs), k)
        if ok and new_id in res.memory_ids:
            out["ryw_hits"] += 1
    out["t1"] = time.monotonic()
    return out


def agent_main(argv: list[str] | None = None) -> None:
    """Entry point of an agent process (the protocol in this module's docstring)."""
    from agentmem.arms.factory import make_arm
    from agentmem.trials.fleet.check import check_store

    ap = argparse.ArgumentParser(prog="python -m agentmem.trials.fleet agent")
    ap.add_argument("--corpus", required=True, help="the fleet corpus directory")
    ap.add_argument("--embeddings", required=True, help="its embeddings (Parquet)")
    args = ap.parse_args(argv)
    data = FleetData.load(args.corpus, args.embeddings)
    from agentmem.tokens import count_tokens

    count_tokens(data.bodies[next(iter(data.bodies))])  # loads the tokenizer remember uses
    _emit({"ready": True})

    def barrier() -> None:
        _emit({"warmed": True})
        sys.stdin.readline()  # the runner's {"cmd": "go"}, sent to every agent at once

    arm = None
    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        if cmd == "exit":
            break
        if cmd == "open":
            try:
                arm = make_arm(msg["arm"], msg.get("params"))
                arm.open(msg["store"])
                arm.query(data.queries[0], 10)  # untimed: the first query's one-off costs
            except (ArmError, ValueError, KeyError) as exc:
                arm = None
                _emit({"error": f"{type(exc).__name__}: {exc}"})
                continue
            _emit({"opened": True})
        elif cmd == "run":
            if arm is None:
                _emit({"error": "run before a successful open"})
                continue
            stats = run_ops(
                arm,
                data,
                msg["run"],
                int(msg["agent"]),
                [tuple(o) for o in msg["ops"]],  # type: ignore[misc]
                k=int(msg["k"]),
                retries=int(msg["retries"]),
                acks=bool(msg.get("acks")),
                barrier=barrier,
            )
            t = time.perf_counter_ns()
            try:
                arm.close()
            except (ArmError, ValueError) as exc:
                stats["errors"][error_kind(exc)] += 1
            stats["close_ms"] = (time.perf_counter_ns() - t) / 1e6
            arm = None
            _emit({"done": stats})
        elif cmd == "check":
            _emit({"checked": check_store(data, msg)})
        else:
            _emit({"error": f"unknown command {cmd!r}"})
