"""LoCoMo as a corpus directory in the synthetic corpus contract (DESIGN §2).

Which turn, session, speaker and question becomes which row: ``docs/LOCOMO.md``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.external.locomo.load import (
    LICENSE,
    SOURCE_FILE,
    SOURCE_REPOSITORY,
    LocomoFormatError,
    _issue,
    _sessions,
    load_locomo,
    normalise_label,
    parse_evidence,
)
from agentmem.io import write_csv, write_json, write_parquet
from agentmem.tokens import count_tokens
from agentmem.types import MEMORY_SCHEMA

SCHEMA_VERSION = 1

#: category number -> query class (numbering of the data set's own evaluation code)
CATEGORY_CLASSES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL = 5
#: classes scored by default, in table order (adversarial is excluded unless asked for)
QUERY_CLASSES = ("multi-hop", "temporal", "open-domain", "single-hop")
LABEL_COLUMNS = {
    "sample_id": pl.String,
    "qa_index": pl.Int32,
    "query_id": pl.String,
    "category": pl.Int32,
    "raw_label": pl.String,
    "action": pl.String,
    "repaired_to": pl.String,
    "reason": pl.String,
}

QUERY_SCHEMA = {
    "query_id": pl.String,
    "class": pl.String,
    "text": pl.String,
    "predicate_field": pl.String,
    "predicate_op": pl.String,
    "predicate_value": pl.String,
    "expected_count": pl.Int32,
    "similarity_expressible": pl.Boolean,
}
_FACT_SCHEMA = {
    "fact_id": pl.String,
    "subject_id": pl.String,
    "subject_type": pl.String,
    "service_id": pl.String,
    "predicate": pl.String,
    "object_value": pl.String,
    "memory_kind": pl.String,
    "valid_from_day": pl.Int32,
    "corrected_value": pl.String,
    "corrected_day": pl.Int32,
    "correction_memory_id": pl.String,
}
_ENTITY_SCHEMA = {
    "entity_id": pl.String,
    "type": pl.String,
    "name": pl.String,
    "service_id": pl.String,
}
_SESSION_SCHEMA = {
    "session_id": pl.String,
    "agent_id": pl.String,
    "start_day": pl.Int32,
    "end_day": pl.Int32,
    "memories": pl.Int32,
    "sample_id": pl.String,
    "session_no": pl.Int32,
    "date_time": pl.String,
}
_AGENT_SCHEMA = {
    "agent_id": pl.String,
    "role": pl.String,
    "name": pl.String,
    "sample_id": pl.String,
}
FILES = (
    "memories",
    "facts",
    "entities",
    "sessions",
    "agents",
    "queries",
    "qrels",
    "qrels_session",
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prepare_locomo(
    path: str | Path,
    out_dir: str | Path,
    *,
    limit_conversations: int | None = None,
    include_adversarial: bool = False,
) -> dict[str, Any]:
    """Write the LoCoMo file as a corpus directory in the synthetic corpus contract.

    Args:
        path: the LoCoMo JSON file (``locomo10.json``).
        out_dir: corpus directory to write (created): memories, facts, entities, sessions,
            agents, queries, qrels, qrels_session Parquet, ``manifest.json``, ``labels.csv``.
        limit_conversations: keep only the first N conversations (tests; None = all).
        include_adversarial: also make queries of category 5 (class ``adversarial``);
            by default they are counted and excluded.

    Returns:
        The manifest (also written to ``manifest.json``): conversations, sessions, memories,
        image_captions, agents, qa_total, qa_by_category, adversarial_excluded, queries,
        queries_by_class, queries_skipped, qrels, qrels_session, labels (counts: ok,
        repaired, skipped), labels_report (rows of ``labels.csv``), earliest_date,
        days_span, tokens, source (path, sha256, repository, licence), options, files.

    Raises:
        LocomoMissing: the file is absent (message says where to get it, where to put it).
        LocomoFormatError: the file has an unexpected shape (duplicate turn ids, unparseable
            session dates, unknown categories).
    """
    src = Path(path)
    data = load_locomo(src)
    if limit_conversations is not None:
        data = data[:limit_conversations]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    convs = []
    for conv in data:
        sid = str(conv["sample_id"])
        convs.append((sid, conv, _sessions(conv, sid)))
    all_dates = [s[1] for _, _, sess in convs for s in sess]
    if not all_dates:
        raise LocomoFormatError(f"{src}: no session with turns")
    earliest = min(all_dates).date()

    # turns in time order
    turn_rows: list[tuple] = []
    session_rows: list[dict[str, Any]] = []
    agent_rows: list[dict[str, Any]] = []
    turns_of: dict[str, set[str]] = {}
    for ci, (sid, conv, sessions) in enumerate(convs):
        c = conv["conversation"]
        agent_of = {}
        for role in ("speaker_a", "speaker_b"):
            if role in c:
                name = str(c[role])
                agent_of[name] = f"{sid}:{name}"
                agent_rows.append(
                    {"agent_id": f"{sid}:{name}", "role": role, "name": name, "sample_id": sid}
                )
        labels: set[str] = set()
        for n, dt, raw_date, turns in sessions:
            day = (dt.date() - earliest).days
            session_id = f"{sid}:S{n}"
            first_speaker = str(turns[0].get("speaker", ""))
            session_rows.append(
                {
                    "session_id": session_id,
                    "agent_id": agent_of.get(first_speaker, f"{sid}:{first_speaker}"),
                    "start_day": day,
                    "end_day": day,
                    "memories": len(turns),
                    "sample_id": sid,
                    "session_no": n,
                    "date_time": raw_date,
                }
            )
            for i, t in enumerate(turns):
                raw_id = str(t.get("dia_id", ""))
                dia, _ = normalise_label(raw_id)
                if dia is None or dia in labels:
                    raise LocomoFormatError(
                        f"{src}: {sid} session_{n} turn {i}: bad or repeated dia_id {raw_id!r}"
                    )
                labels.add(dia)
                speaker = str(t.get("speaker", ""))
                body = f"{speaker}: {t.get('text') or ''}"
                caption = t.get("blip_caption")
                if caption:
                    body += f" [image: {caption}]"
                key = (dt, ci, n, i)
                turn_rows.append((key, f"{sid}:{dia}", session_id, i, body, day, speaker))
        turns_of[sid] = labels
    turn_rows.sort(key=lambda r: r[0])
    bodies = [r[4] for r in turn_rows]
    memories = pl.DataFrame(
        {
            "memory_id": [r[1] for r in turn_rows],
            "session_id": [r[2] for r in turn_rows],
            "turn_no": [r[3] for r in turn_rows],
            "seq": list(range(len(turn_rows))),
            "kind": ["episodic"] * len(turn_rows),
            "body": bodies,
            "fact_id": [None] * len(turn_rows),
            "created_day": [r[5] for r in turn_rows],
            "source": [r[6] for r in turn_rows],
            "confidence": [1.0] * len(turn_rows),
            "superseded_by": [None] * len(turn_rows),
            "tokens": count_tokens(bodies),
            "entity_ids": [[] for _ in turn_rows],
            "form": ["turn"] * len(turn_rows),
        },
        schema=MEMORY_SCHEMA,
    )
    session_of = dict(zip(memories["memory_id"], memories["session_id"], strict=True))

    # queries, qrels and the label report
    queries: list[dict[str, Any]] = []
    qrels: list[tuple[str, str]] = []
    qrels_session: list[tuple[str, str]] = []
    report: list[dict[str, Any]] = []
    qa_by_category: dict[str, int] = {}
    n_labels = n_adversarial = 0
    for sid, conv, _ in convs:
        for qi, qa in enumerate(conv["qa"]):
            cat = qa.get("category")
            if cat not in CATEGORY_CLASSES:
                raise LocomoFormatError(f"{src}: {sid} qa {qi}: unknown category {cat!r}")
            cls = CATEGORY_CLASSES[cat]
            qa_by_category[cls] = qa_by_category.get(cls, 0) + 1
            if cat == ADVERSARIAL and not include_adversarial:
                n_adversarial += 1
                continue
            qid = f"{sid}:Q{qi}"
            ctx = {"sample_id": sid, "qa_index": qi, "query_id": qid, "category": cat}
            evidence = qa.get("evidence")
            items = [evidence] if isinstance(evidence, str) else list(evidence or [])
            n_labels += len(items)
            labels, issues = parse_evidence(items, turns_of[sid])
            report.extend({**ctx, **iss} for iss in issues)
            if not labels:
                reason = "empty evidence" if not items else "no usable evidence label"
                report.append(
                    {
                        **ctx,
                        **_issue(json.dumps(evidence), "query-skipped", "", reason),
                    }
                )
                continue
            queries.append(
                {
                    "query_id": qid,
                    "class": cls,
                    "text": str(qa.get("question", "")),
                    "predicate_field": None,
                    "predicate_op": None,
                    "predicate_value": None,
                    "expected_count": None,
                    "similarity_expressible": True,
                }
            )
            seen_sessions: list[str] = []
            for lab in labels:
                mid = f"{sid}:{lab}"
                qrels.append((qid, mid))
                if session_of[mid] not in seen_sessions:
                    seen_sessions.append(session_of[mid])
            qrels_session.extend((qid, s) for s in seen_sessions)

    qdf = pl.DataFrame(queries, schema=QUERY_SCHEMA)
    rdf = pl.DataFrame(
        qrels, schema={"query_id": pl.String, "memory_id": pl.String}, orient="row"
    ).with_columns(grade=pl.lit(1, dtype=pl.Int8))
    sdf = pl.DataFrame(
        qrels_session, schema={"query_id": pl.String, "session_id": pl.String}, orient="row"
    )
    labels_df = pl.DataFrame(report, schema=LABEL_COLUMNS)
    tables = {
        "memories": memories,
        "facts": pl.DataFrame(schema=_FACT_SCHEMA),
        "entities": pl.DataFrame(schema=_ENTITY_SCHEMA),
        "sessions": pl.DataFrame(session_rows, schema=_SESSION_SCHEMA),
        "agents": pl.DataFrame(agent_rows, schema=_AGENT_SCHEMA),
        "queries": qdf,
        "qrels": rdf,
        "qrels_session": sdf,
    }
    for name, df in tables.items():
        write_parquet(out / f"{name}.parquet", df)
    write_csv(out / "labels.csv", labels_df)

    actions = labels_df["action"].value_counts()
    by_action = dict(zip(actions["action"], actions["count"], strict=True))
    n_repaired_raw = int(by_action.get("repaired", 0))
    n_skipped_tokens = int(by_action.get("skipped", 0))
    classes = [*QUERY_CLASSES, *(["adversarial"] if include_adversarial else [])]
    by_class = qdf.group_by("class").len()
    counts = dict(zip(by_class["class"], by_class["len"], strict=True))
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "dataset": "locomo",
        "conversations": len(convs),
        "sessions": len(session_rows),
        "memories": memories.height,
        "facts": 0,
        "entities": 0,
        "agents": len(agent_rows),
        "image_captions": int(memories["body"].str.contains(" [image: ", literal=True).sum()),
        "qa_total": sum(qa_by_category.values()),
        "qa_by_category": {c: qa_by_category.get(c, 0) for c in CATEGORY_CLASSES.values()},
        "adversarial_excluded": n_adversarial,
        "queries": qdf.height,
        "queries_by_class": {c: int(counts.get(c, 0)) for c in classes},
        "queries_skipped": int(by_action.get("query-skipped", 0)),
        "similarity_expressible": qdf.height,
        "qrels": rdf.height,
        "qrels_session": sdf.height,
        "labels": {
            "raw": n_labels,
            "repaired": n_repaired_raw,
            "skipped": n_skipped_tokens,
        },
        "labels_report": labels_df.to_dicts(),
        "earliest_date": earliest.isoformat(),
        "days_span": int(memories["created_day"].max()),
        "tokens": int(memories["tokens"].sum()),
        "tokens_per_memory": round(float(memories["tokens"].mean()), 2),
        "source": {
            "path": str(src),
            "sha256": _sha256(src),
            "repository": SOURCE_REPOSITORY,
            "file": SOURCE_FILE,
            "license": LICENSE,
        },
        "options": {
            "limit_conversations": limit_conversations,
            "include_adversarial": include_adversarial,
        },
        "files": {f"{n}.parquet": _sha256(out / f"{n}.parquet") for n in FILES},
    }
    write_json(out / "manifest.json", manifest)
    return manifest
