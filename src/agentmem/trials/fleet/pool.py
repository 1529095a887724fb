"""The fleet's agent processes: one handle per process and the pool that reuses them.

An :class:`Agent` is one agent process (its own session, stderr to a log file) and a
thread that reads its JSON lines into a queue (the ``ack`` lines into a list). The
processes are forked by a zygote that has imported what they need
(:mod:`.zygote`), or, when no zygote is running, started cold as
``python -m agentmem.trials.fleet agent``. :class:`AgentPool` starts them ahead of use,
keeps them across the runs of one arm and replaces the ones killed. The protocol is in
:mod:`agentmem.trials.fleet.agent`.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from agentmem.procs import ProcessError, child_env, kill_group, process_alive, wait_until
from agentmem.trials.common import TrialError
from agentmem.trials.fleet.zygote import ImportRecorder, Zygote

__all__ = ["OPEN_TIMEOUT_S", "RUN_TIMEOUT_S", "Agent", "AgentPool"]

#: seconds an agent may take to load its corpus or open a store
OPEN_TIMEOUT_S = 300.0
#: seconds a run (all its agents) or a check may take
RUN_TIMEOUT_S = 900.0


def _wait_exit(pid: int, timeout: float) -> bool:
    """Wait until process ``pid`` (not a child of this one) has ended; False on timeout."""
    try:
        fd = os.pidfd_open(pid)  # readable once the process has ended
    except (AttributeError, OSError):
        return wait_until(lambda: not process_alive(pid), timeout, 0.001)
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _kill_all(agents: list[Agent]) -> None:
    """Kill every agent: SIGKILL to all process groups first, so they end together."""
    for a in agents:
        a.sigkill()
    for a in agents:
        a.kill()


class Agent:
    """One agent process and the thread that reads its stdout into a queue.

    Made by :meth:`spawn` (a cold process) or :meth:`fork` (a child of the zygote).
    """

    def __init__(
        self,
        pid: int,
        stdin: BinaryIO,
        stdout: BinaryIO,
        log: Path,
        *,
        proc: subprocess.Popen | None = None,
        zygote: Zygote | None = None,
    ) -> None:
        self.pid, self.stdin, self.stdout, self.log = pid, stdin, stdout, log
        self.proc, self.zygote = proc, zygote
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.acks: list[str] = []
        self.ready = False
        self._killed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def spawn(cls, cmd: list[str], log: Path) -> Agent:
        """Start ``cmd`` as a new process in its own session, stderr to ``log``."""
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
                env=child_env(),
            )
        assert proc.stdin is not None and proc.stdout is not None
        return cls(proc.pid, proc.stdin, proc.stdout, log, proc=proc)

    @classmethod
    def fork(cls, zygote: Zygote, argv: list[str], log: Path) -> Agent:
        """Fork an agent from ``zygote`` (``argv``: the agent's arguments), stderr to ``log``.

        Raises:
            TrialError: when the zygote is gone or does not answer.
        """
        pid, stdin, stdout = zygote.fork(argv, log, OPEN_TIMEOUT_S)
        return cls(pid, stdin, stdout, log, zygote=zygote)

    def _read(self) -> None:
        for raw in self.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if "ack" in msg:
                self.acks.append(str(msg["ack"]))
            else:
                self.lines.put(msg)
        self.lines.put(None)  # EOF

    def send(self, msg: dict[str, Any]) -> None:
        """Write one command; TrialError when the process is gone (a broken pipe)."""
        try:
            self.stdin.write((json.dumps(msg) + "\n").encode())
            self.stdin.flush()
        except (OSError, ValueError) as exc:
            raise TrialError(f"fleet agent {self.pid} is gone: {exc}") from None

    def recv(self, timeout: float, key: str | None = None) -> Any:
        """The next message (its ``key`` entry when given).

        Raises:
            TrialError: when the process ends, ``timeout`` (s) passes, or the answer is
                an error or lacks ``key``.
        """
        try:
            msg = self.lines.get(timeout=max(timeout, 0.001))
        except queue.Empty:
            raise TrialError(f"fleet agent {self.pid} gave no answer in {timeout:.0f} s") from None
        if msg is None:
            tail = self.log.read_text(errors="replace").strip()[-800:]
            raise TrialError(f"fleet agent {self.pid} exited: {tail}")
        if key is None:
            return msg
        if key not in msg:
            raise TrialError(f"fleet agent {self.pid} answered {str(msg)[:500]}")
        return msg[key]

    def alive(self) -> bool:
        """Whether the process is still running."""
        if self.proc is not None:
            return self.proc.poll() is None
        return process_alive(self.pid)

    def sigkill(self) -> None:
        """Send SIGKILL to the process group and return at once (:meth:`kill` then waits)."""
        if not self._killed and not self._reaped():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def _reaped(self) -> bool:
        """Whether a cold process has been reaped already (its pid may be reused)."""
        return self.proc is not None and self.proc.returncode is not None

    def kill(self, timeout: float = 10.0) -> None:
        """SIGKILL the process group, then read what it had written (acks) to the end.

        Raises:
            ProcessError: when the process survives SIGKILL for ``timeout`` seconds.
        """
        if self._killed:  # its pid may belong to another process by now
            return
        self._killed = True
        if self.proc is not None:
            if not self._reaped():
                kill_group(self.proc, timeout)
        else:  # a zygote's child: it stays a zombie, its pid reserved, until reaped
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            if not _wait_exit(self.pid, timeout):
                raise ProcessError(f"fleet agent {self.pid} survived SIGKILL for {timeout} s")
            assert self.zygote is not None
            self.zygote.reap(self.pid)
        self._reader.join(timeout=timeout)
        for stream in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                stream.close()


class AgentPool:
    """Agent processes, started ahead of use, kept across an arm's runs, replaced when killed.

    Args:
        corpus_dir: the fleet corpus; embeddings: its embeddings Parquet file.
        log_dir: each process's stderr goes to ``log_dir/agent-<n>.log`` (the zygote's
            to ``log_dir/zygote.log``).
        fork: fork the agents from a zygote (:mod:`.zygote`), started at once; false, or
            once the zygote has failed, agents start cold.
    """

    def __init__(
        self, corpus_dir: str | Path, embeddings: str | Path, log_dir: Path, fork: bool = True
    ) -> None:
        self.argv = ["--corpus", str(corpus_dir), "--embeddings", str(embeddings)]
        self.cmd = [sys.executable, "-m", "agentmem.trials.fleet", "agent", *self.argv]
        self.log_dir = log_dir
        self.agents: list[Agent] = []
        self._started = 0
        self.zygote: Zygote | None = None
        if fork:
            try:
                self.zygote = Zygote(log_dir / "zygote.log")
            except OSError as exc:
                print(f"fleet: no zygote, agents start cold: {exc}", file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """While in effect, the zygote imports every module this process imports.

        Wraps an arm's build, so that the agents forked afterwards have the arm's
        product imported (:class:`~agentmem.trials.fleet.zygote.ImportRecorder`).
        """
        if self.zygote is None or self.zygote.broken:
            yield
            return
        with ImportRecorder(self.zygote):
            yield

    def _spawn(self) -> Agent:
        self._started += 1
        log = self.log_dir / f"agent-{self._started}.log"
        if self.zygote is not None:
            try:
                return Agent.fork(self.zygote, self.argv, log)
            except TrialError as exc:
                print(f"fleet: agents start cold from now on: {exc}", file=sys.stderr, flush=True)
                self.zygote.close()
                self.zygote = None
        return Agent.spawn(self.cmd, log)

    def start(self, n: int) -> None:
        """Have at least ``n`` live agents (replacing dead ones); does not wait for them."""
        self.agents = [a if a.alive() else self._spawn() for a in self.agents]
        while len(self.agents) < n:
            self.agents.append(self._spawn())

    def take(self, n: int) -> list[Agent]:
        """``n`` live agents that have loaded the corpus (started first if needed).

        Waits for every agent of the pool, so that none is still loading (taking CPU)
        while the ``n`` run.
        """
        self.start(n)
        for a in self.agents:
            self.ready(a)
        out = self.agents[:n]
        for a in out:
            a.acks.clear()
        return out

    def spawn(self) -> Agent:
        """Start a new agent process outside the pool (the checker of one arm)."""
        return self._spawn()

    @staticmethod
    def ready(a: Agent) -> Agent:
        """Wait until ``a`` has loaded the corpus; returns it."""
        if not a.ready:
            msg = a.recv(OPEN_TIMEOUT_S)
            if not msg.get("ready"):
                raise TrialError(f"fleet agent {a.pid} did not start: {msg}")
            a.ready = True
        return a

    def retire(self, others: list[Agent] | None = None) -> None:
        """End of an arm: kill the forked agents (the next arm's are forked after its build).

        Cold agents are kept: they import the next arm's product when they open its store.
        ``others`` (the arm's checker) are killed too, whichever way they started.
        """
        _kill_all([a for a in self.agents if a.zygote is not None] + list(others or []))
        self.agents = [a for a in self.agents if a.zygote is None]

    def close(self) -> None:
        """Kill every agent process (and anything it started), then end the zygote."""
        try:
            _kill_all(self.agents)
        finally:
            self.agents = []
            if self.zygote is not None:
                self.zygote.close()
                self.zygote = None
