"""LoCoMo as three "agentmem-memory" datasets: dialog turns, observations, session summaries.

Which turn, observation, summary and question becomes which record, and the evidence
each covers: ``docs/LOCOMO.md``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.external.format import write_dataset
from agentmem.external.locomo.load import (
    LICENSE,
    SOURCE_FILE,
    SOURCE_REPOSITORY,
    LocomoFormatError,
    dated_sessions,
    label_issue,
    load_locomo,
    normalise_label,
    parse_evidence,
)
from agentmem.io import write_csv, write_json

#: category number in the file -> category name (numbering of the data set's own code)
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
#: the memory units LoCoMo offers -> the form of their memories
UNITS: dict[str, str] = {"turns": "turn", "observations": "observation", "summaries": "summary"}
LABEL_COLUMNS = {
    "sample_id": pl.String,
    "qa_index": pl.Int32,
    "query_id": pl.String,
    "memory_id": pl.String,
    "category": pl.Int32,
    "raw_label": pl.String,
    "action": pl.String,
    "repaired_to": pl.String,
    "reason": pl.String,
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def convert_locomo(
    json_path: str | Path,
    out_root: str | Path,
    *,
    units: Sequence[str] = ("turns", "observations", "summaries"),
    limit_conversations: int | None = None,
) -> dict[str, Path]:
    """Write the LoCoMo file as one "agentmem-memory" dataset per memory unit.

    Every unit gets the same queries (one per question with at least one usable evidence
    label, all five categories), scope = the conversation's ``sample_id`` on every memory
    and query, and query evidence = the question's evidence turns
    (``f"{sample_id}:{dia_id}"``). Memories and what they cover:

    - ``turns``: ``_id`` ``{sample_id}:D<s>:<t>``, covering itself; qrels: the evidence turns.
    - ``observations``: ``{sample_id}:O<s>:<i>`` (i from 1 within the session), covering
      the turns of its ``dia_id`` (a list or a ``"D1:3, D1:5"`` string); qrels: the
      observations covering any evidence turn.
    - ``summaries``: ``{sample_id}:S<s>:summary``, covering every turn of session s;
      qrels: the summaries of the evidence turns' sessions.

    Beside the four dataset files each unit directory gets ``labels.csv`` (every evidence
    label repaired or skipped, every question skipped; columns :data:`LABEL_COLUMNS`) and
    ``conversion.json`` (counts, source sha256, licence, options).

    Args:
        json_path: the LoCoMo file (``locomo10.json``), read in place.
        out_root: parent directory; unit ``u`` is written to ``out_root/u/``.
        units: which of :data:`UNITS` to write.
        limit_conversations: keep only the first N conversations (tests; None = all).

    Returns:
        unit -> its dataset directory, in the order of ``units``.

    Raises:
        ValueError: an unknown unit.
        LocomoMissing: the file is absent (message says where to get it, where to put it).
        LocomoFormatError: the file has an unexpected shape (repeated turn ids,
            unparseable session dates, an unknown category, an observation or summary of
            a session without turns).
    """
    bad = [u for u in units if u not in UNITS]
    if bad or not units:
        raise ValueError(f"unknown LoCoMo unit(s) {bad or units!r}; known: {', '.join(UNITS)}")
    src = Path(json_path)
    data = load_locomo(src)
    if limit_conversations is not None:
        data = data[:limit_conversations]
    convs = [(str(c["sample_id"]), c, dated_sessions(c, str(c["sample_id"]))) for c in data]
    dates = [s[1] for _, _, sess in convs for s in sess]
    if not dates:
        raise LocomoFormatError(f"{src}: no session with turns")
    earliest = min(dates).date()

    records: dict[str, list[dict[str, Any]]] = {u: [] for u in UNITS}
    obs_report: list[dict[str, Any]] = []
    q_report: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    qrels: dict[str, list[tuple[str, str, int]]] = {u: [] for u in UNITS}
    qa_by_category = dict.fromkeys(CATEGORY_NAMES.values(), 0)
    n_labels = 0
    n_sessions = 0
    for sid, conv, sessions in convs:
        day_of: dict[int, int] = {}
        turns_of_session: dict[int, list[str]] = {}
        labels: set[str] = set()
        for n, dt, _raw, turns in sessions:
            n_sessions += 1
            day = (dt.date() - earliest).days
            day_of[n] = day
            session = f"{sid}:S{n}"
            ids: list[str] = []
            for i, t in enumerate(turns):
                raw_id = str(t.get("dia_id", ""))
                dia, _ = normalise_label(raw_id)
                if dia is None or dia in labels:
                    raise LocomoFormatError(
                        f"{src}: {sid} session_{n} turn {i}: bad or repeated dia_id {raw_id!r}"
                    )
                labels.add(dia)
                ids.append(f"{sid}:{dia}")
                speaker = str(t.get("speaker", ""))
                body = f"{speaker}: {t.get('text') or ''}"
                if t.get("blip_caption"):
                    body += f" [image: {t['blip_caption']}]"
                records["turns"].append(
                    {
                        "_id": ids[-1],
                        "text": body,
                        "session": session,
                        "day": day,
                        "scope": sid,
                        "source": speaker,
                        "turn": i,
                    }
                )
            turns_of_session[n] = ids
        session_of_turn = {t: n for n, ts in turns_of_session.items() for t in ts}

        obs_covering: dict[str, list[str]] = {}
        for key, by_speaker in (conv.get("observation") or {}).items():
            n = _session_no(src, sid, key, "_observation", day_of)
            i = 0
            for speaker, items in (by_speaker or {}).items():
                for item in items or []:
                    text, dia = item[0], item[1] if len(item) > 1 else []
                    i += 1
                    oid = f"{sid}:O{n}:{i}"
                    raw = [dia] if isinstance(dia, str) else list(dia or [])
                    got, issues = parse_evidence(raw, labels)
                    ctx = {"sample_id": sid, "memory_id": oid}
                    obs_report.extend(ctx | iss for iss in issues)
                    cover = [f"{sid}:{lab}" for lab in got]
                    for t in cover:
                        obs_covering.setdefault(t, []).append(oid)
                    records["observations"].append(
                        {
                            "_id": oid,
                            "text": str(text),
                            "session": f"{sid}:S{n}",
                            "day": day_of[n],
                            "scope": sid,
                            "kind": "semantic",
                            "source": str(speaker),
                            "turn": i - 1,
                            "evidence": cover,
                        }
                    )
        for key, summary in (conv.get("session_summary") or {}).items():
            n = _session_no(src, sid, key, "_summary", day_of)
            records["summaries"].append(
                {
                    "_id": f"{sid}:S{n}:summary",
                    "text": str(summary),
                    "session": f"{sid}:S{n}",
                    "day": day_of[n],
                    "scope": sid,
                    "turn": 0,
                    "evidence": turns_of_session[n],
                }
            )

        for qi, qa in enumerate(conv["qa"]):
            cat = qa.get("category")
            if cat not in CATEGORY_NAMES:
                raise LocomoFormatError(f"{src}: {sid} qa {qi}: unknown category {cat!r}")
            qa_by_category[CATEGORY_NAMES[cat]] += 1
            qid = f"{sid}:Q{qi}"
            ctx = {"sample_id": sid, "qa_index": qi, "query_id": qid, "category": cat}
            ev = qa.get("evidence")
            items = [ev] if isinstance(ev, str) else list(ev or [])
            n_labels += len(items)
            got, issues = parse_evidence(items, labels)
            q_report.extend(ctx | iss for iss in issues)
            if not got:
                why = "empty evidence" if not items else "no usable evidence label"
                q_report.append(ctx | label_issue(json.dumps(ev), "query-skipped", "", why))
                continue
            turns = [f"{sid}:{lab}" for lab in got]
            queries.append(
                {
                    "_id": qid,
                    "text": str(qa.get("question", "")),
                    "category": CATEGORY_NAMES[cat],
                    "scope": sid,
                    "evidence": turns,
                }
            )
            qrels["turns"].extend((qid, t, 1) for t in turns)
            covering = dict.fromkeys(o for t in turns for o in obs_covering.get(t, ()))
            qrels["observations"].extend((qid, o, 1) for o in covering)
            sess = dict.fromkeys(session_of_turn[t] for t in turns)
            qrels["summaries"].extend((qid, f"{sid}:S{n}:summary", 1) for n in sess)

    report = pl.DataFrame(q_report, schema=LABEL_COLUMNS)
    actions = report["action"].value_counts()
    by_action = dict(zip(actions["action"], actions["count"], strict=True))
    source_sha = _sha256(src)
    out: dict[str, Path] = {}
    for unit in units:
        d = Path(out_root) / unit
        meta = {
            "name": f"locomo-{unit}",
            "unit": UNITS[unit],
            "description": (
                f"LoCoMo (Maharana et al. 2024): {len(convs)} conversations, one memory per "
                f"{UNITS[unit]}; questions of all five categories with their evidence turns"
            ),
            "license": LICENSE,
            "source": f"{SOURCE_REPOSITORY} {SOURCE_FILE} (sha256 {source_sha})",
            "categories": list(CATEGORY_NAMES.values()),
        }
        write_dataset(d, meta, records[unit], queries, qrels[unit])
        rep = (
            report
            if unit != "observations"
            else pl.concat([report, pl.DataFrame(obs_report, schema=LABEL_COLUMNS)])
        )
        write_csv(d / "labels.csv", rep)
        write_json(
            d / "conversion.json",
            {
                "unit": unit,
                "conversations": len(convs),
                "sessions": n_sessions,
                "memories": len(records[unit]),
                "qa_total": sum(qa_by_category.values()),
                "qa_by_category": qa_by_category,
                "queries": len(queries),
                "queries_skipped": int(by_action.get("query-skipped", 0)),
                "qrels": len(qrels[unit]),
                "labels": {
                    "raw": n_labels,
                    "repaired": int(by_action.get("repaired", 0)),
                    "skipped": int(by_action.get("skipped", 0)),
                },
                "observation_labels_repaired": sum(
                    1 for r in obs_report if r["action"] == "repaired"
                ),
                "observation_labels_skipped": sum(
                    1 for r in obs_report if r["action"] == "skipped"
                ),
                "earliest_date": earliest.isoformat(),
                "source": {
                    "path": str(src),
                    "sha256": source_sha,
                    "repository": SOURCE_REPOSITORY,
                    "file": SOURCE_FILE,
                    "license": LICENSE,
                },
                "options": {"limit_conversations": limit_conversations},
            },
        )
        out[unit] = d
    return out


def _session_no(src: Path, sid: str, key: str, suffix: str, day_of: dict[int, int]) -> int:
    """The session number of an ``observation`` / ``session_summary`` key with turns."""
    body = key.removeprefix("session_").removesuffix(suffix)
    if not key.startswith("session_") or not key.endswith(suffix) or not body.isdigit():
        raise LocomoFormatError(f"{src}: {sid}: unexpected key {key!r} (session_<n>{suffix})")
    n = int(body)
    if n not in day_of:
        raise LocomoFormatError(f"{src}: {sid}: {key} belongs to no session with turns")
    return n
