"""The choices sweep: the arms under the study's implementation choices, on one corpus.

For each configuration of :data:`agentmem.choices.CONFIGURATIONS` asked for (the study's
choices together, or one alone), every arm that declares overrides for it
(:attr:`agentmem.arms.base.ArmBase.study_choices`) is reopened on the store the pipeline
built, with its configured parameters and the overrides on top; every query is asked once
(one untimed pass through the arm's batch search) and scored with the metrics of
``by_class.csv``. Arms without overrides are the
arms as shipped under every configuration and get no rows.

:func:`overlay_choices` turns the table of the arms as shipped and this sweep's rows into
the by-class table of a configuration: the quality columns of the rerun arms replaced,
their latency kept (a configuration changes the ranking, the timed runs stay those of the
arms as shipped). The findings and the study's cell table read it
(:class:`agentmem.report.reference.OurResults`, docs/arms/choices.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.choices import AS_SHIPPED, choice_overrides, configuration_choices
from agentmem.report.tables import BY_CLASS_COLUMNS, LATENCY_COLUMNS

#: Columns of ``by_class.csv`` a configuration changes (the rest are keys, the query count
#: and the timed runs' latency).
QUALITY_COLUMNS = tuple(
    c for c in BY_CLASS_COLUMNS if c not in ("arm", "query_class", "n_queries", *LATENCY_COLUMNS)
)


def choices_sweep(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    stores: Mapping[str, str | Path],
    configurations: Sequence[str],
    k: int = 10,
    arm_params: Mapping[str, Mapping[str, Any] | None] | None = None,
    progress: bool = True,
) -> pl.DataFrame:
    """Score each arm of ``stores`` under each configuration that changes it.

    Args:
        corpus_dir: corpus directory (memories, queries and qrels Parquet files).
        embeddings_path: the corpus's embeddings Parquet (query vectors).
        stores: ``{arm name: store directory built by the pipeline}``.
        configurations: names of :data:`agentmem.choices.CONFIGURATIONS`
            (``as-shipped`` is skipped: those are the pipeline's own runs).
        k: result length and metric cut-off (the columns are named for 10).
        arm_params: arm name -> configured constructor parameters.
        progress: show a tqdm bar per arm and configuration.

    Returns:
        ``choices`` then the columns of :data:`agentmem.report.tables.BY_CLASS_COLUMNS`: a
        row per configuration × arm × class (``all`` last). ``p50_ms`` / ``p95_ms`` are
        null: an untimed pass has no latency (:func:`overlay_choices` keeps the timed runs').

    Raises:
        ValueError: an unknown configuration; ``agentmem.arms.base.ArmError``: a store
            does not open.
    """
    # here, not at the top: the workflow's DAG imports agentmem.choices, not this module
    from agentmem.arms import ARMS
    from agentmem.corpus.io import load_queries
    from agentmem.embeddings import load_embeddings
    from agentmem.report.tables import by_class_frame, score_run
    from agentmem.runner import RUN_SCHEMA, batch_pass, opened, run_rows

    for c in configurations:
        configuration_choices(c)
    corpus = Path(corpus_dir)
    vectors = load_embeddings(embeddings_path)
    queries = load_queries(corpus, vectors)
    qs = pl.read_parquet(corpus / "queries.parquet")
    qrels = pl.read_parquet(corpus / "qrels.parquet")
    mem = pl.read_parquet(corpus / "memories.parquet")
    frames = []
    for configuration in configurations:
        if configuration == AS_SHIPPED:
            continue
        for name, store in stores.items():
            overrides = choice_overrides(getattr(ARMS[name], "study_choices", {}), configuration)
            if not overrides:
                continue
            params = {**dict((arm_params or {}).get(name) or {}), **overrides}
            rows: list[dict] = []
            with opened(name, params, store) as arm:
                label = f"{name}: {configuration}"
                for q, res in batch_pass(arm, queries, k, label, progress):
                    rows.extend(run_rows(q.query_id, res, None, k))
            scores = score_run(pl.DataFrame(rows, schema=RUN_SCHEMA), qrels, qs, k, mem)
            frames.append(by_class_frame(name, scores).with_columns(choices=pl.lit(configuration)))
    columns = ["choices", *BY_CLASS_COLUMNS]
    if not frames:
        return pl.DataFrame(schema={c: pl.Float64 for c in columns}).with_columns(
            pl.col("choices", "arm", "query_class").cast(pl.String),
            pl.col("n_queries").cast(pl.Int64),
        )
    return pl.concat(frames, how="vertical_relaxed").select(columns)


def overlay_choices(
    by_class: pl.DataFrame, sweep: pl.DataFrame | None, configuration: str
) -> pl.DataFrame:
    """The by-class table of ``configuration``: the sweep's quality over the arms as shipped.

    Args:
        by_class: the arms as shipped (``by_class.csv``'s columns).
        sweep: :func:`choices_sweep`'s table (None or empty: nothing was rerun).
        configuration: a configuration name; ``as-shipped`` returns ``by_class`` itself.

    Returns:
        ``by_class`` with the :data:`QUALITY_COLUMNS` of every (arm, class) the sweep holds
        for ``configuration`` replaced by the sweep's; rows, order and the other columns
        unchanged.
    """
    if configuration == AS_SHIPPED or sweep is None or sweep.height == 0:
        return by_class
    rows = sweep.filter(pl.col("choices") == configuration)
    cols = [c for c in QUALITY_COLUMNS if c in by_class.columns and c in rows.columns]
    if rows.height == 0 or not cols:
        return by_class
    new = rows.select(
        "arm",
        "query_class",
        pl.lit(True).alias("_hit"),
        *[pl.col(c).cast(by_class.schema[c]).alias(f"_new_{c}") for c in cols],
    )
    out = by_class.join(new, on=["arm", "query_class"], how="left", maintain_order="left")
    # an (arm, class) the sweep ran takes all its quality values, nulls included
    hit = pl.col("_hit").fill_null(False)
    return out.with_columns(
        [pl.when(hit).then(pl.col(f"_new_{c}")).otherwise(pl.col(c)).alias(c) for c in cols]
    ).select(by_class.columns)
