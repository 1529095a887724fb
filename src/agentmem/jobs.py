"""What every workflow script (``scripts/*.py``, run by Snakemake's ``script:``) does first.

:func:`start_job` sends the job's stderr to its log, where the job's CPU time goes as it
exits, and lowers the priority of every job that is not timed (docs/MEASUREMENT.md §1).
:func:`corpus_dir` gives the library the directory of a job's corpus files after checking
that the rule declares each file the call reads or writes. :func:`run_entry` runs an
experiment whose rule names its library function, so the experiment needs no script of
its own. :func:`cancel_pending_timers` is for the
workflow's ``onsuccess`` / ``onerror``.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from importlib import import_module
from pathlib import Path
from typing import Any

from agentmem.procs import (
    PG_TEMPLATE_ENV,
    SERVER_CPU_LOG_ENV,
    report_job_cpu,
    run_in_background,
    run_single_threaded,
)

#: File name of each corpus file a rule declares, by the name it declares it under
#: (``results/corpus/{size}/`` and ``results/external/locomo/corpus/``, docs/DATA.md).
CORPUS_FILES = {
    "memories": "memories.parquet",
    "facts": "facts.parquet",
    "entities": "entities.parquet",
    "sessions": "sessions.parquet",
    "agents": "agents.parquet",
    "queries": "queries.parquet",
    "qrels": "qrels.parquet",
    "qrels_session": "qrels_session.parquet",
    "labels": "labels.csv",
    "manifest": "manifest.json",
}
#: The corpus files :func:`agentmem.corpus.io.load_corpus` opens.
CORPUS_TABLES = ("memories", "sessions", "facts", "entities")
#: Where workflow jobs keep the template cluster new embedded stores are copied from
#: (:mod:`agentmem.pg.template`), under the workflow's directory.
PG_TEMPLATE_DIR = Path("results/cache/pg-template")


def start_job(snakemake: Any, *, background: bool = True) -> None:
    """Send stderr to the job's log (open until the job ends); nice every untimed job.

    At exit the job writes its CPU time, its reaped children's included, to the log
    (:func:`agentmem.procs.report_job_cpu`), for the run's timeline.

    New embedded PostgreSQL stores are copied from one template cluster under
    :data:`PG_TEMPLATE_DIR` (:mod:`agentmem.pg.template`) unless the environment already
    names another.

    Args:
        snakemake: the script's ``snakemake`` object; ``log[0]`` is the job's log file.
        background: ``False`` for the jobs that hold ``bench_slot`` (timing jobs and the
            encoder) and those every one of them waits for (corpus generation, the encoder
            export), which keep their priority; otherwise the job runs at
            :data:`agentmem.io.BACKGROUND_NICENESS` (:func:`agentmem.io.run_in_background`),
            so it cannot slow a timing job down much, on one BLAS and OpenMP thread
            (:func:`agentmem.procs.run_single_threaded`: it declares ``threads: 0``).
    """
    sys.stderr = open(snakemake.log[0], "w")  # kept open: the job's stderr until it exits
    atexit.register(report_job_cpu)
    os.environ[SERVER_CPU_LOG_ENV] = "1"  # the servers' CPU goes to this log, for the timeline
    os.environ.setdefault(PG_TEMPLATE_ENV, str(PG_TEMPLATE_DIR.resolve()))  # no initdb per store
    if background:
        run_in_background()
        run_single_threaded()


def run_entry(snakemake: Any) -> Any:
    """Run the library function the rule names as ``params.entry``, on the job's files.

    ``entry`` is ``"package.module:function"``; the function is called as
    ``function(input, output, params)`` with Snakemake's named lists of the job (read by
    name: ``input.embeddings``, ``output.table``, ``params.settings``), and does the
    whole job: it validates ``params`` through its config model and writes ``output``.
    The job is untimed (:func:`start_job` nices it) unless ``params.timed`` is true.

    Returns:
        What the function returns.

    Raises:
        ValueError: when the rule declares no ``entry`` or it names no function.
    """
    params = snakemake.params
    start_job(snakemake, background=not params.get("timed", False))
    entry = params.get("entry")
    module, _, name = str(entry or "").partition(":")
    if not module or not name:
        raise ValueError(f"params.entry must be 'package.module:function', not {entry!r}")
    function = getattr(import_module(module), name, None)
    if not callable(function):
        raise ValueError(f"params.entry {entry!r}: {module} has no function {name!r}")
    return function(snakemake.input, snakemake.output, params)


def corpus_dir(files: Any, *names: str) -> Path:
    """The directory of the corpus files ``names``, each declared by the rule under its name.

    Library calls take a corpus directory and open the files in it by name; the rule lists
    every file the call opens, so Snakemake knows them all.

    Args:
        files: ``snakemake.input`` (files read) or ``snakemake.output`` (files written).
        names: the corpus files the call opens, keys of :data:`CORPUS_FILES`.

    Returns:
        The one directory holding them.

    Raises:
        ValueError: no name is given, a name is not declared, is declared with another
            file name, or the files are not all in one directory.
    """
    if not names:
        raise ValueError("corpus_dir needs the names of the corpus files the call opens")
    declared = set(files.keys())
    missing = [n for n in names if n not in declared]
    if missing:
        raise ValueError(f"corpus files not declared by the rule: {', '.join(missing)}")
    paths = {n: Path(files[n]) for n in names}
    wrong = [f"{n}={p}" for n, p in paths.items() if p.name != CORPUS_FILES[n]]
    if wrong:
        raise ValueError(f"corpus files declared under the wrong name: {', '.join(wrong)}")
    dirs = {p.parent for p in paths.values()}
    if len(dirs) != 1:
        raise ValueError(f"corpus files in more than one directory: {sorted(map(str, dirs))}")
    return dirs.pop()


def cancel_pending_timers() -> int:
    """Cancel every ``threading.Timer`` of this process still waiting; return how many.

    For the workflow's ``onsuccess`` and ``onerror``, when the run is over. Snakemake's
    job-rate limit (``max-jobs-per-timespan``, a 30-minute window in
    ``profiles/default``) leaves timers that re-run the job selection a window after a
    selection. They are not daemon threads, so the interpreter waits for them before
    exiting although nothing is left to select: up to a whole window after every run.
    """
    pending = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    for t in pending:
        t.cancel()
    return len(pending)


#: Seconds between the resource samples Snakemake's ``benchmark:`` takes of a job in its
#: first 30 samples (Snakemake's own: 0.5 s; every 30 s after those either way); see
#: :func:`sparser_benchmark_samples`
BENCHMARK_SAMPLE_S = 5.0


def sparser_benchmark_samples(seconds: float = BENCHMARK_SAMPLE_S) -> float | None:
    """Make Snakemake sample each job's benchmark every ``seconds`` in its first 30 samples.

    For the Snakefile. Snakemake's process samples a running job's process tree every 0.5 s
    for its first 30 samples: each sample reads ``/proc`` for the tree (psutil's
    ``children``, which reads every process's ``stat``) and each process's
    ``smaps_rollup``, mostly kernel time taken from the jobs. Every 5 s instead: the smoke
    workflow 288 -> 262 CPU s, 56 -> 39 s of it kernel time (docs/BENCHMARKS.md). A
    benchmark's ``s`` (wall time) is measured, not sampled, so it is unchanged; its
    ``cpu_time`` and ``max_rss`` are samples, and the timeline takes each job's CPU from
    its log anyway (:func:`agentmem.procs.report_job_cpu`).

    Returns:
        The interval it replaced, or ``None`` (and nothing changed) when this Snakemake has
        no ``snakemake.benchmark.BENCHMARK_INTERVAL_SHORT``.
    """
    import snakemake.benchmark as bench

    old = getattr(bench, "BENCHMARK_INTERVAL_SHORT", None)
    if old is not None:
        bench.BENCHMARK_INTERVAL_SHORT = seconds
    return old


def cancel_pending_timers_at_exit() -> threading.Thread:
    """Cancel the pending timers (:func:`cancel_pending_timers`) when the main thread ends.

    For the Snakefile: ``onsuccess`` and ``onerror`` cancel them when a run ends, but an
    exception out of Snakemake's scheduler, or ``--nohooks``, calls neither, and the
    interpreter would wait a whole job-rate window before exiting. A daemon thread joins
    the main thread, which Python marks finished before it waits for the other threads,
    then cancels them.

    Returns:
        The started daemon thread.
    """

    def cancel_after_main() -> None:
        threading.main_thread().join()
        cancel_pending_timers()

    watcher = threading.Thread(target=cancel_after_main, name="cancel-timers", daemon=True)
    watcher.start()
    return watcher
