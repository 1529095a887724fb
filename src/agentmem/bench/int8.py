"""The opt-in ``onnx-int8`` encoder against ``onnx`` on a finished reproduction.

:func:`int8_comparison` measures speed on one and two threads, the cosine of each text's
two vectors, and the per-class nDCG@10 of every arm that ranks by vector with either's
vectors, judged against the fp32 value's bootstrap interval. Run it as
``python -m agentmem.bench.int8 compare-int8 --root DIR --out DIR`` (docs/EMBEDDINGS.md).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from agentmem.bench.embedding import cosine_stats, encoder_speed
from agentmem.encoder import quantize_onnx

log = logging.getLogger(__name__)


def vector_arms() -> list[str]:
    """The built-in arms whose ranking reads the vectors, products aside, in registry order."""
    from agentmem.arms import ARMS

    return [
        n
        for n, c in ARMS.items()
        if c.capabilities.vector_access != "none" and c.family != "product"
    ]


def int8_comparison(
    root: Path,
    out_dir: Path,
    size: str = "m",
    arms: Sequence[str] | None = None,
    speed_texts: int = 2000,
    control: bool = False,
    progress: bool = True,
) -> dict:
    """The ``onnx-int8`` backend against ``onnx`` on a finished reproduction under ``root``.

    Reads (never writes) ``root``: its config (``config/config.yaml``: ``arm_params``,
    ``embedding.batch_size``, ``report.n_boot``, ``corpus.seed``), the corpus
    ``results/corpus/<size>/``, the fp32 vectors ``results/embeddings/<size>.parquet``,
    the fp32 export ``results/cache/encoder/<model>.onnx`` and the per-query scores
    ``results/metrics/<size>/<arm>.parquet``. Into ``out_dir`` it writes: the int8 graph
    (derived beside a link to the fp32 export), the int8 vectors of every memory and query
    (one encoder thread), the arms' runs on them (untimed: no warm-up, one repeat; an
    embedded PostgreSQL per pg arm) and their scores, then ``int8_by_class.csv`` /
    ``int8_by_class.md`` (:func:`int8_class_table`) and ``int8.json``.

    Args:
        root: a repository copy holding a finished reproduction (``results/``, ``config/``).
        out_dir: the output directory (created).
        size: the corpus size.
        arms: the arms compared (each must have fp32 scores under ``root``); default
            :func:`vector_arms`.
        speed_texts: texts of the corpus timed by :func:`encoder_speed` (a seeded sample;
            0 times nothing, ``speed`` is then None).
        control: also rerun each arm on the fp32 vectors (column ``fp32_rerun``): a
            difference there is the arm's own run-to-run variation, not the encoder's.
        progress: show progress bars.

    Returns:
        ``speed`` (:func:`encoder_speed`), ``cosine`` (:func:`cosine_stats`: ``all``,
        ``memories``, ``queries``), ``embed`` (texts and CPU seconds of the int8 embedding)
        and ``table`` (path of the CSV); ``inside`` / ``rows``: how many (arm, class) rows
        keep the int8 nDCG@10 inside the fp32 value's interval.

    Raises:
        FileNotFoundError: when an input under ``root`` is missing.
    """
    import os

    from agentmem.config import load_config
    from agentmem.embeddings import embed_corpus, load_embeddings, set_encoder_threads
    from agentmem.io import write_csv, write_json, write_text
    from agentmem.report.tables import score_run_file
    from agentmem.runner import run_arm

    arms = vector_arms() if arms is None else list(arms)
    root, out_dir = Path(root), Path(out_dir)
    cfg = load_config(root / "config" / "config.yaml")
    results = root / "results"
    corpus = results / "corpus" / size
    fp32_vectors = results / "embeddings" / f"{size}.parquet"
    fp32_graph = results / "cache" / "encoder" / f"{cfg.embedding.model}.onnx"
    fp32_metrics = {a: results / "metrics" / size / f"{a}.parquet" for a in arms}
    for f in [corpus / "memories.parquet", fp32_vectors, fp32_graph, *fp32_metrics.values()]:
        if not f.is_file():
            raise FileNotFoundError(f"{f} does not exist (a finished reproduction's file)")
    out_dir.mkdir(parents=True, exist_ok=True)
    # the int8 graph is derived beside the fp32 export: a link to it here keeps root untouched
    graph = out_dir / "encoder" / fp32_graph.name
    graph.parent.mkdir(parents=True, exist_ok=True)
    if not graph.exists():
        graph.symlink_to(fp32_graph.resolve())
    quantize_onnx(graph)

    mem = pl.read_parquet(corpus / "memories.parquet", columns=["body"])["body"].to_list()
    qs = pl.read_parquet(corpus / "queries.parquet", columns=["text"])["text"].to_list()
    pool = list(dict.fromkeys(mem + qs))
    rng = np.random.default_rng(cfg.corpus.seed)
    sample = [pool[i] for i in rng.permutation(len(pool))[:speed_texts]]
    speed = (
        encoder_speed(sample, graph, batch_size=cfg.embedding.batch_size, progress=progress)
        if sample
        else None
    )

    set_encoder_threads(1, "onnx-int8")
    int8_vectors = out_dir / "embeddings" / f"{size}.parquet"
    c0 = time.process_time()
    stats = embed_corpus(
        corpus,
        int8_vectors,
        out_dir / "cache",
        batch_size=cfg.embedding.batch_size,
        progress=progress,
        backend="onnx-int8",
        onnx_model=graph,
    )
    embed = {**stats, "cpu_s": round(time.process_time() - c0, 1)}
    a, b = load_embeddings(fp32_vectors), load_embeddings(int8_vectors)
    cos = (a.matrix * b.get(a.ids)).sum(axis=1)
    is_query = np.isin(a.ids, pl.read_parquet(corpus / "queries.parquet")["query_id"].to_list())
    cosine = {
        "all": cosine_stats(cos),
        "memories": cosine_stats(cos[~is_query]),
        "queries": cosine_stats(cos[is_query]),
    }

    def run(arm: str, vectors: Path, tag: str) -> Path:
        d = out_dir / tag
        run_arm(
            arm,
            dict(cfg.arm_params.get(arm, {})),
            corpus,
            vectors,
            out_dir / "stores" / arm,
            d / "runs" / f"{arm}.parquet",
            d / "builds" / f"{arm}.json",
            d / "plans" / f"{arm}.json",
            k=cfg.run.k,
            warmup=0,
            repeats=1,
            progress=progress,
        )
        scores = d / "metrics" / f"{arm}.parquet"
        score_run_file(
            d / "runs" / f"{arm}.parquet",
            corpus / "queries.parquet",
            corpus / "qrels.parquet",
            scores,
            k=cfg.run.k,
            memories=corpus / "memories.parquet",
        )
        shutil.rmtree(out_dir / "stores" / arm, ignore_errors=True)
        return scores

    int8_metrics: dict[str, Path | str] = {}
    reruns: dict[str, Path | str] = {}
    for arm in arms:
        log.info("%s on the int8 vectors ...", arm)
        int8_metrics[arm] = run(arm, int8_vectors, "int8")
        if control:
            log.info("%s on the fp32 vectors (control) ...", arm)
            reruns[arm] = run(arm, fp32_vectors, "fp32-rerun")
    table = int8_class_table(
        fp32_metrics, int8_metrics, reruns or None, n_boot=cfg.report.n_boot, seed=cfg.corpus.seed
    )
    write_csv(out_dir / "int8_by_class.csv", table)
    write_text(out_dir / "int8_by_class.md", render_int8_table(table))
    inside = table.filter(pl.col("query_class") != "all")["inside"]
    rec = {
        "root": str(root),
        "size": size,
        "arms": list(arms),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "speed": speed,
        "embed": embed,
        "cosine": cosine,
        "inside": int(inside.sum()),
        "rows": int(inside.len()),
        "table": str(out_dir / "int8_by_class.csv"),
    }
    write_json(out_dir / "int8.json", rec)
    return rec


def int8_class_table(
    fp32: dict[str, Path | str],
    int8: dict[str, Path | str],
    rerun: dict[str, Path | str] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> pl.DataFrame:
    """Per (arm, query class) nDCG@10 with fp32 and int8 vectors, judged by the bootstrap.

    The interval is the fp32 value's percentile-bootstrap 95 % interval
    (:func:`agentmem.report.stats.bootstrap_table`, the reproduction's ``bootstrap_ci.csv``
    with the same ``n_boot`` and ``seed``); ``inside`` says whether the int8 value lies in
    it (:func:`agentmem.report.stats.ci_contains`). The paired bootstrap of the per-query
    difference int8 − fp32 (:func:`agentmem.report.stats.paired_bootstrap`) adds
    ``diff_low`` / ``diff_high`` / ``p_value``.

    Args:
        fp32: arm -> per-query scores with the fp32 vectors (``results/metrics/<size>/``).
        int8: arm -> per-query scores with the int8 vectors (same arms).
        rerun: optional arm -> scores of a second fp32 run (column ``fp32_rerun``).
        n_boot: bootstrap resamples.
        seed: the bootstrap's base seed (the workflow uses ``corpus.seed``).

    Returns:
        Columns ``arm, query_class, n, fp32, int8, diff, ci_low, ci_high, inside, diff_low,
        diff_high, p_value`` (and ``fp32_rerun``); classes in study order, then ``all``.
    """
    from agentmem.report.stats import bootstrap_table, ci_contains, paired_bootstrap

    ci = bootstrap_table(fp32, n_boot=n_boot, seed=seed).filter(pl.col("metric") == "ndcg_at_10")
    tagged = {f"{arm}@int8": path for arm, path in int8.items()}
    later = bootstrap_table(tagged, n_boot=1, seed=seed).filter(pl.col("metric") == "ndcg_at_10")
    paired = paired_bootstrap(
        {**fp32, **tagged}, [(f"{arm}@int8", arm) for arm in int8], n_boot=n_boot, seed=seed
    )
    again = {}
    if rerun:
        tab = bootstrap_table(rerun, n_boot=1, seed=seed).filter(pl.col("metric") == "ndcg_at_10")
        again = {(r["arm"], r["query_class"]): r["mean"] for r in tab.iter_rows(named=True)}
    q8 = {
        (r["arm"].removesuffix("@int8"), r["query_class"]): r["mean"]
        for r in later.iter_rows(named=True)
    }
    pd = {(r["arm_b"], r["query_class"]): r for r in paired.iter_rows(named=True)}
    rows = []
    for r in ci.iter_rows(named=True):
        key = (r["arm"], r["query_class"])
        v8 = q8[key]
        row = {
            "arm": r["arm"],
            "query_class": r["query_class"],
            "n": r["n"],
            "fp32": r["mean"],
            "int8": v8,
            "diff": v8 - r["mean"],
            "ci_low": r["ci_low"],
            "ci_high": r["ci_high"],
            "inside": ci_contains(r["ci_low"], r["ci_high"], v8),
            "diff_low": pd[key]["ci_low"],
            "diff_high": pd[key]["ci_high"],
            "p_value": pd[key]["p_value"],
        }
        if rerun:
            row["fp32_rerun"] = again.get(key)
        rows.append(row)
    return pl.DataFrame(rows)


def render_int8_table(table: pl.DataFrame) -> str:
    """Markdown of :func:`int8_class_table`: nDCG@10 to 3 decimals, ``inside`` as yes / **no**."""
    cols = ["arm", "class", "fp32", "int8", "int8 − fp32", "fp32 95 % interval", "inside?"]
    cols += ["paired diff. 95 % interval", "p"]
    rerun = "fp32_rerun" in table.columns
    if rerun:
        cols.append("fp32 rerun")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table.iter_rows(named=True):
        cells = [
            r["arm"],
            r["query_class"],
            f"{r['fp32']:.3f}",
            f"{r['int8']:.3f}",
            f"{r['diff']:+.3f}",
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
            "yes" if r["inside"] else "**no**",
            f"[{r['diff_low']:+.3f}, {r['diff_high']:+.3f}]",
            f"{r['p_value']:.3f}",
        ]
        if rerun:
            cells.append("—" if r["fp32_rerun"] is None else f"{r['fp32_rerun']:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentmem.bench.int8 quantize FP32 [OUT]`` or ``compare-int8 --root R --out D``.

    ``quantize`` derives the int8 graph of an fp32 export (:func:`quantize_onnx`; beside it
    when ``OUT`` is not given). ``compare-int8`` measures the ``onnx-int8`` backend against
    ``onnx`` on a finished reproduction (:func:`int8_comparison`)
    and prints its per-class nDCG@10 table.

    Returns:
        The exit status (0 on success).
    """
    import argparse
    import logging

    parser = argparse.ArgumentParser(
        prog="python -m agentmem.bench.int8",
        description="the sentence encoders: int8 graph, comparison",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quantize", help="derive the int8 graph of an fp32 export")
    q.add_argument("fp32", type=Path, help="the fp32 graph (export_onnx)")
    q.add_argument("out", type=Path, nargs="?", help="the int8 graph (default: beside fp32)")
    c = sub.add_parser("compare-int8", help="onnx-int8 against onnx on a finished reproduction")
    c.add_argument("--root", type=Path, default=Path("."), help="repository with results/")
    c.add_argument("--out", type=Path, required=True, help="output directory (created)")
    c.add_argument("--size", default="m", help="corpus size (default m)")
    c.add_argument("--arms", help="comma-separated arms (default: the vector arms)")
    c.add_argument(
        "--speed-texts", type=int, default=2000, help="texts timed (default 2000; 0: none)"
    )
    c.add_argument("--control", action="store_true", help="also rerun each arm on the fp32 vectors")
    args = parser.parse_args(argv)
    if args.command == "quantize":
        print(quantize_onnx(args.fp32, args.out))
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logging.getLogger("agentmem").setLevel(logging.INFO)  # the arms' progress, not pgserver's
    rec = int8_comparison(
        args.root,
        args.out,
        size=args.size,
        arms=args.arms.split(",") if args.arms else vector_arms(),
        speed_texts=args.speed_texts,
        control=args.control,
    )
    print(json.dumps({k: rec[k] for k in ("speed", "embed", "cosine")}, indent=1))
    print(Path(args.out, "int8_by_class.md").read_text())
    print(f"{rec['inside']} of {rec['rows']} (arm, class) rows inside the fp32 interval")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
