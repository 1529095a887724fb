"""A dataset in the "agentmem-memory" format as a corpus directory every arm reads unchanged.

Which field becomes which column: ``docs/DATASETS.md`` ("The prepared corpus").
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.external.format import DATASET_FILES, FORMAT, FORMAT_VERSION, validate_dataset
from agentmem.io import write_csv, write_json, write_parquet
from agentmem.tokens import count_tokens
from agentmem.types import ENTITY_SCHEMA, FACT_SCHEMA, MEMORY_SCHEMA, QRELS_SCHEMA, QUERY_SCHEMA

#: the files of a prepared corpus directory, by logical name
PREPARED_FILES = {
    "memories": "memories.parquet",
    "sessions": "sessions.parquet",
    "agents": "agents.parquet",
    "facts": "facts.parquet",
    "entities": "entities.parquet",
    "queries": "queries.parquet",
    "qrels": "qrels.parquet",
    "qrels_group": "qrels_group.parquet",
    "evidence": "evidence.parquet",
    "query_evidence": "query_evidence.parquet",
    "issues": "issues.csv",
    "manifest": "manifest.json",
}
#: queries.parquet: the synthetic corpus's query columns plus the query's scope
SCOPED_QUERY_SCHEMA = {**QUERY_SCHEMA, "scope_id": pl.String}
SESSION_SCHEMA = {
    "session_id": pl.String,
    "agent_id": pl.String,
    "start_day": pl.Int32,
    "end_day": pl.Int32,
    "memories": pl.Int32,
    "scope_id": pl.String,
}
AGENT_SCHEMA = {"agent_id": pl.String, "role": pl.String}
QRELS_GROUP_SCHEMA = {"query_id": pl.String, "session_id": pl.String}
EVIDENCE_SCHEMA = {"memory_id": pl.String, "evidence_id": pl.String}
QUERY_EVIDENCE_SCHEMA = {"query_id": pl.String, "evidence_id": pl.String}
ISSUE_SCHEMA = {
    "file": pl.String,
    "line": pl.Int64,
    "kind": pl.String,
    "id": pl.String,
    "detail": pl.String,
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prepare_dataset(path: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Validate a dataset and write it as a corpus directory (:data:`PREPARED_FILES`).

    ``memories.parquet`` has :data:`agentmem.types.MEMORY_SCHEMA`: memory_id = ``_id``,
    session_id = ``session``, turn_no = ``turn``, seq = 0-based rank by (day, session,
    turn, line), body = ``text``, created_day = ``day``, scope_id = ``scope``, form = the
    dataset's ``unit`` (default ``"memory"``), tokens in o200k_base, confidence 1.0, fact_id
    and superseded_by null, entity_ids ``[]``; rows in seq order. ``qrels.parquet`` keeps
    the rows with score > 0 (grade = score); score-0 rows are counted in the manifest only.

    Args:
        path: the dataset directory ("agentmem-memory" format, ``docs/DATASETS.md``).
        out_dir: the corpus directory to write (created).

    Returns:
        The manifest, also written to ``manifest.json``: format, format_version, dataset,
        unit, categories (present, in order), counts (memories, sessions, scopes, queries,
        queries_by_category, queries_skipped, qrels, qrels_score_0, qrels_group, evidence,
        query_evidence, tokens, days_span), issues (count by kind), source (path, the
        dataset.json fields description/license/source, sha256 of each dataset file),
        files (sha256 of each written table).

    Raises:
        DatasetError: the dataset has a structural error (nothing is written).
    """
    ds = validate_dataset(path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    form = str(ds.meta.get("unit") or "memory")

    mems = sorted(ds.memories, key=lambda m: (m["day"], m["session"], m["turn"], m["line"]))
    bodies = [m["text"] for m in mems]
    n = len(mems)
    memories = pl.DataFrame(
        {
            "memory_id": [m["_id"] for m in mems],
            "session_id": [m["session"] for m in mems],
            "turn_no": [m["turn"] for m in mems],
            "seq": list(range(n)),
            "kind": [m["kind"] for m in mems],
            "body": bodies,
            "fact_id": [None] * n,
            "created_day": [m["day"] for m in mems],
            "source": [m["source"] for m in mems],
            "confidence": [1.0] * n,
            "superseded_by": [None] * n,
            "tokens": count_tokens(bodies),
            "entity_ids": [[] for _ in range(n)],
            "form": [form] * n,
            "scope_id": [m["scope"] for m in mems],
        },
        schema=MEMORY_SCHEMA,
    )
    sessions = (
        memories.group_by("session_id", maintain_order=True)
        .agg(
            pl.col("created_day").min().alias("start_day"),
            pl.col("created_day").max().alias("end_day"),
            pl.len().cast(pl.Int32).alias("memories"),
            pl.col("scope_id").first(),
        )
        .with_columns(agent_id=pl.lit(None, dtype=pl.String))
        .select(list(SESSION_SCHEMA))
        .cast(SESSION_SCHEMA)  # type: ignore[arg-type]
    )

    session_of = {m["_id"]: m["session"] for m in mems}
    queries = pl.DataFrame(
        [
            {
                "query_id": q["_id"],
                "class": q["category"],
                "text": q["text"],
                "predicate_field": None,
                "predicate_op": None,
                "predicate_value": None,
                "expected_count": None,
                "similarity_expressible": True,
                "scope_id": q["scope"],
            }
            for q in ds.queries
        ],
        schema=SCOPED_QUERY_SCHEMA,
    )
    positive = [(q, m, s) for q, m, s, _ in ds.qrels if s > 0]
    qrels = pl.DataFrame(positive, schema=QRELS_SCHEMA, orient="row")
    group_rows: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for q, m, _ in positive:
        key = (q, session_of[m])
        if key not in seen:
            seen.add(key)
            group_rows.append(key)
    qrels_group = pl.DataFrame(group_rows, schema=QRELS_GROUP_SCHEMA, orient="row")
    evidence = pl.DataFrame(
        [(m["_id"], u) for m in mems for u in m["evidence"]], schema=EVIDENCE_SCHEMA, orient="row"
    )
    query_evidence = pl.DataFrame(
        [(q["_id"], u) for q in ds.queries for u in q["evidence"]],
        schema=QUERY_EVIDENCE_SCHEMA,
        orient="row",
    )
    issues = pl.DataFrame(
        [(i.file, i.line, i.kind, i.id, i.detail) for i in ds.issues],
        schema=ISSUE_SCHEMA,
        orient="row",
    )
    tables = {
        "memories": memories,
        "sessions": sessions,
        "agents": pl.DataFrame(schema=AGENT_SCHEMA),
        "facts": pl.DataFrame(schema=FACT_SCHEMA),
        "entities": pl.DataFrame(schema=ENTITY_SCHEMA),
        "queries": queries,
        "qrels": qrels,
        "qrels_group": qrels_group,
        "evidence": evidence,
        "query_evidence": query_evidence,
    }
    for name, df in tables.items():
        write_parquet(out / PREPARED_FILES[name], df)
    write_csv(out / PREPARED_FILES["issues"], issues)

    categories = ds.categories
    by_cat = {c: 0 for c in categories}
    for q in ds.queries:
        by_cat[q["category"]] += 1
    src = Path(path)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dataset": ds.name,
        "unit": form,
        "categories": categories,
        "counts": {
            "memories": n,
            "sessions": sessions.height,
            "scopes": int(memories["scope_id"].drop_nulls().n_unique()),
            "memories_without_scope": int(memories["scope_id"].null_count()),
            "queries": queries.height,
            "queries_by_category": by_cat,
            "queries_skipped": len(ds.skipped_queries),
            "qrels": qrels.height,
            "qrels_score_0": sum(1 for r in ds.qrels if r[2] == 0),
            "qrels_group": qrels_group.height,
            "evidence": evidence.height,
            "max_evidence_per_memory": max((len(m["evidence"]) for m in mems), default=0),
            "query_evidence": query_evidence.height,
            "tokens": int(memories["tokens"].sum()),
            "days_span": int(memories["created_day"].max() or 0) if n else 0,
        },
        "issues": ds.issue_counts(),
        "source": {
            "path": str(src),
            **{k: ds.meta[k] for k in ("description", "license", "source") if k in ds.meta},
            "sha256": {f: _sha256(src / f) for f in DATASET_FILES},
        },
        "files": {PREPARED_FILES[k]: _sha256(out / PREPARED_FILES[k]) for k in (*tables, "issues")},
    }
    write_json(out / PREPARED_FILES["manifest"], manifest)
    return manifest
