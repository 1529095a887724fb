"""Uncertainty of the headline metrics: bootstrap CIs, paired differences, seed spread.

Every interval here is a *percentile bootstrap over queries* (Efron & Tibshirani 1993,
*An Introduction to the Bootstrap*, ch. 13): the queries of a group are resampled with
replacement ``n_boot`` times, the statistic (a mean) is recomputed on each resample, and
the 2.5 % and 97.5 % quantiles of those means bound the 95 % interval. Corpus, embeddings
and arms are held fixed, so the intervals describe sampling of *questions*, not of
corpora; :func:`seed_spread` covers the latter when several corpus seeds were run.

Random streams are seeded per group from ``(seed, arm, class)`` (names hashed with CRC-32),
so a group's interval does not depend on which other arms or classes are in the table.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats as sps

from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.io import write_csv
from agentmem.metrics import METRICS

CI_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String,
    "query_class": pl.String,
    "metric": pl.String,
    "mean": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n": pl.Int64,
}
"""Columns of :func:`bootstrap_table` (``results/tables/bootstrap_ci.csv``)."""

PAIRED_SCHEMA: dict[str, pl.DataType] = {
    "arm_a": pl.String,
    "arm_b": pl.String,
    "query_class": pl.String,
    "metric": pl.String,
    "mean_diff": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p_value": pl.Float64,
    "n": pl.Int64,
}
"""Columns of :func:`paired_bootstrap` (``results/tables/paired_bootstrap.csv``)."""

SPREAD_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String,
    "query_class": pl.String,
    "n_seeds": pl.Int64,
    "ndcg_mean": pl.Float64,
    "ndcg_min": pl.Float64,
    "ndcg_max": pl.Float64,
    "ndcg_std": pl.Float64,
    "ndcg_ci_low": pl.Float64,
    "ndcg_ci_high": pl.Float64,
}
"""Columns of :func:`seed_spread`."""


def _rng(seed: int, *names: str) -> np.random.Generator:
    """A generator seeded from ``seed`` and the CRC-32 of each name (order-independent tables)."""
    return np.random.default_rng([seed, *(zlib.crc32(n.encode()) for n in names)])


def _boot_means(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of the rows of ``x``.

    Args:
        x: ``(n,)`` or ``(n, m)`` values; resampling draws whole rows.
        n_boot: number of resamples.
        rng: random stream.

    Returns:
        ``(n_boot,)`` or ``(n_boot, m)`` resample means.
    """
    idx = rng.integers(0, x.shape[0], size=(n_boot, x.shape[0]))
    return x[idx].mean(axis=1)


def _class_order(classes: Iterable[str]) -> list[str]:
    """Study order of the classes present (unknown classes after, alphabetically)."""
    present = set(classes)
    known = [c for c in QUERY_CLASSES if c in present]
    return known + sorted(present - set(known))


def _check(n_boot: int, alpha: float) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def bootstrap_table(
    metrics: Mapping[str, str | Path | pl.DataFrame],
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Percentile-bootstrap CIs of every headline metric, per arm and per query class.

    For each arm and each group (every query class present, then ``"all"``), the group's
    queries are resampled with replacement ``n_boot`` times; the interval is the
    ``alpha/2`` and ``1 − alpha/2`` quantiles of the resample means (Efron & Tibshirani
    1993). The four metrics share the same resamples.

    Args:
        metrics: arm name -> per-query scores (``results/metrics/{size}/{arm}.parquet``
            or the frame itself) with ``query_id, query_class`` and :data:`METRICS`.
        n_boot: resamples per group.
        seed: base seed (see the module docstring).
        alpha: 1 − confidence level (0.05 gives 95 % intervals).

    Returns:
        Columns :data:`CI_SCHEMA`: one row per (arm, query_class, metric); arms in the
        given order, classes in study order then ``all``, metrics in :data:`METRICS`
        order. ``mean`` is the plain mean of the group; ``n`` its number of queries.

    Raises:
        ValueError: for ``n_boot < 1``, ``alpha`` outside (0, 1), or a score table that
            lacks a metric column.
    """
    _check(n_boot, alpha)
    rows = []
    for arm, src in metrics.items():
        df = src if isinstance(src, pl.DataFrame) else pl.read_parquet(src)
        missing = [c for c in ("query_class", *METRICS) if c not in df.columns]
        if missing:
            raise ValueError(f"scores of arm {arm!r} lack columns {missing}")
        for cls in [*_class_order(df["query_class"].to_list()), "all"]:
            g = df if cls == "all" else df.filter(pl.col("query_class") == cls)
            x = g.select(METRICS).to_numpy().astype(float)
            means = _boot_means(x, n_boot, _rng(seed, arm, cls))
            lo = np.quantile(means, alpha / 2, axis=0)
            hi = np.quantile(means, 1 - alpha / 2, axis=0)
            for j, m in enumerate(METRICS):
                rows.append(
                    {
                        "arm": arm,
                        "query_class": cls,
                        "metric": m,
                        "mean": float(x[:, j].mean()),
                        "ci_low": float(lo[j]),
                        "ci_high": float(hi[j]),
                        "n": int(x.shape[0]),
                    }
                )
    return pl.DataFrame(rows, schema=CI_SCHEMA)


def paired_bootstrap(
    metrics: Mapping[str, str | Path | pl.DataFrame],
    pairs: Sequence[Sequence[str]],
    metric: str = "ndcg_at_10",
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Paired bootstrap of the difference between two arms, overall and per class.

    The two arms' scores are paired by ``query_id`` (same question, same qrels), giving
    per-query differences ``d_q = a_q − b_q``; the queries (pairs) are resampled with
    replacement ``n_boot`` times and the interval is the percentile interval of the
    resample means of ``d`` (Efron & Tibshirani 1993, §16.4 for the paired design).

    ``p_value`` is the two-sided bootstrap p-value ``min(1, 2·min(P*(d̄* ≤ 0),
    P*(d̄* ≥ 0)))``, where ``P*`` is the share of resample means: twice the share of
    bootstrap differences on the other side of 0 from the observed one. Its resolution is
    ``1 / n_boot``; a value of 0 means "below ``1 / n_boot``". A constant difference
    ``c ≠ 0`` gives a zero-width interval at ``c`` and ``p = 0``; all-zero differences
    give ``p = 1``.

    Args:
        metrics: arm name -> per-query scores (Parquet path or frame).
        pairs: ``(arm_a, arm_b)`` pairs (the config's ``report.paired_tests``).
        metric: the score column compared (one of :data:`METRICS`).
        n_boot: resamples per group.
        seed: base seed (streams per ``(arm_a, arm_b, class)``).
        alpha: 1 − confidence level.

    Returns:
        Columns :data:`PAIRED_SCHEMA`: one row per (pair, query_class), classes ``all``
        first, then study order; ``n`` = number of paired queries in the group.

    Raises:
        KeyError: when a pair names an arm not in ``metrics``.
        ValueError: for a bad ``metric``/``n_boot``/``alpha``, or two arms with no query
            in common.
    """
    _check(n_boot, alpha)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    pairs = [tuple(p) for p in pairs]
    frames: dict[str, pl.DataFrame] = {}

    def load(arm: str) -> pl.DataFrame:
        if arm not in metrics:
            raise KeyError(f"arm {arm!r} of a pair has no scores (have {sorted(metrics)})")
        if arm not in frames:
            src = metrics[arm]
            df = src if isinstance(src, pl.DataFrame) else pl.read_parquet(src)
            frames[arm] = df.select("query_id", "query_class", metric)
        return frames[arm]

    rows = []
    for a, b in pairs:
        j = load(a).join(
            load(b).select("query_id", pl.col(metric).alias("_b")), on="query_id", how="inner"
        )
        if j.height == 0:
            raise ValueError(f"arms {a!r} and {b!r} have no query in common")
        j = j.with_columns(d=pl.col(metric) - pl.col("_b"))
        for cls in ["all", *_class_order(j["query_class"].to_list())]:
            g = j if cls == "all" else j.filter(pl.col("query_class") == cls)
            d = g["d"].to_numpy().astype(float)
            means = _boot_means(d, n_boot, _rng(seed, a, b, cls))
            p = min(1.0, 2.0 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0))))
            rows.append(
                {
                    "arm_a": a,
                    "arm_b": b,
                    "query_class": cls,
                    "metric": metric,
                    "mean_diff": float(d.mean()),
                    "ci_low": float(np.quantile(means, alpha / 2)),
                    "ci_high": float(np.quantile(means, 1 - alpha / 2)),
                    "p_value": p,
                    "n": int(d.size),
                }
            )
    return pl.DataFrame(rows, schema=PAIRED_SCHEMA)


def seed_spread(by_class_csvs: Mapping[int | str, str | Path | pl.DataFrame]) -> pl.DataFrame:
    """Spread of nDCG@10 across corpus seeds, per arm and query class.

    Args:
        by_class_csvs: corpus seed -> that seed's ``by_class.csv`` (columns ``arm``,
            ``query_class``, ``ndcg_at_10``; see :func:`agentmem.report.tables.by_class`).

    Returns:
        Columns :data:`SPREAD_SCHEMA`, one row per (arm, query_class) in first-seen order:
        mean, min, max and sample standard deviation (``ddof = 1``; null with a single
        seed) of nDCG@10 over the seeds that have the row, and the 95 % Student-t interval
        of the mean (:func:`seed_interval`; null with a single seed); ``n_seeds`` counts them.

    Raises:
        ValueError: when ``by_class_csvs`` is empty.
    """
    if not by_class_csvs:
        raise ValueError("seed_spread needs at least one by_class table")
    frames = []
    for s, src in by_class_csvs.items():
        df = src if isinstance(src, pl.DataFrame) else pl.read_csv(src)
        frames.append(
            df.select("arm", "query_class", pl.col("ndcg_at_10").cast(pl.Float64)).with_columns(
                seed=pl.lit(str(s))
            )
        )
    long = pl.concat(frames)
    out = long.group_by("arm", "query_class", maintain_order=True).agg(
        n_seeds=pl.len().cast(pl.Int64),
        ndcg_mean=pl.col("ndcg_at_10").mean(),
        ndcg_min=pl.col("ndcg_at_10").min(),
        ndcg_max=pl.col("ndcg_at_10").max(),
        ndcg_std=pl.col("ndcg_at_10").std(ddof=1),
    )
    out = out.with_columns(
        ndcg_std=pl.when(pl.col("n_seeds") > 1).then(pl.col("ndcg_std")).otherwise(None)
    )
    values = long.group_by("arm", "query_class", maintain_order=True).agg(pl.col("ndcg_at_10"))
    ci = [seed_interval(v) for v in values["ndcg_at_10"].to_list()]
    out = out.with_columns(
        ndcg_ci_low=pl.Series([c[0] if c else None for c in ci], dtype=pl.Float64),
        ndcg_ci_high=pl.Series([c[1] if c else None for c in ci], dtype=pl.Float64),
    )
    return out.select(list(SPREAD_SCHEMA)).cast(SPREAD_SCHEMA)


def seed_interval(
    values: Sequence[float | None], level: float = 0.95
) -> tuple[float, float] | None:
    """Student-t interval of the mean of ``values`` (one per corpus seed; None, NaN skipped).

    ``mean ± t_{(1+level)/2, n-1} · s / √n``, ``s`` the sample standard deviation
    (``scipy.stats.t.interval``; Student 1908). None for fewer than two values; equal values
    give a zero-width interval.
    """
    vals = [float(x) for x in values if x is not None and not math.isnan(x)]
    if len(vals) < 2:
        return None
    mean = sum(vals) / len(vals)
    sd = math.sqrt(sum((x - mean) ** 2 for x in vals) / (len(vals) - 1))
    if sd == 0:
        return (mean, mean)
    lo, hi = sps.t.interval(level, len(vals) - 1, loc=mean, scale=sd / math.sqrt(len(vals)))
    return (float(lo), float(hi))


def write_bootstrap(
    metrics: Mapping[str, str | Path],
    ci_out: str | Path,
    paired_out: str | Path,
    pairs: Sequence[Sequence[str]] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Write ``bootstrap_ci.csv`` (:func:`bootstrap_table`) and ``paired_bootstrap.csv``.

    The paired table covers nDCG@10 for ``pairs`` (the config's ``report.paired_tests``),
    keeping only pairs whose two arms have scores; None or empty gives a table with the
    columns of :data:`PAIRED_SCHEMA` and no rows.

    Returns:
        ``(ci_table, paired_table)`` as written.
    """
    ci = bootstrap_table(metrics, n_boot=n_boot, seed=seed)
    wanted = [(a, b) for a, b in (pairs or []) if a in metrics and b in metrics]
    paired = paired_bootstrap(metrics, wanted, n_boot=n_boot, seed=seed)
    write_csv(ci_out, ci)
    write_csv(paired_out, paired)
    return ci, paired


def ci_contains(low: float | None, high: float | None, value: float) -> bool:
    """True when ``low <= value <= high`` (False if either bound is missing or NaN)."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return False
    return low <= value <= high
