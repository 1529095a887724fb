"""The zygote: one process that imports what agents need once and forks them on request.

A cold agent process (``python -m agentmem.trials.fleet agent``) spends seconds
importing agentmem, polars and the tokenizer, and seconds more importing a product the
first time it opens a store. The zygote (``python -m agentmem.trials.fleet zygote``)
pays this once. It imports the fleet's modules and loads the tokenizer when it starts;
while the trial process builds an arm's store, it imports every module the build
imports, each in the environment the build imported it in (:class:`ImportRecorder`:
a product's telemetry switch or home directory is set by its arm before the import).
Agent processes are then forked from it (:meth:`Zygote.fork`).

The zygote only imports. It never opens a store, calls a product or uses polars, so
no connection, worker pool or runtime a library creates on use exists before the fork.
A few libraries start an idle thread at import (polars' allocator and spill cleaner,
LanceDB's event loop, which it restarts in a forked child); the fleet's runs on every
arm check that each product works in forked agents. A forked agent starts its own
session (its own process group, as the SIGKILL run needs), takes the pipes and log file
the trial passed with the request, reseeds numpy's global generator and then runs
:func:`~agentmem.trials.fleet.agent.agent_main` like a cold agent. The zygote reaps a
child only when told to, after the trial has killed it, so a pid the trial still holds
is never reused.

Control protocol: one JSON object per message on an ``AF_UNIX`` ``SOCK_SEQPACKET``
socket. To the zygote: ``{"cmd": "begin"}`` (the environment now is the base of the
differences that follow), ``{"cmd": "import", "module", "env"}`` (import ``module`` with
the base environment changed by ``env``: name -> value, ``null`` to unset),
``{"cmd": "end", "env"}`` (keep the base changed by ``env``), ``{"cmd": "fork", "argv"}``
with three file descriptors (the agent's stdin, stdout and stderr; answered
``{"pid": n}``), ``{"cmd": "reap", "pid"}``. Its first message is ``{"ready": true}``; at
the end of the socket it kills and reaps its remaining children and exits.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import importlib.abc
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from agentmem.procs import child_env
from agentmem.trials.common import TrialError

__all__ = ["ImportRecorder", "Zygote", "env_changes", "zygote_main"]

#: modules the zygote imports when it starts: everything an agent or a checker imports
#: before it opens a store
BASE_MODULES = (
    "agentmem.trials.fleet.agent",
    "agentmem.trials.fleet.check",
    "agentmem.runner",
    "agentmem.tokens",
)

_MAX_MESSAGE = 1 << 20


def env_changes(base: Mapping[str, str], now: Mapping[str, str]) -> dict[str, str | None]:
    """What turns environment ``base`` into ``now``: name -> new value, ``None`` if unset."""
    out: dict[str, str | None] = {k: v for k, v in now.items() if base.get(k) != v}
    out.update({k: None for k in base if k not in now})
    return out


def _apply_env(base: Mapping[str, str], changes: Mapping[str, str | None]) -> None:
    """Make ``os.environ`` equal ``base`` changed by ``changes``."""
    target = dict(base)
    for k, v in changes.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = v
    for k in [k for k in os.environ if k not in target]:
        del os.environ[k]
    for k, v in target.items():
        if os.environ.get(k) != v:
            os.environ[k] = v


def _threads() -> list[str]:
    """Names of this process's threads (the kernel's ``comm`` of each task)."""
    names = []
    for tid in sorted(os.listdir("/proc/self/task")):
        with contextlib.suppress(OSError):
            names.append(Path(f"/proc/self/task/{tid}/comm").read_text().strip())
    return names


class Zygote:
    """The trial side of a zygote process: preload commands, forks, reaps.

    Args:
        log: the zygote's stdout and stderr go there.

    The zygote starts importing at once; :meth:`fork` waits until it is ready and has
    done every import sent before. Commands come from the trial's threads under one lock.
    """

    def __init__(self, log: Path) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        cmd = [sys.executable, "-m", "agentmem.trials.fleet", "zygote"]
        cmd += ["--control-fd", str(child.fileno())]
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                pass_fds=(child.fileno(),),
                env=child_env(),
            )
        child.close()
        self.log = log
        self.sock = parent
        self.ready = False
        self.broken = False
        self._lock = threading.RLock()

    def _send(self, msg: dict[str, Any], fds: list[int] | None = None) -> None:
        data = json.dumps(msg).encode()
        with self._lock:
            try:
                if fds:
                    socket.send_fds(self.sock, [data], fds)
                else:
                    self.sock.send(data)
            except OSError as exc:
                self.broken = True
                raise TrialError(f"fleet zygote {self.proc.pid} is gone: {exc}") from None

    def _recv(self, timeout: float) -> dict[str, Any]:
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(_MAX_MESSAGE)
        except TimeoutError:
            self.broken = True  # a late answer would be read as the next one's
            raise TrialError(
                f"fleet zygote {self.proc.pid} gave no answer in {timeout:.0f} s"
            ) from None
        except OSError:
            data = b""
        finally:
            self.sock.settimeout(None)
        if not data:
            self.broken = True
            tail = self.log.read_text(errors="replace").strip()[-800:]
            raise TrialError(f"fleet zygote {self.proc.pid} exited: {tail}")
        return json.loads(data)

    def begin(self) -> None:
        """Start a block of imports: their environments are changes of the present one."""
        self._send({"cmd": "begin"})

    def preload(self, module: str, env: Mapping[str, str | None]) -> None:
        """Have the zygote import ``module`` with the block's environment changed by ``env``."""
        self._send({"cmd": "import", "module": module, "env": dict(env)})

    def end(self, env: Mapping[str, str | None]) -> None:
        """End the block; the zygote's environment keeps the changes ``env``."""
        self._send({"cmd": "end", "env": dict(env)})

    def fork(self, argv: list[str], log: Path, timeout: float) -> tuple[int, BinaryIO, BinaryIO]:
        """Fork an agent process running ``agent_main(argv)``, its stderr to ``log``.

        Returns:
            ``(pid, its stdin to write, its stdout to read)``.

        Raises:
            TrialError: when the zygote is gone or does not answer within ``timeout`` s.
        """
        with self._lock:
            if not self.ready:
                msg = self._recv(timeout)
                if not msg.get("ready"):
                    raise TrialError(f"fleet zygote {self.proc.pid} did not start: {msg}")
                self.ready = True
            in_r, in_w = os.pipe()
            out_r, out_w = os.pipe()
            err = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                self._send({"cmd": "fork", "argv": argv}, [in_r, out_w, err])
            except TrialError:
                for fd in (in_w, out_r):
                    os.close(fd)
                raise
            finally:
                for fd in (in_r, out_w, err):
                    os.close(fd)
            try:
                msg = self._recv(timeout)
            except TrialError:
                for fd in (in_w, out_r):
                    os.close(fd)
                raise
        if "pid" not in msg:
            for fd in (in_w, out_r):
                os.close(fd)
            raise TrialError(f"fleet zygote {self.proc.pid} could not fork: {msg}")
        return int(msg["pid"]), os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb")

    def reap(self, pid: int) -> None:
        """Let the zygote reap its child ``pid`` (dead: the trial killed it)."""
        with contextlib.suppress(TrialError):
            self._send({"cmd": "reap", "pid": pid})

    def close(self, timeout: float = 30.0) -> None:
        """End the zygote (it kills and reaps any child left) and wait for it."""
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ImportRecorder(importlib.abc.MetaPathFinder):
    """While in effect (``with``), sends the zygote every module this process imports.

    A meta path finder that finds nothing: it notes each module the import system looks
    for, with the environment's changes since the block began, and sends the ones that
    were imported (a module only probed for is left out) to :meth:`Zygote.preload`, in
    the order their imports completed. At the end it sends the environment's changes.
    Errors talking to the zygote never reach the importing code.
    """

    def __init__(self, zygote: Zygote) -> None:
        self.zygote = zygote
        self._base: dict[str, str] = {}
        self._pending: list[tuple[str, dict[str, str | None]]] = []
        self._seen: set[str] = set()
        self._lock = threading.RLock()
        self._on = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        """Note ``fullname`` (and send the noted modules imported since); finds nothing."""
        if not self._on:
            return None
        try:
            with self._lock:
                self._flush()
                if fullname not in self._seen:
                    self._seen.add(fullname)
                    self._pending.append((fullname, env_changes(self._base, os.environ)))
        except Exception:  # noqa: BLE001 - the recorder must never break an import
            pass
        return None

    def _flush(self, final: bool = False) -> None:
        """Send the noted modules that are imported; keep those still importing."""
        keep = []
        for name, env in self._pending:
            spec = getattr(sys.modules.get(name), "__spec__", None)
            if name not in sys.modules or getattr(spec, "_initializing", False):
                if not final:  # not (yet) imported: still running, failed, or only probed
                    keep.append((name, env))
            elif not self.zygote.broken:
                self.zygote.preload(name, env)
        self._pending = keep

    def __enter__(self) -> ImportRecorder:
        self._base = dict(os.environ)
        with contextlib.suppress(TrialError):
            self.zygote.begin()
        self._on = True
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._on = False
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        with self._lock, contextlib.suppress(TrialError):
            self._flush(final=True)
            self.zygote.end(env_changes(self._base, os.environ))


# ------------------------------------------------------------------- the zygote process
def _say(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} zygote: {text}", file=sys.stderr, flush=True)


def _name(comm: str) -> None:
    """Name this process in ``ps -o comm`` and ``top`` (its command line stays the zygote's)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text(comm)


def _reply(sock: socket.socket, msg: dict[str, Any]) -> None:
    sock.send(json.dumps(msg).encode())


def _child(argv: list[str], fds: list[int], sock: socket.socket) -> None:
    """The forked agent: own session, the passed fds as stdin/stdout/stderr, then the agent."""
    code = 1
    try:
        os.setsid()
        _name("fleet-agent")
        sock.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        import numpy as np

        np.random.seed()  # the zygote's global generator state is not shared by its children
        from agentmem.trials.fleet.agent import agent_main

        agent_main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - a child must end here, never return into the zygote
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def zygote_main(argv: list[str] | None = None) -> None:
    """Entry point of the zygote process (the protocol in this module's docstring)."""
    ap = argparse.ArgumentParser(prog="python -m agentmem.trials.fleet zygote")
    ap.add_argument("--control-fd", type=int, required=True, help="the control socket")
    args = ap.parse_args(argv)
    sock = socket.socket(fileno=args.control_fd)
    _name("fleet-zygote")
    # LanceDB resets its runtime in every forked child and says so each time
    warnings.filterwarnings("ignore", "lancedb fork support is experimental", RuntimeWarning)
    t0 = time.monotonic()
    for name in BASE_MODULES:
        importlib.import_module(name)
    from agentmem.tokens import count_tokens

    count_tokens(["the tokenizer remember uses"])
    _say(f"ready in {time.monotonic() - t0:.1f} s; threads {_threads()}")
    _reply(sock, {"ready": True})
    children: set[int] = set()
    base = dict(os.environ)
    imported = 0
    block = time.monotonic()
    try:
        while True:
            data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, 3)
            if not data:
                break
            msg = json.loads(data)
            cmd = msg.get("cmd")
            if cmd == "fork" and len(fds) == 3:
                sys.stdout.flush()
                sys.stderr.flush()
                gc.freeze()  # the children's collections leave the zygote's objects alone
                try:
                    pid = os.fork()
                except OSError as exc:
                    _reply(sock, {"error": f"fork failed: {exc}"})
                    pid = -1
                if pid == 0:
                    _child(list(msg["argv"]), fds, sock)
                elif pid > 0:
                    children.add(pid)
                    _reply(sock, {"pid": pid})
            elif cmd == "fork":
                _reply(sock, {"error": f"fork needs 3 descriptors, got {len(fds)}"})
            elif cmd == "reap":
                pid = int(msg["pid"])
                if pid in children:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, 0)
                    children.discard(pid)
            elif cmd == "begin":
                base, imported, block = dict(os.environ), 0, time.monotonic()
            elif cmd == "import":
                _apply_env(base, msg.get("env") or {})
                try:
                    importlib.import_module(msg["module"])
                    imported += 1
                except (Exception, SystemExit) as exc:  # noqa: BLE001 - the agent imports it then
                    _say(f"cannot import {msg['module']}: {type(exc).__name__}: {exc}")
            elif cmd == "end":
                _apply_env(base, msg.get("env") or {})
                _say(
                    f"imported {imported} modules, done {time.monotonic() - block:.1f} s after "
                    f"the build began; threads {_threads()}"
                )
            for fd in fds:  # the child has its copies
                os.close(fd)
    finally:
        for pid in children:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
