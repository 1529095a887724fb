"""A throw-away single-node SLURM cluster on this machine, for tests.

:class:`SingleNodeSlurm` writes a ``slurm.conf`` and a MUNGE key into a scratch directory
of its own, starts ``munged``, ``slurmctld`` and ``slurmd`` in the foreground as child
processes (so it knows their pids), and on :meth:`~SingleNodeSlurm.stop` cancels what is
still queued, stops exactly those three processes and checks that no process of this
cluster is left (daemon, ``slurmstepd`` or job). Everything it creates lives in the
scratch directory; client commands (``sbatch``, ``squeue``, ``scancel``, ...) find the
cluster through ``SLURM_CONF`` in :attr:`~SingleNodeSlurm.env`.

The cluster is what SLURM needs on one machine without systemd or cgroups:

- ``proctrack/linuxproc`` and ``task/none`` (no cgroups; nothing confines a job);
- no accounting database (``accounting_storage/none``): ``sacct`` fails, so job state
  comes from ``squeue``, and ``MinJobAge`` keeps finished jobs listed for 10 minutes; a
  job completion log (``jobcomp/filetxt``) keeps one line per finished job;
- one node, named after ``hostname -s``, on 127.0.0.1 with ports picked free at start;
- one default partition;
- ``srun`` on the jobs' ``PATH`` is a wrapper that names this cluster's ``slurm.conf``:
  the SLURM executor's job step removes ``SLURM_*`` variables (``SLURM_CONF`` too)
  before it calls ``srun``, which on a real cluster finds ``/etc/slurm/slurm.conf`` or
  slurmd's configless cache; this cluster's file is in the scratch directory.

Installing: :func:`ensure_installed` installs Debian's ``slurm-wlm`` and ``munge`` with
apt when they are missing and this process is root, and otherwise says why not.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol", "srun")
APT_PACKAGES = ("slurm-wlm", "munge")


def _program(name: str) -> str:
    """Path of a SLURM or MUNGE program (the daemons live in /usr/sbin, maybe not on PATH)."""
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _missing_programs() -> list[str]:
    return [p for p in DAEMONS + CLIENTS if not Path(_program(p)).is_file()]


def ensure_installed() -> str | None:
    """Install SLURM and MUNGE with apt if missing (root only); return why not, or None.

    Returns:
        None when every daemon and client command is present (afterwards), else the
        reason the SLURM tests cannot run here.
    """
    if os.geteuid() != 0:
        if _missing_programs():
            return (
                "SLURM is not installed and this is not root: run the tests as root "
                f"(they apt-get install {' '.join(APT_PACKAGES)}) or install them yourself"
            )
        return "the test cluster's slurmd must run as root to start jobs; run the tests as root"
    if not _missing_programs():
        return None
    if shutil.which("apt-get") is None:
        return f"SLURM is not installed and there is no apt-get; install {' '.join(APT_PACKAGES)}"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=120"]
    for cmd in (
        ["apt-get", *lock, "update", "-qq"],
        ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", *APT_PACKAGES],
    ):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            return f"`{' '.join(cmd)}` failed: {(proc.stderr or proc.stdout)[-2000:]}"
    missing = _missing_programs()
    return f"still missing after apt-get install: {', '.join(missing)}" if missing else None


def slurm_version() -> str:
    """``slurmctld -V``, e.g. ``slurm-wlm 22.05.8`` (the clients need a configuration)."""
    return subprocess.run(
        [_program("slurmctld"), "-V"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 right now."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Node:
    """What the single node declares (SLURM schedules against these numbers)."""

    cpus: int
    memory_mb: int


class SingleNodeSlurm:
    """A one-node SLURM cluster in a scratch directory; a context manager.

    Args:
        node: CPUs and memory the node declares. They may exceed the machine's
            (``SlurmdParameters=config_overrides``): a test cluster can then accept the
            same requests a real cluster gets. Nothing enforces them (no cgroups).
        min_job_age: seconds a finished job stays in ``squeue --states=all``.
    """

    def __init__(self, node: Node, min_job_age: int = 600) -> None:
        self.node = node
        self.min_job_age = min_job_age
        self.root = Path(tempfile.mkdtemp(prefix="agentmem-slurmd-"))
        self.root.chmod(0o755)  # munged wants its socket directory reachable by all
        self.conf = self.root / "slurm.conf"
        self.jobcomp = self.root / "log" / "jobcomp.txt"
        self.nodename = socket.gethostname().split(".")[0]
        self.partition = "agentmem"
        self.procs: dict[str, subprocess.Popen] = {}
        # the jobs' srun runs without SLURM_CONF (see the module docstring): bin/srun
        self.bin = self.root / "bin"
        self.env = {
            **os.environ,
            "SLURM_CONF": str(self.conf),
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        # nothing of an enclosing SLURM job or a user's defaults (SBATCH_ACCOUNT, ...)
        prefixes = ("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SINFO_")
        for k in [k for k in self.env if k.startswith(prefixes) and k != "SLURM_CONF"]:
            del self.env[k]

    # ------------------------------------------------------------------ start
    def __enter__(self) -> SingleNodeSlurm:
        try:
            self.start()
        except BaseException:
            self.stop(check=False)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop(check=exc[0] is None)

    def _write_files(self) -> None:
        for d in ("munge", "state", "spool", "log", "bin"):
            (self.root / d).mkdir(mode=0o755)
        srun = self.bin / "srun"
        srun.write_text(
            "#!/bin/sh\n# srun of the test cluster, whose slurm.conf is not in /etc/slurm\n"
            f'SLURM_CONF={self.conf} exec {_program("srun")} "$@"\n'
        )
        srun.chmod(0o755)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        ctld_port, slurmd_port = _free_ports(2)
        r, h = self.root, self.nodename
        self.conf.write_text(
            f"""\
# single-node test cluster (tests/support/slurm_cluster.py)
ClusterName=agentmemtest
SlurmctldHost={h}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={r}/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={self.jobcomp}
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MinJobAge={self.min_job_age}
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={h} NodeAddr=127.0.0.1 CPUs={self.node.cpus} RealMemory={self.node.memory_mb} State=UNKNOWN
PartitionName={self.partition} Nodes={h} Default=YES MaxTime=INFINITE State=UP
"""
        )

    def _spawn(self, name: str, *args: str) -> None:
        with open(self.root / "log" / f"{name}.out", "wb") as log:
            self.procs[name] = subprocess.Popen(
                [_program(name), *args],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C of the test run is not theirs to get
            )

    def _wait(self, what: str, ready, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}):\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} not ready after {timeout:.0f} s:\n{self.logs()}")
            time.sleep(0.2)

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a SLURM client command against this cluster."""
        return subprocess.run(
            [_program(cmd[0]), *cmd[1:]],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=check,
        )

    def start(self) -> None:
        """Write the configuration and start munged, slurmctld and slurmd; wait until idle."""
        self._write_files()
        m = self.root / "munge"
        self._spawn(
            "munged",
            "--foreground",
            f"--key-file={m / 'munge.key'}",
            f"--socket={m / 'munge.sock'}",
            f"--pid-file={m / 'munged.pid'}",
            f"--log-file={m / 'munged.log'}",
            f"--seed-file={m / 'munged.seed'}",
        )
        self._wait("munged", lambda: (m / "munge.sock").is_socket())
        self._spawn("slurmctld", "-D", "-f", str(self.conf))
        self._wait("slurmctld", lambda: "UP" in self.run("scontrol", "ping", check=False).stdout)
        self._spawn("slurmd", "-D", "-f", str(self.conf), "-N", self.nodename)
        self._wait("node", lambda: self.node_state() == "idle")

    # ------------------------------------------------------------------ query
    def node_state(self) -> str:
        """State of the node as ``sinfo`` reports it (idle, mixed, allocated, ...)."""
        return self.run("sinfo", "-h", "-N", "-o", "%T", check=False).stdout.strip()

    def queue(self) -> list[dict[str, str]]:
        """Every job ``squeue --states=all`` lists (finished ones for MinJobAge seconds).

        Returns:
            One dict per job: id, name, state, comment (the rule, set by the SLURM
            executor plugin), time_limit, cpus, min_memory, partition, work_dir.
        """
        fields = {
            "id": "%i",
            "name": "%j",
            "state": "%T",
            "comment": "%k",
            "time_limit": "%l",
            "cpus": "%C",
            "min_memory": "%m",
            "partition": "%P",
            "work_dir": "%Z",
        }
        out = self.run(
            "squeue", "--states=all", "-h", "-o", "|".join(fields.values()), check=False
        ).stdout
        return [
            dict(zip(fields, line.split("|"), strict=True))
            for line in out.splitlines()
            if line.count("|") == len(fields) - 1
        ]

    def completed_jobs(self) -> list[dict[str, str]]:
        """The job completion log: one dict (JobId, JobState, ExitCode, ...) per finished job."""
        if not self.jobcomp.exists():
            return []
        return [
            dict(re.findall(r"(\w+)=(\S*)", line))
            for line in self.jobcomp.read_text().splitlines()
            if line.strip()
        ]

    def logs(self, tail: int = 30) -> str:
        """The last lines of every daemon log, for error messages."""
        parts = []
        for f in sorted((self.root / "log").glob("*")) + [self.root / "munge" / "munged.log"]:
            if f.is_file() and f != self.jobcomp:
                lines = f.read_text(errors="replace").splitlines()[-tail:]
                parts.append(f"--- {f.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    # ------------------------------------------------------------------ stop
    def leftovers(self) -> list[str]:
        """Live processes of this cluster: its daemons, job steps and jobs.

        A process belongs to the cluster when its command line or one of its open files
        names the scratch directory (the daemons; ``slurmstepd``, which keeps slurmd's log
        open; batch scripts, which live in the spool directory) or its environment names
        this cluster's ``SLURM_CONF`` (every job and job step inherits it from sbatch).
        """
        root = str(self.root)
        out = []
        for p in psutil.process_iter(["pid", "name", "cmdline", "status"]):
            try:
                if p.info["status"] == psutil.STATUS_ZOMBIE or p.pid == os.getpid():
                    continue
                mine = (
                    any(root in a for a in p.info["cmdline"] or [])
                    or any(f.path.startswith(root) for f in p.open_files())
                    or p.environ().get("SLURM_CONF") == str(self.conf)
                )
                if mine:
                    out.append(f"{p.pid} {' '.join(p.info['cmdline'] or [p.info['name']])}")
            except psutil.Error:
                continue
        return out

    def stop(self, check: bool = True) -> None:
        """Cancel queued and running jobs, stop the three daemons, remove the scratch dir.

        Args:
            check: raise if a process of this cluster was still alive afterwards (it is
                killed by its pid either way).
        """
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            active = [j["id"] for j in self.queue() if j["state"] in _ACTIVE]
            if active:
                self.run("scancel", *active, check=False)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and any(
                    j["state"] in _ACTIVE for j in self.queue()
                ):
                    time.sleep(0.5)
        for name in reversed(DAEMONS):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        left = self.leftovers()
        for line in left:  # started by this cluster: end them by pid, then say so
            try:
                psutil.Process(int(line.split()[0])).kill()
            except psutil.Error:
                pass
        shutil.rmtree(self.root, ignore_errors=True)
        if left and check:
            raise RuntimeError(
                "processes of the test cluster were still alive after stop (killed):\n"
                + "\n".join(left)
            )


_ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED"}
