"""Command line of the bench (``scripts/bench.py``, ``python -m agentmem.bench``).

``python -m agentmem.bench timeline`` (:func:`timeline_main`) says where a workflow run's time
went, from its Snakemake log (:mod:`agentmem.bench.timeline`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from agentmem.bench.errors import BenchError
from agentmem.bench.run import run_bench
from agentmem.config import ConfigError

log = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python scripts/bench.py [--size s] [--out results/bench] [--pipeline]``.

    ``--pipeline-cores N`` sets ``snakemake --cores`` for ``--pipeline`` (default 16). A first
    argument ``timeline`` runs :func:`timeline_main` on the rest.

    Returns:
        0 (targets missed are reported in the summary, not by the exit status); 2 on a
        usage error.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["timeline"]:
        return timeline_main(argv[1:])
    p = argparse.ArgumentParser(
        prog="bench.py",
        description=(
            "Benchmark the harness itself: Arm.query vs the bare driver call, ingest vs the "
            "raw bulk path, remember of one memory, the embedding rule vs bare encode, and "
            "(--pipeline) the whole "
            "workflow. Writes results/bench/*.json and summary.md."
        ),
        epilog="bench.py timeline [--log PATH]: where a workflow run's time went (see --help).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--size", default="s", help="corpus size from the config")
    p.add_argument("--out", type=Path, default=Path("results/bench"), help="output directory")
    p.add_argument(
        "--config-file",
        type=Path,
        default=Path("config/config.yaml"),
        help="config for sizes, arm parameters and --pipeline",
    )
    p.add_argument(
        "--arms",
        default=None,
        help="comma-separated arms (None: all; '' skips harness and ingest)",
    )
    p.add_argument("--rounds", type=int, default=5, help="harness rounds per query and side")
    p.add_argument("--ingest-rounds", type=int, default=5, help="builds per arm")
    p.add_argument(
        "--remember",
        type=int,
        default=200,
        metavar="N",
        help="timed single-memory remembers per arm (0 skips the remember measure)",
    )
    p.add_argument("--embed-rounds", type=int, default=1, help="passes of the embedding test")
    p.add_argument("--embed-texts", type=int, default=2000, help="texts in the embedding test")
    p.add_argument("--skip-embedding", action="store_true", help="skip the embedding test")
    p.add_argument("--pipeline", action="store_true", help="also time the whole workflow (slow)")
    p.add_argument(
        "--pipeline-cores",
        type=int,
        default=16,
        metavar="N",
        help="snakemake --cores for --pipeline (16 is what `make reproduce` uses)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    for flag in ("rounds", "ingest_rounds", "embed_rounds", "embed_texts", "pipeline_cores"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}")
    if args.remember < 0:
        p.error(f"--remember must be >= 0, got {args.remember}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    # our progress lines (every agentmem.bench module); pgserver and the model stay quiet
    logging.getLogger("agentmem.bench").setLevel(logging.INFO)
    arms = None if args.arms is None else [a for a in args.arms.split(",") if a.strip()]
    try:
        res = run_bench(
            size=args.size,
            out_dir=args.out,
            config_file=args.config_file,
            arms=arms,
            rounds=args.rounds,
            ingest_rounds=args.ingest_rounds,
            remember_n=args.remember,
            embedding=not args.skip_embedding,
            embed_rounds=args.embed_rounds,
            embed_texts_n=args.embed_texts,
            pipeline=args.pipeline,
            pipeline_cores=args.pipeline_cores,
            progress=not args.no_progress,
        )
    except (BenchError, ConfigError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    print((args.out / "summary.md").read_text())
    missed = sum(1 for r in res["rows"] if r["met"] is False)
    log.info("summary: %s (%d target(s) missed)", args.out / "summary.md", missed)
    return 0


def timeline_main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentmem.bench timeline [--log PATH] [--benchmarks DIR] [--out DIR]``.

    Writes ``timeline.csv``, ``timeline.md`` and ``timeline.svg`` (+ ``.png``) of one workflow
    run into ``--out`` and prints the Markdown (:mod:`agentmem.bench.timeline`).

    Returns:
        0; 2 when there is no log, it cannot be read or it shows no job.
    """
    from agentmem.bench.timeline import build_timeline, latest_log, rule_groups, write_timeline

    p = argparse.ArgumentParser(
        prog="bench.py timeline",
        description=(
            "Where a workflow run's time went: one row per job (lane, start, end, wall, CPU, "
            "peak RSS), per-lane busy and idle time, the critical path, a figure."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--log",
        type=Path,
        default=None,
        help="Snakemake log of the run (default: the newest .snakemake/log/*.snakemake.log here)",
    )
    p.add_argument(
        "--benchmarks",
        type=Path,
        default=Path("results/benchmarks"),
        help="the run's benchmark files (the jobs' precise wall time, CPU and peak RSS)",
    )
    p.add_argument("--out", type=Path, default=Path("results/bench"), help="output directory")
    args = p.parse_args(argv)
    try:
        log_path = args.log if args.log is not None else latest_log(Path.cwd())
        if not log_path.is_file():
            raise BenchError(f"Snakemake log {log_path} does not exist")
        tl = build_timeline(log_path, args.benchmarks)
        if not tl["jobs"]:
            raise BenchError(f"{log_path}: no job ran in that run (nothing to draw)")
        paths = write_timeline(tl, args.out, rule_groups(Path.cwd()))
    except BenchError as exc:
        print(f"bench timeline: {exc}", file=sys.stderr)
        return 2
    print(paths["md"].read_text())
    print(f"Timeline: {paths['md']}, {paths['csv']}, {paths['svg']}")
    return 0
