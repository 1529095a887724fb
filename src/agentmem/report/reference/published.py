"""Every published number as a :class:`~agentmem.report.reference.records.Published` record.

:func:`published_numbers` expands the figures of :mod:`agentmem.report.reference.study`
into one record per number, in docs/STUDY.md document order, each naming its section,
where in it the number stands, its tolerance kind and the lookup key (``ref``) of our
corresponding result.
"""

from __future__ import annotations

from agentmem.report.reference.records import LATENCY_WHY, Published, Ref
from agentmem.report.reference.study import (
    ANOMALY,
    ANOMALY_ARM,
    BUDGET_K1,
    BY_CLASS,
    CLASSES,
    CORPUS,
    CORPUS_SHARES,
    CRASH,
    CRASH_REWRITE_LOST,
    CRASH_REWRITE_TEXT,
    CRASH_SQLITE_INTEGRITY_FAILURES,
    DENSE_PROBE,
    DESIGN_PARAMS,
    EXACT_COUNT,
    FILE_ARMS,
    GENERATOR,
    IDENTIFIER_OVERLAP,
    LOST_UPDATE,
    OVERALL,
    OVERALL_COLUMNS,
    POSTFILTER,
    POSTFILTER_ARM,
    POSTFILTER_QUERIES,
    PREDICATE_SHARE,
    QUERY_COUNTS,
    RELEVANCE_RULES,
    RESTATEMENTS,
    SCALING_L,
    SCALING_NDCG,
    SCALING_P50,
    SIMILARITY_EXPRESSIBLE,
    SIMILARITY_SHARE,
    SIZES,
    SUPERSEDED_FACTS,
    VALIDATION_COSINE,
    WORLD,
)

_METRIC_NAMES = {
    "ndcg_at_10": "nDCG@10",
    "recall_at_10": "recall@10",
    "mrr": "MRR",
    "p50_ms": "p50 ms",
    "p95_ms": "p95 ms",
    "bytes_per_memory": "bytes/memory",
    "tokens_at_10": "tokens/query @10",
}
_OVERALL_KIND = {
    "ndcg_at_10": "score",
    "recall_at_10": "score",
    "mrr": "score",
    "p50_ms": "latency",
    "p95_ms": "latency",
    "bytes_per_memory": "bytes",
    "tokens_at_10": "tokens",
}
_CLASS_WHY = {
    "semantic": "the corpus validation table matches the study's (cosine, term and "
    "rare-term overlap within tolerance) and the text arms reproduce; dense ranking still "
    "puts our paraphrases higher among their competitors",
    "temporal": "a temporal question names a service that the memories of about ten facts "
    "(2,500 facts over 250 services) and some distractors also name, while only one "
    "incident's notes are relevant; how the study spread facts over services is not published",
    "currency": "our distractors name a fact's identifier in one short line (the study does "
    "not publish its distractor text); a text ranking can put such a line before the "
    "correction",
    "provenance": "our text-only arms rank only memories containing a query term; the "
    "words of 'everything from session S' rarely occur in a memory, so few results return",
}


def _overall_ref(arm: str, col: str) -> Ref:
    if col == "bytes_per_memory":
        return ("build", arm, "bytes_per_memory")
    if col == "tokens_at_10":
        return ("budget", arm, 10, "mean_tokens")
    return ("by_class", arm, "all", col)


class _Builder:
    """Collects :class:`Published` records; ``at`` sets the section, group and source."""

    def __init__(self) -> None:
        self.out: list[Published] = []
        self.sec = self.group = self.src = ""

    def at(self, sec: str, group: str, src: str) -> None:
        self.sec, self.group, self.src = sec, group, src

    def add(
        self,
        item: str,
        value: float,
        ref: Ref,
        kind: str,
        note: str = "",
        why: str = "",
        src: str | None = None,
    ) -> None:
        self.out.append(
            Published(
                self.sec, self.group, item, float(value), ref, kind, src or self.src, note, why
            )
        )


def published_numbers() -> list[Published]:
    """Every number of docs/STUDY.md §1–4 as a :class:`Published` record, in document order.

    Returns:
        The list (the §3 ten-arm table gives 70 records, the by-class grid 80, the two
        B-tree arms sharing one published row; the lost-update figures appear once per
        mode we run, threads and processes).
    """
    b = _Builder()
    # §1
    b.at("§1", "Corpus counts (main size)", "§1 first paragraph")
    for k, v in CORPUS.items():
        why = "our templates are shorter (both counted with o200k_base)" if "tokens" in k else ""
        b.add(k.replace("_", " "), v, ("manifest", k), "count", why=why)
    b.add(
        "distractor share of memories (≈15 %)",
        CORPUS_SHARES["distractor_share"],
        ("manifest_ratio", "distractors", "memories"),
        "rate",
    )
    b.add(
        "memories per session (≈24)",
        CORPUS_SHARES["memories_per_session"],
        ("manifest_ratio", "memories", "sessions"),
        "count",
    )
    b.add(
        "superseded facts (12 %)",
        SUPERSEDED_FACTS,
        ("manifest", "superseded_facts"),
        "count",
        src="§1 generator options",
    )
    b.at("§1", "Generator options", "§1 generator options")
    for k, v in GENERATOR.items():
        note = {
            "distractor_ratio": "ours is the realised study ratio 1,218 / 7,064 = 0.172",
        }.get(k, "")
        b.add(k.replace("_", " "), v, ("option", k), "setting", note=note)
    for t, v in WORLD.items():
        b.add(f"world: {t} records", v, ("world", t), "setting")
    b.at("§1", "Restatements per fact", "§1 last line")
    for k, v in RESTATEMENTS.items():
        b.add(
            f"restatements {k}",
            v,
            ("restatements", k),
            "count",
            note="over the facts with more than one memory, as the study counts them",
        )
    b.at("§1", "Scaling sizes", "§1 scaling sizes")
    for size, (mem, nq) in SIZES.items():
        b.add(f"{size}: memories", mem, ("size", size, "memories"), "count")
        b.add(
            f"{size}: queries",
            nq,
            ("size", size, "queries"),
            "count",
            why="queries per class is a config setting per size",
        )

    # §2
    b.at("§2", "Queries per class", "§2 table, column n")
    for c, n in QUERY_COUNTS.items():
        why = (
            "our generator draws 40 temporal questions (incidents noted twice or more by day "
            "160); the study drew 40 incidents and dropped those with no note by then"
        )
        b.add(f"{c} queries", n, ("queries", c), "count", why=why if c == "temporal" else "")
    b.at("§2", "Queries per class", "§2 after the table")
    b.add(
        "answerable by similarity alone",
        SIMILARITY_EXPRESSIBLE,
        ("manifest", "similarity_expressible"),
        "count",
    )
    b.add(
        "share answerable by similarity alone",
        SIMILARITY_SHARE,
        ("manifest_ratio", "similarity_expressible", "queries"),
        "rate",
    )
    b.add(
        "share needing a predicate, join or aggregate",
        PREDICATE_SHARE,
        ("predicate_share",),
        "rate",
    )
    b.at("§2", "Queries per class", "§2 table, relevance columns")
    b.add(
        "temporal cutoff day",
        RELEVANCE_RULES["temporal_cutoff_day"],
        ("option", "temporal_cutoff_day"),
        "setting",
    )
    b.add(
        "aggregate: least relevant memories",
        RELEVANCE_RULES["aggregate_min_relevant"],
        ("min_relevant", "aggregate"),
        "setting",
    )
    b.add(
        "hybrid: least relevant memories",
        RELEVANCE_RULES["hybrid_min_relevant"],
        ("min_relevant", "hybrid"),
        "setting",
    )
    b.at("§2", "Corpus validation", "§2 corpus validation")
    for c, v in VALIDATION_COSINE.items():
        b.add(f"mean cosine: {c.replace('_', ' ')}", v, ("validation", c, "mean_cosine"), "score")
    for c, v in IDENTIFIER_OVERLAP.items():
        b.add(
            f"identifier overlap: {c}",
            v,
            ("validation", c, "identifier_overlap"),
            "score",
            src="§2 identifier overlap",
        )
    b.at("§2", "Dense-failure probe (lexical queries)", "§2 dense-failure probe")
    probe_kind = {
        "probes": "setting",
        "top_distractor": "outcome",
        "top_distractor_share": "score",
        "median_rank": "rank",
        "memories": "count",
    }
    for k, v in DENSE_PROBE.items():
        note = "we probe every lexical query" if k in ("probes", "top_distractor") else ""
        why = (
            "a median over our 40 lexical questions, the study's over 6"
            if k == "median_rank"
            else ""
        )
        b.add(k.replace("_", " "), v, ("probe", k), probe_kind[k], note=note, why=why)

    # §3
    for arm, vals in OVERALL.items():
        b.at("§3", "Ten arms: overall", f"§3 ten-arm table, row {arm}")
        for col, v in zip(OVERALL_COLUMNS, vals, strict=True):
            kind = _OVERALL_KIND[col]
            b.add(
                f"{arm} {_METRIC_NAMES[col]}",
                v,
                _overall_ref(arm, col),
                kind,
                why=LATENCY_WHY if kind == "latency" else "",
            )
    for arms, vals in BY_CLASS.items():
        b.at("§3", "nDCG@10 by class", f"§3 by-class grid, row {', '.join(arms)}")
        for arm in arms:
            for c, v in zip(CLASSES, vals, strict=True):
                b.add(
                    f"{arm} {c}",
                    v,
                    ("by_class", arm, c, "ndcg_at_10"),
                    "score",
                    why=_CLASS_WHY.get(c, "") if arm not in FILE_ARMS or c == "semantic" else "",
                )
    b.at(
        "§3",
        "Exact counts on aggregate questions",
        "§3 'every DBMS arm answered every "
        "aggregate with the exact count; the file arms never did'",
    )
    for arm, v in EXACT_COUNT.items():
        b.add(
            f"{arm} exact-count rate", v, ("by_class", arm, "aggregate", "exact_count_rate"), "rate"
        )
    b.at("§3", "Arm design numbers", "§3 arm descriptions")
    for (arm, p), v in DESIGN_PARAMS.items():
        b.add(f"{arm} {p}", v, ("param", arm, p), "setting")

    # §4
    b.at("§4", f"Post-filter overfetch sweep ({POSTFILTER_ARM})", "§4 post-filter sweep")
    b.add(
        "filtered queries",
        POSTFILTER_QUERIES,
        ("fill", POSTFILTER_ARM, "filtered_queries"),
        "count",
    )
    for x, (fill, rec, scan) in POSTFILTER.items():
        b.add(f"×{x} fill rate", fill, ("postfilter", POSTFILTER_ARM, x, "fill_rate"), "score")
        b.add(f"×{x} recall", rec, ("postfilter", POSTFILTER_ARM, x, "recall_at_10"), "score")
        if scan is not None:
            b.add(
                f"×{x} fraction scanned",
                scan,
                ("postfilter", POSTFILTER_ARM, x, "scan_fraction"),
                "rank",
                note="= overfetch · k / memories",
            )
    b.at("§4", "Scaling", "§4 scaling")
    for arm, vals in SCALING_NDCG.items():
        for size, v in zip(SIZES, vals, strict=True):
            b.add(
                f"{arm} nDCG@10 at {size} ({SIZES[size][0]:,})",
                v,
                ("scaling", arm, size, "ndcg_at_10"),
                "score",
            )
    for (arm, size), v in SCALING_P50.items():
        b.add(
            f"{arm} p50 ms at {size} ({SIZES[size][0]:,})",
            v,
            ("scaling", arm, size, "p50_ms"),
            "latency",
            why=LATENCY_WHY,
        )
    units = {"storage_mb": "MB (10^6 bytes)", "ingest_s": "ingest s", "index_s": "index s"}
    for (arm, col), v in SCALING_L.items():
        kind = "bytes" if col == "storage_mb" else "latency"
        b.add(
            f"{arm} {units[col]} at l (33,197)",
            v,
            ("scaling", arm, "l", col),
            kind,
            why="" if kind == "bytes" else LATENCY_WHY,
        )
    b.at("§4", "Token budget", "§4 token budget")
    for arm, v in BUDGET_K1.items():
        b.add(f"{arm} nDCG at k = 1", v, ("budget", arm, 1, "ndcg"), "score")
    b.at("§4", "Crash (SIGKILL during sustained writes)", "§4 crash")
    for fam, (bad, n) in CRASH.items():
        note = {
            "file-rewrite": "ours rewrites the whole file after every record, so nearly every "
            "kill lands inside a rewrite",
            "postgres-writer": "the study killed the Postgres client; we also kill the server "
            "(family postgres-server, in trials/crash.csv)",
        }.get(fam, "")
        b.add(f"{fam}: trials unreadable", bad, ("crash", fam, "unreadable"), "outcome", note=note)
        b.add(f"{fam}: trials", n, ("crash", fam, "trials"), "setting")
    b.add(
        "file-rewrite: trials unreadable (the study's text)",
        CRASH_REWRITE_TEXT,
        ("crash", "file-rewrite", "unreadable_text"),
        "outcome",
    )
    b.add(
        "file-rewrite: records lost per failed trial (≈)",
        CRASH_REWRITE_LOST,
        ("crash", "file-rewrite", "lost_per_failure"),
        "outcome",
        note="our writer is killed within 1.5 s, so far fewer records exist",
    )
    b.add(
        "sqlite: integrity-check failures",
        CRASH_SQLITE_INTEGRITY_FAILURES,
        ("crash", "sqlite", "integrity_failures"),
        "outcome",
    )
    b.at("§4", "Lost update (8 writers × 25 increments)", "§4 lost update")
    for mode in ("threads", "processes"):
        rows: list[tuple[str, Ref, str]] = [
            ("writers", ("lost", "json-file", mode, "writers"), "setting"),
            ("increments", ("lost", "json-file", mode, "increments"), "setting"),
            ("expected", ("lost", "json-file", mode, "expected"), "setting"),
            ("json_kept", ("lost", "json-file", mode, "observed"), "racy"),
            ("json_lost_share", ("lost", "json-file", mode, "lost_share"), "score"),
            ("sqlite_lost", ("lost", "sqlite-update", mode, "lost"), "outcome"),
            ("postgres_lost", ("lost", "postgres-update", mode, "lost"), "outcome"),
        ]
        for k, ref, kind in rows:
            if mode == "processes" and kind == "setting":
                continue
            note = (
                "one connection per writer (the study: one shared connection)"
                if (k in ("sqlite_lost", "postgres_lost"))
                else ""
            )
            label = k.replace("_", " ") + ("" if mode == "threads" else " (separate processes)")
            b.add(
                label,
                LOST_UPDATE[k],
                ref,
                kind,
                note=note,
                src="§4 lost update"
                + ("" if mode == "threads" else " (the study ran one process)"),
            )
    b.at("§4", "Update anomaly (top-10 repair)", "§4 update anomaly")
    kinds = {
        "facts_probed": "setting",
        "k": "setting",
        "mean_reached": "count",
        "mean_total": "count",
        "stale_fraction": "score",
    }
    for k, v in ANOMALY.items():
        ref = ("anomaly_k",) if k == "k" else ("anomaly", ANOMALY_ARM, k)
        note = f"ours: the {ANOMALY_ARM} arm" if k not in ("facts_probed", "k") else ""
        why = {
            "mean_total": "our probe asks the same classes of questions in the same order, "
            "but its facts are other draws of the restatement distribution",
            "mean_reached": "our pg-hybrid ranks with native PostgreSQL full text and HNSW, "
            "the study's with PGlite; other arms in trials/anomaly.csv",
            "stale_fraction": "see mean reached; other arms in trials/anomaly.csv",
        }.get(k, "")
        b.add(k.replace("_", " "), v, ref, kinds[k], note=note, why=why)
    return b.out


PUBLISHED: tuple[Published, ...] = tuple(published_numbers())
"""All published numbers (see :func:`published_numbers`)."""


def published_lookup() -> dict[Ref, float]:
    """Published value by lookup key (every key of :data:`PUBLISHED` is unique)."""
    return {p.ref: p.value for p in PUBLISHED}


def overall_published(column: str) -> dict[str, float]:
    """Published §3 ten-arm values of one column (a name in :data:`OVERALL_COLUMNS`).

    Raises:
        ValueError: for an unknown column.
    """
    if column not in OVERALL_COLUMNS:
        raise ValueError(f"column must be one of {OVERALL_COLUMNS}, got {column!r}")
    j = OVERALL_COLUMNS.index(column)
    return {arm: vals[j] for arm, vals in OVERALL.items()}
