"""The fleet trial: N agent processes share one store; throughput, tail latency, nothing lost.

:func:`run_fleet` builds each arm's store once from the fleet corpus and runs, for every
N in ``processes``, N agent processes (:mod:`.agent`), each with its own arm instance
and connection, released together on the same store; a separate process then checks the
store (:mod:`.check`). Last, ``kill_processes`` agents run a long plan and are killed
with SIGKILL mid-run, and the check asks whether every write they had acknowledged
survived. Agent processes are forked from a zygote that imported, while the store was
built, what the build imported (:mod:`.zygote`), and reused across the arm's runs (each
run opens the store anew; :mod:`.pool`); killed ones are replaced. The experiment, its
columns and what "contention" means on a machine with fewer cores than agents:
docs/experiments/fleet.md.
"""

from __future__ import annotations

import random
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmem.arms.base import ArmError
from agentmem.config import FleetConfig
from agentmem.trials.common import TrialError, require_dir, trial_errors
from agentmem.trials.fleet.pool import OPEN_TIMEOUT_S, RUN_TIMEOUT_S, Agent, AgentPool
from agentmem.trials.fleet.rows import (
    FIELDS,
    add_note,
    add_run_stats,
    apply_check,
    blank_row,
    say_row,
)
from agentmem.trials.fleet.workload import FleetData, Op, plan_runs

__all__ = ["FIELDS", "AgentPool", "run_fleet", "unsupported_reason"]

"""Columns of ``results/trials/fleet.csv``, in order (docs/experiments/fleet.md)."""


def unsupported_reason(arm_cls: type) -> str | None:
    """Why an arm cannot share its store between processes, or ``None`` when it can.

    Read from the arm's own declaration (``exclusive_store``: the product locks its store
    to one process).
    """
    if getattr(arm_cls, "exclusive_store", False):
        return "the product locks its store to one process (exclusive_store)"
    return None


def _open_all(agents: list[Agent], arm: str, params: dict, store: Path) -> str | None:
    for a in agents:
        a.send({"cmd": "open", "arm": arm, "params": params, "store": str(store)})
    errors = [a.recv(OPEN_TIMEOUT_S).get("error") for a in agents]
    return next((e for e in errors if e), None)


def _writes(plans: list[list[Op]]) -> list[str]:
    return [op[2] for ops in plans for op in ops if op[0] != "recall"]


class _ArmRuns:
    """The runs of one arm on one store: the N runs, then the SIGKILL run."""

    def __init__(
        self, pool: AgentPool, name: str, params: dict, store: Path, k: int, retries: int
    ) -> None:
        self.pool, self.name, self.params, self.store = pool, name, params, store
        self.k, self.retries = k, retries
        self.earlier: list[str] = []  # writes acknowledged by earlier runs
        self.earlier_attempted: list[str] = []  # every write earlier runs tried
        self.opened = False  # some run's agents opened the store
        self.broken = False  # ... and a later run's could not: no run follows
        self.checker: Agent | None = None
        #: agents the next run takes: started while a check runs, so they load meanwhile
        self.upcoming = 0
        #: seconds spent building the store, starting agents (forked or cold, until they
        #: have loaded the corpus), opening the store in them, running and checking
        #: (the progress line)
        self.phases = dict.fromkeys(("build", "start", "open", "run", "check"), 0.0)

    def check(
        self, row: dict[str, Any], acked: list[str], attempted: list[str], corrections: list[Any]
    ) -> None:
        """Check the store from the arm's checker process and fill ``row``'s checks."""
        assert self.checker is not None
        t0 = time.monotonic()
        msg = {
            "cmd": "check",
            "arm": self.name,
            "params": self.params,
            "store": str(self.store),
            "k": self.k,
            "acked": acked,
            "attempted": attempted,
            "earlier": self.earlier,
            "earlier_attempted": self.earlier_attempted,
            "corrections": corrections,
        }
        try:
            self.checker.send(msg)
            self._start(self.upcoming)  # the next run's new agents load while it checks
            chk = self.checker.recv(RUN_TIMEOUT_S, "checked")
            apply_check(row, chk)
            self.broken = self.broken or not chk.get("opened")  # no later run can open it
        except TrialError as exc:  # the checker died on this store: say so, start another
            self.checker.kill()
            self.checker = self.pool.ready(self.pool.spawn())
            add_note(row, f"the check failed: {exc}")
            row["corrupt"] = True
        self.earlier += acked
        self.earlier_attempted += attempted
        self.phases["check"] += time.monotonic() - t0

    def _take(self, n: int) -> list[Agent]:
        t0 = time.monotonic()
        try:
            return self.pool.take(n)
        finally:
            self.phases["start"] += time.monotonic() - t0

    def _start(self, n: int) -> None:
        if n:  # (none after the last run: the SIGKILLed agents are not replaced)
            t0 = time.monotonic()
            self.pool.start(n)
            self.phases["start"] += time.monotonic() - t0

    def _open(self, row: dict[str, Any], agents: list[Agent]) -> bool:
        """Open the store in every agent; False (the row says why) when one cannot."""
        t0 = time.monotonic()
        try:
            err = _open_all(agents, self.name, self.params, self.store)
        except TrialError as exc:
            err = str(exc)
        self.phases["open"] += time.monotonic() - t0
        if not err:
            self.opened = True
            return True
        for a in agents:  # whatever opened is dropped with its process
            a.kill()
        self.pool.start(len(self.pool.agents))
        if self.opened:  # an earlier run opened it: the store broke (its runs end here)
            add_note(row, f"the store no longer opens: {err}")
            row["corrupt"] = self.broken = True
        else:
            row.update(supported=False, reason=f"a second process cannot open the store: {err}")
        return False

    def _launch(
        self, run: str, agents: list[Agent], plans: list[list[Op]], acks: bool = False
    ) -> tuple[list[Agent], list[str], list[str]]:
        """Send every agent its plan, wait until all are warmed up, then release them.

        Returns:
            ``(agents running, messages of agents that died or hung, their planned
            writes)``; the dead ones are killed.
        """
        deadline = time.monotonic() + RUN_TIMEOUT_S
        sent: list[tuple[Agent, list[Op]]] = []
        died: list[str] = []
        lost_plans: list[list[Op]] = []
        for i, (a, ops) in enumerate(zip(agents, plans, strict=True)):
            msg = {"cmd": "run", "run": run, "agent": i, "ops": ops, "k": self.k}
            msg.update(retries=self.retries, acks=acks)
            try:
                a.send(msg)
                sent.append((a, ops))
            except TrialError as exc:
                died.append(str(exc))
                lost_plans.append(ops)
        warmed = []
        for a, ops in sent:
            try:
                a.recv(deadline - time.monotonic(), "warmed")
                warmed.append(a)
            except TrialError as exc:
                a.kill()
                died.append(str(exc))
                lost_plans.append(ops)
        for a in warmed:  # the go line, to every agent at once
            try:
                a.send({"cmd": "go"})
            except TrialError as exc:
                died.append(str(exc))
        return warmed, died, _writes(lost_plans)

    def run(self, run: str, plans: list[list[Op]]) -> dict[str, Any]:
        """One run: ``len(plans)`` agents open the store, run together, then the check."""
        row = blank_row(self.name, "run", len(plans))
        agents = self._take(len(plans))
        if not self._open(row, agents):
            return row
        t0 = time.monotonic()
        live, died, attempted = self._launch(run, agents, plans)
        deadline = time.monotonic() + RUN_TIMEOUT_S
        stats = []
        for a in live:
            try:
                stats.append(a.recv(deadline - time.monotonic(), "done"))
            except TrialError as exc:  # the agent died or hung: a finding, not a failure
                a.kill()
                died.append(str(exc))
                attempted += _writes([plans[agents.index(a)]])  # what it wrote is unknown
        self.phases["run"] += time.monotonic() - t0
        if died:
            self.pool.start(len(self.pool.agents))
        if stats:
            add_run_stats(row, stats)
        self.check(
            row,
            [m for s in stats for m in s["acked"]],
            [m for s in stats for m in s["attempted"]] + attempted,
            [c for s in stats for c in s["corrections"]],
        )
        if died:
            add_note(row, f"{len(died)} agent processes died or hung: {died[0][:300]}")
        return row

    def all(
        self,
        data: FleetData,
        processes: Sequence[int],
        plans: dict[str, list[list[Op]]],
        kill_at: float | None,
        progress: bool,
    ) -> list[dict[str, Any]]:
        """Build the store, run every N and (``kill_at``) the SIGKILL run, then delete it.

        The builder keeps its arm open until the runs end (an embedded server it started
        serves every run); the store is deleted afterwards. While the store is built,
        the pool's zygote imports what the build imports; the arm's agents and checker
        are forked afterwards and retired at the end.

        Raises:
            TrialError: when the store cannot be built or an agent process fails.
        """
        from agentmem.arms.factory import make_arm

        if self.store.exists():
            shutil.rmtree(self.store)
        self.store.mkdir(parents=True)
        owner = make_arm(self.name, self.params)
        rows: list[dict[str, Any]] = []
        t0 = time.monotonic()
        try:
            with self.pool.recording():
                owner.build(data.corpus, data.vectors, self.store)
            self.phases["build"] = time.monotonic() - t0
            sizes = [*processes, *([len(plans["sigkill"])] if kill_at is not None else [])]
            t = time.monotonic()
            checker = self.pool.spawn()
            self.pool.start(sizes[0])  # the first run's agents load beside the checker
            self.checker = self.pool.ready(checker)
            self.phases["start"] += time.monotonic() - t
            for i, n in enumerate(processes):
                self.upcoming = sizes[i + 1] if i + 1 < len(sizes) else 0
                rows.append(self.run(f"n{n}", plans[f"n{n}"]))
                if progress:
                    say_row(rows[-1])
                if not rows[-1]["supported"] or self.broken:
                    break  # no later run: the store is not shared, or broke
            else:
                if kill_at is not None:
                    rows.append(self.sigkill(plans["sigkill"], kill_at))
                    if progress:
                        say_row(rows[-1])
            if progress:
                p = self.phases
                print(
                    f"fleet {self.name}: {time.monotonic() - t0:.1f} s (build {p['build']:.1f} s, "
                    f"starting agents {p['start']:.1f} s, opening {p['open']:.1f} s, runs "
                    f"{p['run']:.1f} s, checks {p['check']:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
            return rows
        except ArmError as exc:
            raise TrialError(f"fleet: {self.name}: {exc}") from exc
        finally:
            try:
                self.pool.retire([self.checker] if self.checker is not None else [])
            finally:
                try:
                    owner.close()
                finally:
                    shutil.rmtree(self.store, ignore_errors=True)

    def sigkill(self, plans: list[list[Op]], kill_at: float) -> dict[str, Any]:
        """Agents run ``plans`` and are SIGKILLed mid-run; then the check.

        The kill comes once the agents have acknowledged ``kill_at`` (a fraction) of the
        plans' timed writes, so it lands mid-run on fast and slow stores alike.
        """
        row = blank_row(self.name, "sigkill", len(plans))
        agents = self._take(len(plans))
        if not self._open(row, agents):
            return row
        t1 = time.monotonic()
        live, died, _ = self._launch("sigkill", agents, plans, acks=True)
        warm = len(agents)  # each agent's untimed warm-up write is acknowledged first
        target = warm + max(1, int(kill_at * (len(_writes(plans)) - warm)))
        t0 = time.monotonic()
        while sum(len(a.acks) for a in agents) < target and time.monotonic() - t0 < RUN_TIMEOUT_S:
            if all(not a.lines.empty() or not a.alive() for a in live):
                break  # every agent finished or died: nothing left to interrupt
            time.sleep(0.001)
        finished = sum(1 for a in live if not a.lines.empty())
        for a in agents:
            a.kill()  # SIGKILL to the process group; the acks it wrote are read to the end
        seconds = time.monotonic() - t0
        self.phases["run"] += time.monotonic() - t1
        self.upcoming = 0
        acked = [m for a in agents for m in a.acks]
        row.update(seconds=round(seconds, 3), acknowledged=len(acked))
        self.check(row, acked, _writes(plans), [])
        if finished:
            add_note(row, f"{finished} agents finished before the kill")
        if died:
            add_note(row, f"{len(died)} agent processes died or hung: {died[0][:300]}")
        return row


@trial_errors
def run_fleet(
    arms: Sequence[str],
    arm_params: dict[str, dict[str, Any]],
    corpus_dir: str | Path,
    embeddings: str | Path,
    work_dir: str | Path,
    *,
    settings: FleetConfig | Mapping[str, Any],
    seed: int,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run the fleet trial on every arm; one row per arm x N, plus each arm's SIGKILL run.

    Args:
        arms: arm names, in running order.
        arm_params: constructor parameters per arm name (missing: none).
        corpus_dir: the fleet corpus.
        embeddings: its embeddings (Parquet).
        work_dir: an existing, writable directory; each arm's store is
            ``work_dir/stores/<arm>`` (rebuilt), agent logs go to ``work_dir/logs``.
        settings: config ``trials.fleet`` (:class:`agentmem.config.FleetConfig`; a mapping
            is validated through it, its defaults and bounds the only ones): the fleet
            sizes ``processes`` in running order, ``operations`` per agent per run, the
            ``mix`` of recall / remember / correction, ``kill_processes`` agents of the
            SIGKILL run (0: none) each planning ``kill_operations`` (the kill comes after
            20-60 % of the planned writes are acknowledged), ``k`` results per recall and
            ``retries`` of a failed call before it counts as an error. Its ``arms`` and
            ``size`` are the workflow's (``arms`` here is the resolved list).
        seed: the plans' seed (config ``trials.seed``;
            :func:`~agentmem.trials.fleet.workload.plan_runs`).
        progress: print one line per run to stderr.

    Returns:
        Rows with the keys of :data:`FIELDS`. An arm that cannot share its store
        (:func:`unsupported_reason`, or a second process failing to open it) has one row
        with ``supported`` false and the ``reason``.

    Raises:
        TrialError: when ``work_dir`` is unusable, an agent process dies or does not
            answer in time, or an arm's store cannot be built.
        KeyError: for an unknown arm.
        ValueError: for settings out of their bounds (pydantic's ValidationError).
    """
    from agentmem.arms.factory import make_arm

    cfg = settings if isinstance(settings, FleetConfig) else FleetConfig.model_validate(settings)
    processes, operations, k, retries = cfg.processes, cfg.operations, cfg.k, cfg.retries
    kill_processes, kill_operations = cfg.kill_processes, cfg.kill_operations
    mix = cfg.mix.model_dump()
    root = require_dir(work_dir, what="fleet work directory")
    if not arms:
        return []
    for name in arms:
        make_arm(name, arm_params.get(name))  # unknown arms fail before anything runs
    logs = root / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    pool = AgentPool(corpus_dir, embeddings, logs)  # its zygote imports meanwhile
    rows: list[dict[str, Any]] = []
    try:
        data = FleetData.load(corpus_dir, embeddings)
        runs = [(f"n{n}", n, operations) for n in processes]
        if kill_processes:
            runs.append(("sigkill", kill_processes, kill_operations))
        plans = plan_runs(data, runs, mix, seed)
        for name in arms:
            params = dict(arm_params.get(name) or {})
            reason = unsupported_reason(type(make_arm(name, params)))
            if reason:
                row = blank_row(name, "run", 0)
                row.update(supported=False, reason=reason)
                rows.append(row)
                if progress:
                    print(f"fleet {name}: unsupported ({reason})", file=sys.stderr, flush=True)
                continue
            rng = random.Random(f"{seed}:kill:{name}")
            kill_at = rng.uniform(0.2, 0.6) if kill_processes else None
            runner = _ArmRuns(pool, name, params, root / "stores" / name, k, retries)
            rows += runner.all(data, processes, plans, kill_at, progress)
    finally:
        pool.close()
    return rows
