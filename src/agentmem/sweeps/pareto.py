"""Operating points: every arm over its declared knobs, quality against latency and storage.

Each arm declares its knobs (:attr:`~agentmem.arms.base.ArmBase.knobs`). The grid of an
arm is its configured parameters (the ``default`` point) and, one knob at a time, every
other value of that knob's grid (``ef_search=80``), the others at their configured values.
A point is one job: a query-time point reopens the store the headline run built, a
build-time point builds its own (in a scratch directory it removes); either times every
query as the headline runs do (``run.warmup`` untimed calls, the median of
``run.repeats``) and scores it with the headline's metrics. :func:`points_table` gathers
the points, :func:`frontier_table` marks the Pareto-optimal ones (higher nDCG@10 at lower
p50 latency or fewer bytes per memory), :func:`budget_table` names the best arm under each
latency budget. Method and reading: docs/OPERATING_POINTS.md.
"""

from __future__ import annotations

import inspect
import json
import math
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.arms import ARMS
from agentmem.arms.knobs import Knob
from agentmem.corpus.queries import QUERY_CLASSES

#: The id of the point at the configured parameters.
DEFAULT_POINT = "default"
#: The quality measure the frontiers and budgets rank by, and its per-class columns' stem.
QUALITY = "ndcg_at_10"
#: The cost axes of the frontiers.
COST_AXES = ("p50_ms", "bytes_per_memory")
#: The scopes of quality: every query, then each class.
SCOPES = ("all", *QUERY_CLASSES)
#: Per-point columns before the per-class ones.
POINT_COLUMNS = (
    "arm",
    "point",
    "knob",
    "stage",
    "params",
    "build_ms",
    "bytes_per_memory",
    "p50_ms",
    "p95_ms",
    "qps",
    "ndcg_at_10",
    "recall_at_10",
    "fill_at_10",
    "short_at_10",
)


@dataclass(frozen=True)
class Point:
    """One operating point of one arm.

    Attributes:
        arm: the arm's name.
        point: ``"default"`` or ``"<param>=<value>"`` (path-safe: its file name).
        knob: the varied parameter (``""`` for the default).
        stage: ``"query"`` (reuses the headline store) or ``"build"`` (builds its own).
        params: the constructor parameters: the configured ones with the knob's value.
    """

    arm: str
    point: str
    knob: str
    stage: str
    params: dict[str, Any]


def knob_defaults(arm: str, configured: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Each knob's value at the default point: configured, else the constructor's default.

    Raises:
        KeyError: unknown arm.
    """
    cls = ARMS[arm]
    sig = inspect.signature(cls)
    conf = dict(configured or {})
    return {
        k.param: conf.get(k.param, sig.parameters[k.param].default)
        for k in getattr(cls, "knobs", ())
    }


def point_name(param: str, value: Any) -> str:
    """The id of the point that sets ``param`` to ``value``: ``"ef_search=80"``.

    Text is written as is (``"tie_break=engine"``), other values as JSON (``2.0``, ``true``).
    """
    return f"{param}={value if isinstance(value, str) else json.dumps(value)}"


def grid_points(
    arm: str,
    configured: Mapping[str, Any] | None = None,
    grids: Mapping[str, Sequence[Any]] | None = None,
) -> list[Point]:
    """The operating points of ``arm``: the default, then each knob's other grid values.

    Args:
        arm: a registered arm name.
        configured: the arm's configured constructor parameters (``arm_params``).
        grids: knob -> values replacing that knob's declared grid.

    Returns:
        ``[default, knob1=v1, knob1=v2, ..., knob2=v1, ...]``; an arm without knobs has
        only the default.

    Raises:
        KeyError: unknown arm; ValueError: a grid names a parameter that is not a knob
            of the arm.
    """
    cls = ARMS[arm]
    knobs: tuple[Knob, ...] = getattr(cls, "knobs", ())
    grids = dict(grids or {})
    unknown = sorted(set(grids) - {k.param for k in knobs})
    if unknown:
        raise ValueError(
            f"pareto.grids.{arm}: {unknown} are not knobs of {arm} "
            f"(its knobs: {[k.param for k in knobs]})"
        )
    base = dict(configured or {})
    defaults = knob_defaults(arm, base)
    points = [Point(arm, DEFAULT_POINT, "", "query", base)]
    for knob in knobs:
        for value in grids.get(knob.param, knob.grid):
            if value == defaults[knob.param]:
                continue
            points.append(
                Point(
                    arm,
                    point_name(knob.param, value),
                    knob.param,
                    knob.stage,
                    {**base, knob.param: value},
                )
            )
    return points


def knobbed_arms(arm_names: Iterable[str]) -> list[str]:
    """The arms of ``arm_names`` that declare knobs, in the order given."""
    return [a for a in arm_names if getattr(ARMS.get(a), "knobs", ())]


def run_point(
    point: Point,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    store_dir: str | Path | None,
    build_record: Mapping[str, Any] | None,
    k: int = 10,
    warmup: int = 1,
    repeats: int = 3,
    scratch: str | Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Time and score every query of the corpus at one operating point.

    A query-time point opens ``store_dir`` with ``point.params``; its build time and
    storage are the headline build's (``build_record``, the run's build JSON). A
    build-time point builds a store in a temporary directory under ``scratch`` (removed
    afterwards) and measures its own.

    Returns:
        The point's record: :class:`Point`'s fields, ``build_ms``, ``bytes_per_memory``,
        ``queries``, ``throughput_qps`` (single thread: queries per second of the
        summed per-query median latencies) and ``by_class`` (the rows of
        :func:`agentmem.report.tables.by_class_frame`: nDCG@10, recall@10, p50/p95 ms,
        fill per class and ``all``).

    Raises:
        ``agentmem.arms.base.ArmError``: the store does not open or the engine fails;
        ValueError: a query-time point without ``store_dir``/``build_record``.
    """
    from tqdm import tqdm

    from agentmem.arms.factory import make_arm
    from agentmem.corpus.io import load_corpus, load_queries
    from agentmem.embeddings import load_embeddings
    from agentmem.report.tables import by_class_frame, score_run
    from agentmem.runner import RUN_SCHEMA, opened, run_rows, time_query

    corpus_dir = Path(corpus_dir)
    vectors = load_embeddings(embeddings_path)
    queries = load_queries(corpus_dir, vectors)
    rows: list[dict] = []
    medians: list[float] = []

    def ask(arm: Any) -> None:
        bar = tqdm(
            queries,
            desc=f"{point.arm} {point.point}",
            unit="q",
            disable=not progress,
            mininterval=2.0,
        )
        for q in bar:
            res, ms = time_query(arm, q, k, warmup, repeats)
            medians.append(ms)
            rows.extend(run_rows(q.query_id, res, ms, k))

    corpus = load_corpus(corpus_dir)
    n = corpus.memories.height
    if point.stage == "query":
        if store_dir is None or build_record is None:
            raise ValueError(f"{point.arm} {point.point}: a query-time point needs the store")
        with opened(point.arm, point.params, store_dir) as arm:
            ask(arm)
        build_ms = float(build_record["build_wall_ms"])
        bytes_per_memory = build_record.get("bytes_per_memory")
    else:
        root = Path(scratch) if scratch is not None else None
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{point.arm}-", dir=root))
        arm = make_arm(point.arm, point.params)
        try:
            t0 = time.perf_counter()
            arm.build(corpus, vectors, work / "store")
            build_ms = (time.perf_counter() - t0) * 1e3
            total = arm.storage().total_bytes
            bytes_per_memory = round(total / n, 1) if n else None
            ask(arm)
        finally:
            arm.close()
            shutil.rmtree(work, ignore_errors=True)
    scores = score_run(
        pl.DataFrame(rows, schema=RUN_SCHEMA),
        pl.read_parquet(corpus_dir / "qrels.parquet"),
        pl.read_parquet(corpus_dir / "queries.parquet"),
        k,
        corpus.memories,
    )
    total_s = sum(medians) / 1e3
    return {
        "arm": point.arm,
        "point": point.point,
        "knob": point.knob,
        "stage": point.stage,
        "params": point.params,
        "build_ms": round(build_ms, 3),
        "bytes_per_memory": bytes_per_memory,
        "queries": len(queries),
        "throughput_qps": round(len(medians) / total_s, 3) if total_s > 0 else None,
        "by_class": by_class_frame(point.arm, scores).to_dicts(),
    }


def points_table(records: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """One row per arm and point from the points' records (:func:`run_point`).

    Returns:
        :data:`POINT_COLUMNS` (quality, latency and fill over every query; ``params`` as
        JSON; ``qps`` single-thread queries per second), then ``ndcg_at_10_<class>`` and
        ``recall_at_10_<class>`` for each query class; sorted by arm then point order.
    """
    rows = []
    for r in records:
        by = {c["query_class"]: c for c in r["by_class"]}
        every = by.get("all", {})
        row = {
            "arm": r["arm"],
            "point": r["point"],
            "knob": r["knob"],
            "stage": r["stage"],
            "params": json.dumps(r["params"], sort_keys=True),
            "build_ms": r["build_ms"],
            "bytes_per_memory": r["bytes_per_memory"],
            "p50_ms": every.get("p50_ms"),
            "p95_ms": every.get("p95_ms"),
            "qps": r["throughput_qps"],
            "ndcg_at_10": every.get("ndcg_at_10"),
            "recall_at_10": every.get("recall_at_10"),
            "fill_at_10": every.get("fill_at_10"),
            "short_at_10": every.get("short_at_10"),
        }
        for c in QUERY_CLASSES:
            row[f"ndcg_at_10_{c}"] = by.get(c, {}).get("ndcg_at_10")
        for c in QUERY_CLASSES:
            row[f"recall_at_10_{c}"] = by.get(c, {}).get("recall_at_10")
        rows.append(row)
    schema: dict[str, Any] = {
        c: (pl.String if c in ("arm", "point", "knob", "stage", "params") else pl.Float64)
        for c in POINT_COLUMNS
    }
    schema.update({f"ndcg_at_10_{c}": pl.Float64 for c in QUERY_CLASSES})
    schema.update({f"recall_at_10_{c}": pl.Float64 for c in QUERY_CLASSES})
    return pl.DataFrame(rows, schema=schema, orient="row")


def quality_column(scope: str) -> str:
    """The nDCG@10 column of ``scope`` (``"all"`` or a query class) in :func:`points_table`."""
    return QUALITY if scope == "all" else f"{QUALITY}_{scope}"


def pareto_mask(quality: Sequence[float | None], cost: Sequence[float | None]) -> list[bool]:
    """Which points no other point dominates (at least as good on both, better on one).

    Higher quality and lower cost are better; a point missing either value is never on
    the frontier. Of points equal on both, the first is kept.

    Returns:
        One bool per point, in the order given.
    """
    idx = [
        i
        for i in range(len(quality))
        if quality[i] is not None
        and cost[i] is not None
        and not math.isnan(quality[i])  # type: ignore[arg-type]
        and not math.isnan(cost[i])  # type: ignore[arg-type]
    ]
    # cheapest first; at equal cost the better first, then the earlier
    idx.sort(key=lambda i: (cost[i], -quality[i], i))  # type: ignore[operator]
    keep = [False] * len(quality)
    best = -math.inf
    for i in idx:
        if quality[i] > best:  # type: ignore[operator]
            keep[i] = True
            best = quality[i]  # type: ignore[assignment]
    return keep


def frontier_table(points: pl.DataFrame) -> pl.DataFrame:
    """The Pareto-optimal points, across every arm and within each arm.

    For each scope (``all``, then each class), each cost axis of :data:`COST_AXES` and
    each ``among`` (``"all arms"``, then each arm alone), the points no other point of
    that set dominates on (nDCG@10 of the scope, cost), cheapest first.

    Returns:
        Columns ``among``, ``scope``, ``cost``, ``arm``, ``point``, ``params``,
        ``cost_value``, ``ndcg_at_10``.
    """
    out = []
    groups = [("all arms", points)] + [
        (arm, points.filter(pl.col("arm") == arm))
        for arm in points["arm"].unique(maintain_order=True).to_list()
    ]
    for among, g in groups:
        for scope in SCOPES:
            qcol = quality_column(scope)
            for cost in COST_AXES:
                keep = pareto_mask(g[qcol].to_list(), g[cost].to_list())
                front = g.filter(pl.Series(keep)).sort(cost)
                out.extend(
                    {
                        "among": among,
                        "scope": scope,
                        "cost": cost,
                        "arm": r["arm"],
                        "point": r["point"],
                        "params": r["params"],
                        "cost_value": r[cost],
                        "ndcg_at_10": r[qcol],
                    }
                    for r in front.iter_rows(named=True)
                )
    schema = {
        "among": pl.String,
        "scope": pl.String,
        "cost": pl.String,
        "arm": pl.String,
        "point": pl.String,
        "params": pl.String,
        "cost_value": pl.Float64,
        "ndcg_at_10": pl.Float64,
    }
    return pl.DataFrame(out, schema=schema, orient="row")


def budget_table(points: pl.DataFrame, budgets_ms: Sequence[float]) -> pl.DataFrame:
    """The best arm and point under each p50 latency budget, overall and per class.

    Returns:
        Columns ``budget_ms``, ``scope``, ``arm``, ``point``, ``ndcg_at_10``, ``p50_ms``:
        the point with the highest nDCG@10 of the scope among those with ``p50_ms <=
        budget`` (ties: the faster); null arm when no point is that fast.
    """
    rows = []
    for budget in budgets_ms:
        fast = points.filter(pl.col("p50_ms") <= budget)
        for scope in SCOPES:
            qcol = quality_column(scope)
            best = fast.filter(pl.col(qcol).is_not_null()).sort(
                [qcol, "p50_ms"], descending=[True, False]
            )
            r = best.row(0, named=True) if best.height else None
            rows.append(
                {
                    "budget_ms": float(budget),
                    "scope": scope,
                    "arm": r["arm"] if r else None,
                    "point": r["point"] if r else None,
                    "ndcg_at_10": r[qcol] if r else None,
                    "p50_ms": r["p50_ms"] if r else None,
                }
            )
    schema = {
        "budget_ms": pl.Float64,
        "scope": pl.String,
        "arm": pl.String,
        "point": pl.String,
        "ndcg_at_10": pl.Float64,
        "p50_ms": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def best_points(points: pl.DataFrame) -> pl.DataFrame:
    """Each arm's default beside its best point (highest overall nDCG@10; ties: faster).

    Returns:
        Columns ``arm``, ``default_ndcg``, ``default_p50_ms``, ``best_point``,
        ``best_ndcg``, ``best_p50_ms``, ``gain`` (best minus default nDCG@10), one row per
        arm in table order.
    """
    rows = []
    for arm in points["arm"].unique(maintain_order=True).to_list():
        g = points.filter(pl.col("arm") == arm)
        d = g.filter(pl.col("point") == DEFAULT_POINT)
        b = g.filter(pl.col(QUALITY).is_not_null()).sort(
            [QUALITY, "p50_ms"], descending=[True, False]
        )
        if d.height == 0 or b.height == 0:
            continue
        d0, b0 = d.row(0, named=True), b.row(0, named=True)
        rows.append(
            {
                "arm": arm,
                "default_ndcg": d0[QUALITY],
                "default_p50_ms": d0["p50_ms"],
                "best_point": b0["point"],
                "best_ndcg": b0[QUALITY],
                "best_p50_ms": b0["p50_ms"],
                "gain": (b0[QUALITY] or 0.0) - (d0[QUALITY] or 0.0),
            }
        )
    schema = {
        "arm": pl.String,
        "default_ndcg": pl.Float64,
        "default_p50_ms": pl.Float64,
        "best_point": pl.String,
        "best_ndcg": pl.Float64,
        "best_p50_ms": pl.Float64,
        "gain": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def best_by_class(records: Iterable[Mapping[str, Any]], best: pl.DataFrame) -> pl.DataFrame:
    """The by-class rows of each arm's best point (:func:`best_points`), from the records."""
    want = dict(zip(best["arm"], best["best_point"], strict=True))
    rows = [row for r in records if want.get(r["arm"]) == r["point"] for row in r["by_class"]]
    from agentmem.report.tables import BY_CLASS_COLUMNS

    if not rows:
        return pl.DataFrame(schema={c: pl.Float64 for c in BY_CLASS_COLUMNS}).with_columns(
            pl.col("arm", "query_class").cast(pl.String)
        )
    return pl.DataFrame(rows, infer_schema_length=None).select(BY_CLASS_COLUMNS)


def findings_at_best(
    results_dir: str | Path, main_size: str, overlay: pl.DataFrame
) -> pl.DataFrame:
    """Every finding on the headline run, with each arm as configured and at its best point.

    Args:
        results_dir: the headline ``results`` directory.
        main_size: its main size.
        overlay: :func:`best_by_class`'s rows (quality laid over ``by_class.csv``).

    Returns:
        Columns ``finding``, ``claim``, ``default_value``, ``default_verdict``,
        ``best_value``, ``best_verdict``, ``changed`` (the verdicts differ).
    """
    from agentmem.report.headline import ALL_FINDINGS
    from agentmem.report.reference.ours import OurResults

    shipped = OurResults(results_dir, main_size)
    best = OurResults(results_dir, main_size, overlay=overlay)
    rows = []
    for f in ALL_FINDINGS:
        d_val, b_val = f.stat(shipped.get), f.stat(best.get)
        d_ver, b_ver = f.verdict(shipped.get), f.verdict(best.get)
        rows.append(
            {
                "finding": f.number,
                "claim": f.claim,
                "default_value": d_val,
                "default_verdict": d_ver,
                "best_value": b_val,
                "best_verdict": b_ver,
                "changed": d_ver != b_ver,
            }
        )
    schema = {
        "finding": pl.Int64,
        "claim": pl.String,
        "default_value": pl.Float64,
        "default_verdict": pl.String,
        "best_value": pl.Float64,
        "best_verdict": pl.String,
        "changed": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def pareto_markdown(
    points: pl.DataFrame,
    best: pl.DataFrame,
    budgets: pl.DataFrame,
    findings: pl.DataFrame,
) -> str:
    """The report section "Operating points": defaults beside bests, budgets, findings."""
    arms = points["arm"].n_unique()
    lines = [
        "# Operating points",
        "",
        f"{points.height} operating points over {arms} arms: each arm at its configured "
        "parameters (`default`) and, one knob at a time, at the other values of that "
        "knob's grid; every point timed as the headline runs and scored with their "
        "metrics (docs/OPERATING_POINTS.md). `results/pareto/points.csv` holds every "
        "point, `results/pareto/frontier.csv` the Pareto-optimal ones.",
        "",
        "## Each arm's default beside its best point",
        "",
        "| arm | default nDCG@10 | default p50 ms | best point | best nDCG@10 | best p50 ms "
        "| gain |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in best.iter_rows(named=True):
        lines.append(
            f"| {r['arm']} | {_fmt(r['default_ndcg'])} | {_fmt(r['default_p50_ms'], 2)} | "
            f"`{r['best_point']}` | {_fmt(r['best_ndcg'])} | {_fmt(r['best_p50_ms'], 2)} | "
            f"{r['gain']:+.3f} |"
        )
    lines += [
        "",
        "## The best arm under each latency budget",
        "",
        "The point with the highest nDCG@10 among those whose p50 latency is within the "
        "budget, over every query and per class.",
        "",
    ]
    scopes = list(dict.fromkeys(budgets["scope"].to_list()))
    head = ["p50 ≤", *scopes]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for budget in dict.fromkeys(budgets["budget_ms"].to_list()):
        cells = []
        for scope in scopes:
            r = budgets.filter((pl.col("budget_ms") == budget) & (pl.col("scope") == scope)).row(
                0, named=True
            )
            cells.append(
                "none" if r["arm"] is None else f"{r['arm']} `{r['point']}` {r['ndcg_at_10']:.3f}"
            )
        lines.append(f"| {budget:g} ms | " + " | ".join(cells) + " |")
    changed = findings.filter(pl.col("changed"))
    lines += [
        "",
        "## The study's findings with every arm at its best point",
        "",
        "Each finding on the headline corpus with every arm as configured and with every "
        "arm at its best point (its quality numbers; the latency stays the headline run's).",
        "",
    ]
    if changed.height == 0:
        lines.append("No finding changes verdict.")
    else:
        lines += [
            "| # | claim | configured | at best points |",
            "|---|---|---|---|",
        ]
        for r in changed.iter_rows(named=True):
            lines.append(
                f"| {r['finding']} | {r['claim']} | {_fmt(r['default_value'])} "
                f"{r['default_verdict']} | {_fmt(r['best_value'])} {r['best_verdict']} |"
            )
    same = findings.filter(~pl.col("changed"))["finding"].to_list()
    if same:
        lines += ["", "Unchanged: " + ", ".join(str(n) for n in same) + "."]
    return "\n".join(lines) + "\n"


def point_job(input: Any, output: Any, params: Any) -> None:
    """Workflow entry: one operating point -> ``output.point`` (JSON of :func:`run_point`).

    ``params``: ``arm``, ``point`` (its id), ``setting`` (the point's ``knob``, ``stage``
    and constructor ``params``), ``k``, ``warmup``, ``repeats``, ``scratch``; ``input``:
    the corpus files, ``embeddings``, and for a query-time point ``store`` and ``build``.
    """
    from agentmem.io import write_json
    from agentmem.jobs import CORPUS_TABLES, corpus_dir

    setting = params.setting
    point = Point(
        params.arm, params.point, setting["knob"], setting["stage"], dict(setting["params"])
    )
    query_stage = point.stage == "query"
    record = run_point(
        point,
        corpus_dir(input, *CORPUS_TABLES, "queries", "qrels"),
        input.embeddings,
        input.store if query_stage else None,
        json.loads(Path(input.build).read_text()) if query_stage else None,
        k=params.k,
        warmup=params.warmup,
        repeats=params.repeats,
        scratch=params.scratch,
    )
    write_json(output.point, record)


def tabulate_job(input: Any, output: Any, params: Any) -> None:
    """Workflow entry: the points' JSON -> points.csv, frontier.csv, budgets, pareto.md.

    ``params``: ``budgets_ms``, ``results_dir``, ``main_size``; ``input.points``: every
    point's JSON; ``output``: ``points``, ``frontier``, ``budgets``, ``findings``, ``md``.
    """
    from agentmem.io import write_csv, write_text

    records = [json.loads(Path(p).read_text()) for p in input.points]
    points = points_table(records)
    best = best_points(points)
    budgets = budget_table(points, params.budgets_ms)
    findings = findings_at_best(params.results_dir, params.main_size, best_by_class(records, best))
    write_csv(output.points, points)
    write_csv(output.frontier, frontier_table(points))
    write_csv(output.budgets, budgets)
    write_csv(output.findings, findings)
    write_text(output.md, pareto_markdown(points, best, budgets, findings))
