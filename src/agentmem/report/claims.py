"""The findings the report checks, each a declaration: the study's twelve and the project's own.

A :class:`HeadlineFinding` names its claim, the statistic it computes from a lookup
(``ref -> value``, the keys of :class:`agentmem.report.reference.OurResults`), its verdict
rule in words and as tests, and whether it depends on the corpus. The study's twelve are
:data:`HEADLINE_FINDINGS` (docs/STUDY.md §7, in its order); the project's own claims are
:data:`DESIGN_FINDINGS`. :mod:`agentmem.report.headline` evaluates them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentmem.report.reference import (
    ANOMALY_ARM,
    DBMS_ARMS,
    FILE_ARMS,
    POSTFILTER_ARM,
    REFERENCE_ARMS,
)
from agentmem.report.reference.lookups import (
    durable_crash_unreadable,
    hybrid_currency_drop,
    min_minus_max,
    ndcg,
    need,
    ratio_of,
    sql_lost_increments,
)
from agentmem.report.reference.records import Lookup

#: the five structural classes (docs/STUDY.md §2: they need a predicate, a join or a count)
STRUCTURAL = ("temporal", "provenance", "currency", "aggregate", "negation")


VERDICTS = ("holds", "weakens", "flips", "n/a")


Stat = Callable[[Lookup], float | None]


@dataclass(frozen=True)
class HeadlineFinding:
    """One finding checked on every result tree: one of docs/STUDY.md §7's twelve, or our own.

    Attributes:
        number: its number in docs/STUDY.md §7 (1-12), or 13 on for our own claims.
        claim: the finding in words.
        statistic: what the number is.
        stat: computes the statistic from a lookup (None when an input is missing).
        rule: the verdict rule in words.
        holds: True when the finding holds (given the lookup; None when unknown).
        flips: True when the opposite holds.
        corpus_dependent: False for a finding whose inputs read no corpus (its value on a
            further corpus is the headline run's).
    """

    number: int
    claim: str
    statistic: str
    stat: Stat
    rule: str
    holds: Callable[[Lookup], bool | None]
    flips: Callable[[Lookup], bool | None]
    corpus_dependent: bool = True

    def verdict(self, v: Lookup) -> str:
        """``holds``, ``flips``, ``weakens`` or ``n/a`` (an input is missing)."""
        if self.stat(v) is None:
            return "n/a"
        h, f = self.holds(v), self.flips(v)
        if h is None or f is None:
            return "n/a"
        return "holds" if h else ("flips" if f else "weakens")


def _known(vals: Sequence[float | None]) -> list[float]:
    return [x for x in vals if x is not None]


def _mean(vals: Sequence[float | None]) -> float | None:
    k = _known(vals)
    return sum(k) / len(k) if len(k) == len(vals) and k else None


def _on(stat: Stat, test: Callable[[float], bool]) -> Callable[[Lookup], bool | None]:
    """``test`` applied to the statistic (None when it is unknown)."""

    def f(v: Lookup) -> bool | None:
        x = stat(v)
        return None if x is None else test(x)

    return f


def _lexical_gap(v: Lookup) -> float | None:
    a, b = v(ndcg("sqlite-fts", "lexical")), v(ndcg("file-vec", "lexical"))
    return a - b if need(a, b) else None


def _structural_recovery(v: Lookup) -> float | None:
    inside = _mean([v(ndcg("pg-hnsw", c)) for c in STRUCTURAL])
    alone = _mean([v(ndcg("file-vec", c)) for c in STRUCTURAL])
    return inside - alone if need(inside, alone) else None


#: exact-count rate on aggregates: the worst DBMS arm minus the best file arm
_exact_count_gap = min_minus_max(
    [("by_class", a, "aggregate", "exact_count_rate") for a in DBMS_ARMS],
    [("by_class", a, "aggregate", "exact_count_rate") for a in FILE_ARMS],
)
#: bytes per memory, pg-hybrid over sqlite-fts
_storage_ratio = ratio_of(
    ("build", "pg-hybrid", "bytes_per_memory"), ("build", "sqlite-fts", "bytes_per_memory")
)


def _fts_share_of_best(v: Lookup) -> float | None:
    overall = _known([v(ndcg(a)) for a in REFERENCE_ARMS])
    fts = v(ndcg("sqlite-fts"))
    return fts / max(overall) if fts is not None and overall and max(overall) > 0 else None


def _fts_best_holds(v: Lookup) -> bool | None:
    share, ratio = _fts_share_of_best(v), _storage_ratio(v)
    return None if not need(share, ratio) else share >= 0.95 and ratio >= 2


def _fts_best_flips(v: Lookup) -> bool | None:
    share, ratio = _fts_share_of_best(v), _storage_ratio(v)
    return None if not need(share, ratio) else share < 0.85 or ratio < 1


def _fill_at_one(v: Lookup) -> float | None:
    return v(("postfilter", POSTFILTER_ARM, 1, "fill_rate"))


def _jsonl_slope(v: Lookup) -> float | None:
    """Log-log slope of file-jsonl's p50 against the corpus size, smallest to largest size."""
    p0, p1 = (
        v(("scaling", "file-jsonl", "xs", "p50_ms")),
        v(("scaling", "file-jsonl", "l", "p50_ms")),
    )
    n0, n1 = v(("size", "xs", "memories")), v(("size", "l", "memories"))
    if not need(p0, p1, n0, n1) or min(p0, p1, n0, n1) <= 0 or n1 == n0:
        return None
    return math.log(p1 / p0) / math.log(n1 / n0)


def _rewrite_unreadable(v: Lookup) -> float | None:
    return v(("crash", "file-rewrite", "unreadable"))


def _crash_holds(v: Lookup) -> bool | None:
    safe, bad = durable_crash_unreadable(v), _rewrite_unreadable(v)
    return None if not need(safe, bad) else safe == 0 and bad >= 1


def _crash_flips(v: Lookup) -> bool | None:
    safe = durable_crash_unreadable(v)
    return None if safe is None else safe > 0


def _json_lost(v: Lookup) -> float | None:
    return v(("lost", "json-file", "threads", "lost_share"))


def _lost_holds(v: Lookup) -> bool | None:
    j, d = _json_lost(v), sql_lost_increments(v)
    return None if not need(j, d) else j >= 0.5 and d == 0


def _lost_flips(v: Lookup) -> bool | None:
    j, d = _json_lost(v), sql_lost_increments(v)
    return None if not need(j, d) else d > 0 or j == 0


def _stale_after_repair(v: Lookup) -> float | None:
    return v(("anomaly", ANOMALY_ARM, "stale_fraction"))


def _cosine(v: Lookup, cls: str) -> float | None:
    return v(("validation", cls, "mean_cosine"))


def _lexical_cosine_gap(v: Lookup) -> float | None:
    lex, rnd = _cosine(v, "lexical"), _cosine(v, "random_pairs")
    return lex - rnd if need(lex, rnd) else None


def _semantic_cosine_gap(v: Lookup) -> float | None:
    sem, rnd = _cosine(v, "semantic"), _cosine(v, "random_pairs")
    return sem - rnd if need(sem, rnd) else None


def _cosine_holds(v: Lookup) -> bool | None:
    lex, sem = _lexical_cosine_gap(v), _semantic_cosine_gap(v)
    return None if not need(lex, sem) else abs(lex) <= 0.10 and sem >= 0.30


def _cosine_flips(v: Lookup) -> bool | None:
    lex, sem = _lexical_cosine_gap(v), _semantic_cosine_gap(v)
    return None if not need(lex, sem) else lex >= sem or sem <= 0.10


#: The twelve findings of docs/STUDY.md §7, in its order.
HEADLINE_FINDINGS: tuple[HeadlineFinding, ...] = (
    HeadlineFinding(
        1,
        "Dense retrieval is near-random on identifier (lexical) queries; an inverted index is not",
        "lexical nDCG@10, sqlite-fts − file-vec",
        _lexical_gap,
        "holds ≥ 0.50; flips ≤ 0",
        _on(_lexical_gap, lambda x: x >= 0.50),
        _on(_lexical_gap, lambda x: x <= 0),
    ),
    HeadlineFinding(
        2,
        "Pure similarity collapses on the five structural classes; the same vectors inside "
        "a DBMS recover",
        "mean structural-class nDCG@10, pg-hnsw − file-vec",
        _structural_recovery,
        "holds ≥ 0.20; flips ≤ 0",
        _on(_structural_recovery, lambda x: x >= 0.20),
        _on(_structural_recovery, lambda x: x <= 0),
    ),
    HeadlineFinding(
        3,
        "Hybrid fusion lowers currency below the B-tree arms",
        "currency nDCG@10, hybrid − B-tree (the larger of sqlite and pg)",
        hybrid_currency_drop,
        "holds ≤ −0.10; flips ≥ 0",
        _on(hybrid_currency_drop, lambda x: x <= -0.10),
        _on(hybrid_currency_drop, lambda x: x >= 0),
    ),
    HeadlineFinding(
        4,
        "Every DBMS arm returns the exact count on aggregates; the file arms never do",
        "exact-count rate, least DBMS arm − best file arm",
        _exact_count_gap,
        "holds = 1; flips ≤ 0",
        _on(_exact_count_gap, lambda x: x >= 1 - 1e-9),
        _on(_exact_count_gap, lambda x: x <= 0),
    ),
    HeadlineFinding(
        5,
        "sqlite-fts is about as good overall as the best of the study's arms at a fraction "
        "of pg-hybrid's storage",
        "overall nDCG@10, sqlite-fts ÷ best study arm (storage ratio in the rule)",
        _fts_share_of_best,
        "holds ≥ 0.95 with pg-hybrid ≥ 2× sqlite-fts bytes per memory; flips < 0.85 or < 1×",
        _fts_best_holds,
        _fts_best_flips,
    ),
    HeadlineFinding(
        6,
        "Post-filtering at overfetch ×1 leaves result slots empty",
        f"fill rate at ×1 ({POSTFILTER_ARM})",
        _fill_at_one,
        "holds ≤ 0.75; flips ≥ 0.95",
        _on(_fill_at_one, lambda x: x <= 0.75),
        _on(_fill_at_one, lambda x: x >= 0.95),
    ),
    HeadlineFinding(
        7,
        "file-jsonl recall latency grows linearly with the corpus",
        "log-log slope of file-jsonl p50 against memories, smallest to largest size",
        _jsonl_slope,
        "holds 0.7–1.3; flips < 0.3 (flat, like an index)",
        _on(_jsonl_slope, lambda x: 0.7 <= x <= 1.3),
        _on(_jsonl_slope, lambda x: x < 0.3),
        corpus_dependent=False,
    ),
    HeadlineFinding(
        8,
        "Rewriting one JSON document can lose everything on a crash; JSONL and the DBMS "
        "arms never do",
        "file-rewrite trials left unreadable (append, SQLite, Postgres in the rule)",
        _rewrite_unreadable,
        "holds ≥ 1 with 0 for file-append + sqlite + postgres-writer; flips if those > 0",
        _crash_holds,
        _crash_flips,
        corpus_dependent=False,
    ),
    HeadlineFinding(
        9,
        "The file store loses most concurrent increments; the DBMS arms lose none",
        "lost share, JSON file, threads (SQL stores' losses in the rule)",
        _json_lost,
        "holds ≥ 0.5 with 0 lost by sqlite-update + postgres-update (threads and "
        "processes); flips if those lose any or the file none",
        _lost_holds,
        _lost_flips,
        corpus_dependent=False,
    ),
    HeadlineFinding(
        10,
        "A top-10 repair leaves most restatements stale",
        f"stale share after a top-10 repair ({ANOMALY_ARM})",
        _stale_after_repair,
        "holds ≥ 0.40; flips ≤ 0.10",
        _on(_stale_after_repair, lambda x: x >= 0.40),
        _on(_stale_after_repair, lambda x: x <= 0.10),
    ),
    HeadlineFinding(
        11,
        "Most of the workload needs a predicate, a join or an aggregate",
        "share of queries not answerable by similarity alone",
        lambda v: v(("predicate_share",)),
        "holds ≥ 0.50; flips < 0.40",
        _on(lambda v: v(("predicate_share",)), lambda x: x >= 0.50),
        _on(lambda v: v(("predicate_share",)), lambda x: x < 0.40),
    ),
    HeadlineFinding(
        12,
        "Lexical queries sit at random-pair cosine; semantic queries far above",
        "mean cosine, lexical − random pairs (semantic − random in the rule)",
        _lexical_cosine_gap,
        "holds |x| ≤ 0.10 with semantic − random ≥ 0.30; flips if lexical ≥ semantic or "
        "semantic − random ≤ 0.10",
        _cosine_holds,
        _cosine_flips,
    ),
)


#: The arm built from the measurements (docs/arms/sqlite-gated.md) whose claim finding 13 checks.
RECOMMENDED_ARM = "sqlite-gated"


#: How far below the best other arm the recommended arm may fall in any class.
CLASS_SLACK = 0.03


_CLASSES = (*STRUCTURAL, "lexical", "semantic", "hybrid")


def _design_margin(v: Lookup) -> float | None:
    a, b = v(ndcg(RECOMMENDED_ARM)), v(("best_other", RECOMMENDED_ARM, "all", "ndcg_at_10"))
    return a - b if need(a, b) else None


def _design_worst_class(v: Lookup) -> float | None:
    gaps = []
    for c in _CLASSES:
        a, b = v(ndcg(RECOMMENDED_ARM, c)), v(("best_other", RECOMMENDED_ARM, c, "ndcg_at_10"))
        if need(a, b):
            gaps.append(a - b)
    return min(gaps) if gaps else None


def _design_holds(v: Lookup) -> bool | None:
    margin, worst = _design_margin(v), _design_worst_class(v)
    return None if not need(margin, worst) else margin > 0 and worst >= -CLASS_SLACK - 1e-9


#: The project's own claims, checked like the study's: the recommended design's.
DESIGN_FINDINGS: tuple[HeadlineFinding, ...] = (
    HeadlineFinding(
        13,
        f"Beyond the study: the recommended design ({RECOMMENDED_ARM}) ranks first overall "
        f"and within {CLASS_SLACK} of the best other arm in every class",
        f"overall nDCG@10, {RECOMMENDED_ARM} − the best other arm run on the corpus "
        "(the worst class gap in the rule)",
        _design_margin,
        f"holds > 0 with every class ≥ −{CLASS_SLACK}; flips < 0",
        _design_holds,
        _on(_design_margin, lambda x: x < 0),
    ),
)


#: Every finding the findings table shows, in its row order.
ALL_FINDINGS: tuple[HeadlineFinding, ...] = HEADLINE_FINDINGS + DESIGN_FINDINGS
