"""The fleet's agent processes: one handle per process and the pool that reuses them.

An :class:`Agent` is one ``python -m agentmem.trials.fleet agent`` process (its own
session, stderr to a log file) and a thread that reads its JSON lines into a queue (the
``ack`` lines into a list); :class:`AgentPool` starts them ahead of use and replaces the
ones killed. The protocol is in :mod:`agentmem.trials.fleet.agent`.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from agentmem.procs import child_env, kill_group
from agentmem.trials.common import TrialError

__all__ = ["OPEN_TIMEOUT_S", "RUN_TIMEOUT_S", "Agent", "AgentPool"]

#: seconds an agent may take to load its corpus or open a store
OPEN_TIMEOUT_S = 300.0
#: seconds a run (all its agents) or a check may take
RUN_TIMEOUT_S = 900.0


class Agent:
    """One agent process and the thread that reads its stdout into a queue."""

    def __init__(self, cmd: list[str], log: Path) -> None:
        self.log = log
        with open(log, "wb") as err:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
                env=child_env(),
            )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.acks: list[str] = []
        self.ready = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
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
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise TrialError(f"fleet agent {self.proc.pid} is gone: {exc}") from None

    def recv(self, timeout: float, key: str | None = None) -> Any:
        """The next message (its ``key`` entry when given).

        Raises:
            TrialError: when the process ends, ``timeout`` (s) passes, or the answer is
                an error or lacks ``key``.
        """
        try:
            msg = self.lines.get(timeout=max(timeout, 0.001))
        except queue.Empty:
            raise TrialError(
                f"fleet agent {self.proc.pid} gave no answer in {timeout:.0f} s"
            ) from None
        if msg is None:
            tail = self.log.read_text(errors="replace").strip()[-800:]
            raise TrialError(f"fleet agent {self.proc.pid} exited: {tail}")
        if key is None:
            return msg
        if key not in msg:
            raise TrialError(f"fleet agent {self.proc.pid} answered {str(msg)[:500]}")
        return msg[key]

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the process group, then read what it had written (acks) to the end."""
        kill_group(self.proc)
        self._reader.join(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class AgentPool:
    """Agent processes, started ahead of use and replaced when killed.

    Args:
        corpus_dir: the fleet corpus; embeddings: its embeddings Parquet file.
        log_dir: each process's stderr goes to ``log_dir/agent-<n>.log``.
    """

    def __init__(self, corpus_dir: str | Path, embeddings: str | Path, log_dir: Path) -> None:
        self.cmd = [sys.executable, "-m", "agentmem.trials.fleet", "agent"]
        self.cmd += ["--corpus", str(corpus_dir), "--embeddings", str(embeddings)]
        self.log_dir = log_dir
        self.agents: list[Agent] = []
        self._started = 0

    def _spawn(self) -> Agent:
        self._started += 1
        return Agent(self.cmd, self.log_dir / f"agent-{self._started}.log")

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
                raise TrialError(f"fleet agent {a.proc.pid} did not start: {msg}")
            a.ready = True
        return a

    def close(self) -> None:
        """Kill every agent process (and anything it started)."""
        for a in self.agents:
            a.kill()
        self.agents = []
