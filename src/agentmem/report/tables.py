"""Metric tables: per-query scores, the by-class table (CSV + Markdown), the capability grid.

Figures and tables read result files only (runs, metrics, builds), never engines.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.io import write_csv, write_parquet, write_text
from agentmem.metrics import (
    per_query,
    query_filters,
    searchable_counts,
    summarize,
    superseded_ids,
)

BY_CLASS_COLUMNS = [
    "arm",
    "query_class",
    "n_queries",
    "ndcg_at_10",
    "recall_at_10",
    "mrr",
    "precision_at_10",
    "stale_exposure",
    "exact_count_rate",
    "p50_ms",
    "p95_ms",
    "fill_at_10",
    "short_at_10",
]
#: the by-class columns a timed run gives; every other column but the keys and
#: ``n_queries`` is a quality column of the ranking
LATENCY_COLUMNS = ("p50_ms", "p95_ms")
#: the Markdown marker of a value computed from answers with fewer ids than slots
SHORT_MARK = "†"


def score_run(
    runs: pl.DataFrame,
    qrels: pl.DataFrame,
    queries: pl.DataFrame,
    k: int = 10,
    memories: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Score one arm's runs table (:data:`agentmem.runner.RUN_SCHEMA`) into per-query metrics.

    ``memories`` is the corpus's memories table: its ``superseded_by`` column gives the
    stale-exposure score, and the memories each query's predicate (and scope) admit give
    the slots of ``fill_at_10`` (:func:`agentmem.metrics.searchable_counts`; without it,
    ``stale_exposure`` is null and every query has ``k`` slots).

    Returns:
        One row per query (see :func:`agentmem.metrics.per_query`).
    """
    superseded = searchable = None
    if memories is not None:
        superseded = superseded_ids(memories)
        searchable = searchable_counts(memories, query_filters(queries))
    return per_query(runs, qrels, queries, k=k, superseded=superseded, searchable=searchable)


def score_run_file(
    runs: str | Path,
    queries: str | Path,
    qrels: str | Path,
    out: str | Path,
    k: int = 10,
    memories: str | Path | None = None,
) -> pl.DataFrame:
    """Score one arm's run (``results/runs/{size}/{arm}.parquet``) with :func:`score_run`.

    Reads the runs, queries, qrels and (when given) memories Parquet files; writes ``out``
    (Parquet, one row per query).
    """
    scores = score_run(
        pl.read_parquet(runs),
        pl.read_parquet(qrels),
        pl.read_parquet(queries),
        k=k,
        memories=None if memories is None else pl.read_parquet(memories),
    )
    write_parquet(out, scores)
    return scores


def by_class(metrics: dict[str, str | Path]) -> pl.DataFrame:
    """Long-form table: one row per (arm, query_class) plus ``all``, arms in given order.

    Args:
        metrics: arm name -> per-query score Parquet file.

    Returns:
        Columns :data:`BY_CLASS_COLUMNS`.
    """
    return pl.concat([by_class_frame(arm, pl.read_parquet(path)) for arm, path in metrics.items()])


def by_class_frame(arm: str, scores: pl.DataFrame) -> pl.DataFrame:
    """One arm's rows of the by-class table from its per-query scores.

    Args:
        arm: the arm's name (the ``arm`` column).
        scores: :func:`agentmem.metrics.per_query`'s table.

    Returns:
        Columns :data:`BY_CLASS_COLUMNS`, classes in the study's order, ``all`` last.
    """
    order = {c: i for i, c in enumerate((*QUERY_CLASSES, "all"))}
    s = summarize(scores).with_columns(arm=pl.lit(arm))
    s = s.with_columns(_o=pl.col("query_class").replace_strict(order, default=99))
    return s.sort("_o").drop("_o").select(BY_CLASS_COLUMNS)


def _fmt(v: object, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def markdown_table(df: pl.DataFrame, digits: int = 3) -> str:
    """Render a DataFrame as a GitHub Markdown table (floats to ``digits`` places)."""
    head = "| " + " | ".join(df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(_fmt(v, digits) for v in r) + " |" for r in df.iter_rows()]
    return "\n".join([head, sep, *rows]) + "\n"


def flag_short(table: pl.DataFrame, column: str, short: str, digits: int = 3) -> pl.DataFrame:
    """Mark the values of ``column`` computed from short answers, for Markdown.

    Returns:
        ``table`` with ``column`` as text (``digits`` places), :data:`SHORT_MARK` after
        each value whose row has ``short`` above 0 (some answer held fewer ids than
        slots: :func:`agentmem.metrics.fill_rate` below 1).
    """
    cells = [
        _fmt(v, digits) + (f" {SHORT_MARK}" if (s or 0) > 0 else "")
        for v, s in zip(table[column], table[short], strict=True)
    ]
    return table.with_columns(pl.Series(column, cells, dtype=pl.String))


def ndcg_grid(table: pl.DataFrame) -> pl.DataFrame:
    """Wide arm × class nDCG@10 grid (classes in study order, then ``all``)."""
    wide = table.pivot(on="query_class", index="arm", values="ndcg_at_10", maintain_order=True)
    cols = [c for c in (*QUERY_CLASSES, "all") if c in wide.columns]
    return wide.select("arm", *cols)


def timed_note(warmup: int = 1, repeats: int = 3, min_time_ms: float = 0.0, **_: object) -> str:
    """How the by-class latency columns were measured: the runner's timing rules (``run``).

    Takes the ``run`` section's fields (:class:`agentmem.config.run.RunConfig`; others,
    such as ``k``, are ignored) and says them in one clause of ``by_class.md``.
    """
    rule = f"the median of up to {repeats} timed calls after {warmup} untimed"
    if min_time_ms:
        rule += f", fewer once they add up to {min_time_ms:g} ms"
    return f"latency is {rule} (ms)"


def write_by_class(
    metrics: dict[str, str | Path],
    csv_out: str | Path,
    md_out: str | Path,
    latency_note: str,
) -> pl.DataFrame:
    """Write ``by_class.csv`` (long form) and ``by_class.md`` (overall + nDCG grid + long).

    ``latency_note`` says in the Markdown how the latency columns were measured
    (:func:`timed_note` of the run's ``run`` settings, for a timing run).
    """
    t = by_class(metrics)
    write_csv(csv_out, t)
    shown = flag_short(t, "precision_at_10", "short_at_10")
    overall = shown.filter(pl.col("query_class") == "all").drop("query_class")
    md = [
        "# Retrieval by arm and query class",
        "",
        "Binary relevance, k = 10; precision divides by the number returned; stale exposure "
        "is the share of the returned top 10 that is superseded, averaged over the queries "
        f"that returned something; {latency_note}. fill_at_10 is the mean over queries of "
        "min(returned, 10) / min(10, memories the query's predicate and scope admit), "
        f"short_at_10 the share of queries below 1; {SHORT_MARK} marks a precision computed "
        "over such short answers (its divisor shrinks with the answer). A text-only arm "
        "returns only the memories that match its terms, so its short answers are its "
        "answer; an arm that ranks by vector answers short where its search stops (pgvector's "
        "HNSW index scan yields at most hnsw.ef_search = 40 rows before the predicate: "
        "docs/arms/postgres.md).",
        "",
        "## Overall",
        "",
        markdown_table(overall),
        "## nDCG@10 by class",
        "",
        markdown_table(ndcg_grid(t)),
        "## Every metric by class",
        "",
        markdown_table(shown),
    ]
    write_text(md_out, "\n".join(md))
    return t


def capabilities(arms: list[str]) -> pl.DataFrame:
    """The capability grid (paper Table 2) from each arm's declared ``capabilities``."""
    from agentmem.arms import ARMS

    rows = []
    for name in arms:
        cls = ARMS[name]
        c = cls.capabilities
        rows.append(
            {
                "arm": name,
                "family": cls.family,
                "predicate": c.predicate,
                "join": c.join,
                "aggregate": c.aggregate,
                "vector_access": c.vector_access,
                "text_access": c.text_access,
                "transactions": c.transactions,
            }
        )
    return pl.DataFrame(rows)


def write_capabilities(arms: list[str], out: str | Path) -> pl.DataFrame:
    """Write ``capabilities.md`` (✓/✗ grid generated from the registry)."""
    df = capabilities(arms)
    shown = df.with_columns(
        [
            pl.when(pl.col(c)).then(pl.lit("✓")).otherwise(pl.lit("✗")).alias(c)
            for c in ("predicate", "join", "aggregate", "transactions")
        ]
    )
    text = (
        "# Capability grid\n\nGenerated from each arm's declared `capabilities` "
        "(agentmem.arms.ARMS).\n\n" + markdown_table(shown)
    )
    write_text(out, text)
    return df


def concat_csv(inputs: list[str | Path], out: str | Path) -> pl.DataFrame:
    """Concatenate CSV files with the same columns into ``out``."""
    df = pl.concat([pl.read_csv(p) for p in inputs], how="vertical_relaxed")
    write_csv(out, df)
    return df
