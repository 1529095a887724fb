"""Scoring runs on a prepared dataset at memory, evidence and group level (no LLM).

Definitions (``docs/DATASETS.md``, "Scoring"):

- ``memory``: the ranked memories against the qrels (score > 0 relevant, binary gains).
- ``evidence``: LoCoMo's proportional evidence recall (Maharana et al. 2024, official
  ``task_eval/evaluation.py``): per query |E(q) ∩ ∪_{m in top k} cover(m)| / |E(q)|, with
  E(q) the evidence units the query needs and cover(m) those memory m covers. MRR and Hit@1
  take the rank of the first memory covering a unit of E(q); nDCG@k is binary nDCG of the
  ranked list of newly covered units, one per rank, which is defined only when every memory
  of the dataset covers at most one unit (else NaN).
- ``group``: sessions ranked by their best (first) memory against ``qrels_group``.

recall@k (k = 5, 10, 25, 50), nDCG@k (Järvelin & Kekäläinen 2002), MRR (Voorhees,
TREC-8 QA) and Hit@1 come from :mod:`agentmem.metrics`; intervals are 95 % percentile
bootstrap over queries (Efron & Tibshirani 1993).

Fill (:func:`agentmem.metrics.fill_rate`): per query and cut-off k, min(returned, k) /
min(k, memories of the query's scope) — every memory of the dataset in the ``unscoped``
setting. It is the arm's answer's, the same at every level. An arm whose fill@k is below 1
returned fewer memories than it could on some query, so its recall@k counts fewer.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from agentmem.io import write_csv
from agentmem.metrics import (
    bootstrap_cis,
    fill_rate,
    ndcg_at_k,
    query_filters,
    ranked_lists,
    recall_at_k,
    reciprocal_rank,
    searchable_counts,
)

log = logging.getLogger(__name__)

LEVELS = ("memory", "evidence", "group")
RECALL_KS = (5, 10, 25, 50)
#: the deepest nDCG cut-off scored (``ndcg_at_10``)
NDCG_DEPTH = 10
_NO_UNITS: frozenset[str] = frozenset()
METRIC_COLUMNS = (
    "recall_at_5",
    "recall_at_10",
    "recall_at_25",
    "recall_at_50",
    "ndcg_at_10",
    "ndcg_at_5",
    "mrr",
    "hit_at_1",
)
#: fill of the arm's answers (:func:`agentmem.metrics.fill_rate`) at each recall cut-off,
#: and the share of queries answered short at the deepest one
FILL_COLUMNS = ("fill_at_5", "fill_at_10", "fill_at_25", "fill_at_50", "short_at_50")
KEY_COLUMNS = ("setting", "arm", "level", "category", "n_queries")
SCORE_COLUMNS = (*KEY_COLUMNS, *METRIC_COLUMNS, *FILL_COLUMNS)
#: the run depth the recall cut-offs need (the runner's ``k``)
RUN_K = max(RECALL_KS)
#: the category row over every query
ALL = "all"
#: the category row over the queries outside the tuning scopes (``score_dataset``)
HELD_OUT = "held-out"


def group_ranking(ranked: Sequence[str], group_of: Mapping[str, str]) -> list[str]:
    """Groups (sessions) of ``ranked`` best-first, each at the rank of its best memory.

    Raises:
        KeyError: when a ranked memory id is not in ``group_of``.
    """
    out: list[str] = []
    seen: set[str] = set()
    for m in ranked:
        g = group_of[m]
        if g not in seen:
            seen.add(g)
            out.append(g)
    return out


def ranked_scores(ranked: Sequence[str], relevant: set[str]) -> dict[str, float]:
    """The metric columns of one ranked list against its relevant set (binary gains).

    Raises:
        ValueError: when ``relevant`` is empty.
    """
    out = {f"recall_at_{k}": recall_at_k(ranked, relevant, k) for k in RECALL_KS}
    return out | {
        "ndcg_at_10": ndcg_at_k(ranked, relevant, 10),
        "ndcg_at_5": ndcg_at_k(ranked, relevant, 5),
        "mrr": reciprocal_rank(ranked, relevant),
        "hit_at_1": float(bool(ranked) and ranked[0] in relevant),
    }


def evidence_scores(
    ranked: Sequence[str],
    cover: Mapping[str, Collection[str]],
    needed: set[str],
    *,
    single_unit: bool,
) -> dict[str, float]:
    """The metric columns at evidence level for one query.

    Args:
        ranked: memory ids, best first.
        cover: memory id -> the evidence units it covers (a frozenset is used as is).
        needed: E(q), the evidence units the query needs (non-empty).
        single_unit: every memory of the dataset covers at most one unit; nDCG is NaN
            otherwise (ranks of memories and positions of units no longer agree).

    Returns:
        recall_at_k = |E(q) ∩ ∪_{m in top k} cover(m)| / |E(q)| (LoCoMo's recall_acc);
        mrr and hit_at_1 on the first memory covering a unit of E(q); ndcg_at_k binary on
        the ranked list of newly covered units (a memory adding no new unit holds its rank
        with no gain).

    Raises:
        ValueError: when ``needed`` is empty.
    """
    if not needed:
        raise ValueError("evidence recall is undefined for a query that needs no unit")
    # only the units of E(q) are tracked: a unit the query does not need never gains, so
    # the ranked list of newly covered units keeps a placeholder at its rank either way
    newly: list[str] = []
    found: set[str] = set()
    found_at: dict[int, int] = {}
    hits: set[str] = set()
    for i, m in enumerate(ranked, start=1):
        units = cover.get(m, ())
        useful = _NO_UNITS if needed.isdisjoint(units) else needed.intersection(units)
        if useful:
            hits.add(m)
            useful -= found
            found |= useful
        if single_unit and i <= NDCG_DEPTH:  # nDCG reads no deeper
            newly.append(next(iter(useful)) if len(useful) == 1 else f"\x00rank{i}")
        if i in RECALL_KS:
            found_at[i] = len(found)
    out = {}
    for k in RECALL_KS:
        out[f"recall_at_{k}"] = found_at.get(k, len(found)) / len(needed)
    out["ndcg_at_10"] = ndcg_at_k(newly, needed, 10) if single_unit else math.nan
    out["ndcg_at_5"] = ndcg_at_k(newly, needed, 5) if single_unit else math.nan
    out["mrr"] = reciprocal_rank(ranked, hits)
    out["hit_at_1"] = float(bool(ranked) and ranked[0] in hits)
    return out


def _sets(df: pl.DataFrame, key: str, col: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in zip(df[key], df[col], strict=True):
        out.setdefault(k, []).append(v)
    return out


def fill_scores(returned: int, searchable: int | None) -> dict[str, float]:
    """The fill columns of one answer of ``returned`` ids (:data:`FILL_COLUMNS`).

    Args:
        returned: ids the arm returned.
        searchable: memories the query could be answered from (its scope's; None: not
            known, the slots are k).

    Returns:
        ``fill_at_k`` = :func:`agentmem.metrics.fill_rate` for each k of
        :data:`RECALL_KS`, and ``short_at_50``: 1.0 when ``fill_at_50`` is below 1, else 0.0.
    """
    out = {f"fill_at_{k}": fill_rate(returned, k, searchable) for k in RECALL_KS}
    return out | {"short_at_50": float(out[f"fill_at_{RUN_K}"] < 1.0)}


@dataclass
class ScoringCorpus:
    """What scoring reads of a prepared dataset, loaded once for all of its runs.

    Built by :meth:`load`; :func:`score_dataset` scores its 40-odd runs against one.
    ``searchable`` counts are derived on first use for each setting (scoped or not).
    """

    path: Path
    queries: pl.DataFrame
    group_of: dict[str, str]
    gold: dict[str, dict[str, set[str]]]
    cover: dict[str, frozenset[str]]
    single_unit: bool
    _memories: pl.DataFrame = field(repr=False)
    _searchable: dict[bool, dict[str, int]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, corpus_dir: str | Path) -> ScoringCorpus:
        """Read the queries, memories, qrels (three levels) and evidence of ``corpus_dir``.

        Raises:
            OSError: a file of :func:`agentmem.external.prepare_dataset` is missing.
        """
        d = Path(corpus_dir)
        mem = pl.read_parquet(d / "memories.parquet")
        sets = {
            "memory": _sets(pl.read_parquet(d / "qrels.parquet"), "query_id", "memory_id"),
            "group": _sets(pl.read_parquet(d / "qrels_group.parquet"), "query_id", "session_id"),
            "evidence": _sets(
                pl.read_parquet(d / "query_evidence.parquet"), "query_id", "evidence_id"
            ),
        }
        evidence = _sets(pl.read_parquet(d / "evidence.parquet"), "memory_id", "evidence_id")
        cover = {m: frozenset(units) for m, units in evidence.items()}
        return cls(
            path=d,
            queries=pl.read_parquet(d / "queries.parquet"),
            group_of=dict(zip(mem["memory_id"], mem["session_id"], strict=True)),
            gold={level: {q: set(v) for q, v in g.items()} for level, g in sets.items()},
            cover=cover,
            single_unit=all(len(v) <= 1 for v in cover.values()),
            _memories=mem,
        )

    def searchable(self, scoped: bool) -> dict[str, int]:
        """``{query_id: memories its filters admit}`` with or without its scope."""
        if scoped not in self._searchable:
            filters = query_filters(self.queries, scoped=scoped)
            self._searchable[scoped] = searchable_counts(self._memories, filters)
        return self._searchable[scoped]


def per_query_scores(
    corpus_dir: str | Path,
    runs: pl.DataFrame,
    *,
    setting: str = "",
    arm: str = "",
    scoped: bool | None = None,
    corpus: ScoringCorpus | None = None,
) -> pl.DataFrame:
    """Score every query of one run at memory, evidence and group level.

    Args:
        corpus_dir: a directory written by :func:`agentmem.external.prepare_dataset`.
        runs: the runner's rows (query_id, rank, memory_id; a null memory_id marks an
            empty result).
        setting: the setting (e.g. ``scoped``), for the ``setting`` column and messages.
        arm: the arm name, for the ``arm`` column and messages.
        scoped: whether the run kept each query's scope, for the fill's slots; None:
            every setting but ``unscoped`` did (the runner's default).
        corpus: ``corpus_dir`` already loaded (:meth:`ScoringCorpus.load`); None reads it.

    Returns:
        One row per (query, level) where the query has a gold set at that level:
        setting, arm, query_id, category, level, :data:`METRIC_COLUMNS` and
        :data:`FILL_COLUMNS` (the fill of the query's answer, the same at every level).

    Raises:
        ValueError: a corpus query has no run rows, the run holds a query the corpus lacks,
            or a ranked memory id is not in the corpus.
    """
    c = corpus if corpus is not None else ScoringCorpus.load(corpus_dir)
    d = c.path
    who = f"run of {arm or 'an arm'}" + (f" ({setting})" if setting else "")
    queries = c.queries.select("query_id", "class")
    group_of, gold, cover = c.group_of, c.gold, c.cover
    searchable = c.searchable(setting != "unscoped" if scoped is None else scoped)
    ranked = ranked_lists(runs)
    extra = set(ranked) - set(queries["query_id"])
    if extra:
        raise ValueError(
            f"{who} holds {len(extra)} queries not in {d} (e.g. {sorted(extra)[0]}): "
            "run and corpus differ"
        )
    rows = []
    for qid, cat in queries.iter_rows():
        if qid not in ranked:
            raise ValueError(f"query {qid} has no rows in the {who}")
        r = ranked[qid]
        unknown = [m for m in r if m not in group_of]
        if unknown:
            raise ValueError(f"{who}: {unknown[0]} is not a memory of {d}")
        base = {"setting": setting, "arm": arm, "query_id": qid, "category": cat}
        fill = fill_scores(len(r), searchable[qid])
        if qid in gold["memory"]:
            mm = ranked_scores(r, gold["memory"][qid])
            rows.append(base | {"level": "memory"} | mm | fill)
        if qid in gold["evidence"]:
            ev = evidence_scores(r, cover, gold["evidence"][qid], single_unit=c.single_unit)
            rows.append(base | {"level": "evidence"} | ev | fill)
        if qid in gold["group"]:
            g = group_ranking(r, group_of)
            gg = ranked_scores(g, gold["group"][qid])
            rows.append(base | {"level": "group"} | gg | fill)
    schema = {
        "setting": pl.String,
        "arm": pl.String,
        "query_id": pl.String,
        "category": pl.String,
        "level": pl.String,
    } | dict.fromkeys((*METRIC_COLUMNS, *FILL_COLUMNS), pl.Float64)
    return pl.DataFrame(rows, schema=schema)


def _categories(corpus_dir: Path, present: Sequence[str]) -> list[str]:
    order: list[str] = []
    manifest = corpus_dir / "manifest.json"
    if manifest.is_file():
        order = list(json.loads(manifest.read_text()).get("categories") or [])
    cats = [c for c in order if c in present]
    cats += [c for c in dict.fromkeys(present) if c not in cats]
    return [c for c in cats if c != ALL] + [ALL]


def _held_out(queries: pl.DataFrame, tuning_scopes: Collection[str]) -> list[str] | None:
    """The ids of the queries outside ``tuning_scopes``; None unless that splits them."""
    if not tuning_scopes or "scope_id" not in queries.columns:
        return None
    scopes = set(queries["scope_id"].drop_nulls().to_list())
    missing = sorted(set(tuning_scopes) - scopes)
    if missing:
        log.warning("tuning scopes %s: no query has them", missing)
    held = queries.filter(~pl.col("scope_id").is_in(list(tuning_scopes)).fill_null(False))
    if held.height in (0, queries.height):
        return None
    return held["query_id"].to_list()


def _mean(values: pl.Series) -> float:
    if values.len() == 0 or values.is_nan().any():
        return math.nan
    return float(values.mean())  # type: ignore[arg-type]


def score_dataset(
    corpus_dir: str | Path,
    runs: Mapping[tuple[str, str], str | Path],
    out_csv: str | Path,
    ci_csv: str | Path,
    n_boot: int = 1000,
    seed: int = 0,
    tuning_scopes: Collection[str] = (),
) -> pl.DataFrame:
    """Score each (setting, arm) run at memory, evidence and group level, per category.

    Args:
        corpus_dir: a directory written by :func:`agentmem.external.prepare_dataset`.
        runs: ``(setting, arm)`` -> the runner's runs Parquet (query_id, rank, memory_id),
            produced with k = :data:`RUN_K` (50); table order follows the mapping's order.
        out_csv: the scores table to write (columns exactly :data:`SCORE_COLUMNS`).
        ci_csv: the confidence intervals to write: the key columns and, per metric,
            ``<m>``, ``<m>_lo``, ``<m>_hi`` (95 % percentile bootstrap over queries).
        n_boot: bootstrap resamples.
        seed: bootstrap seed (the same for every group, so the intervals are reproducible).
        tuning_scopes: the scopes some arm's parameters were fixed on; when some queries
            are in them and some are not, a :data:`HELD_OUT` row (before ``all``) scores
            the others. A scope no query has is logged as a warning.

    Returns:
        The scores table: one row per (setting, arm) × level (:data:`LEVELS`) × category
        (each category present, in ``dataset.json`` order, then ``held-out`` when
        ``tuning_scopes`` splits the queries, then ``all``). Metrics are means
        over the ``n_queries`` queries that have a gold set at that level; NaN where
        undefined (no query, or evidence-level nDCG on a dataset whose memories cover
        several units). The fill columns (:data:`FILL_COLUMNS`) are means over the same
        queries: ``fill_at_k`` the mean fill, ``short_at_50`` the share of queries whose
        answer held fewer than min(50, memories of their scope) ids. They have no
        interval in ``ci_csv``.

    Raises:
        ValueError: no runs given, or as :func:`per_query_scores`.
    """
    if not runs:
        raise ValueError("score_dataset needs at least one run")
    d = Path(corpus_dir)
    corpus = ScoringCorpus.load(d)
    parts = [
        per_query_scores(d, pl.read_parquet(p), setting=setting, arm=arm, corpus=corpus)
        for (setting, arm), p in runs.items()
    ]
    pq = pl.concat(parts)
    queries = corpus.queries
    cats = _categories(d, queries["class"].to_list())
    held = _held_out(queries, tuning_scopes)
    if held is not None:
        cats.insert(len(cats) - 1, HELD_OUT)
    rows, ci_rows = [], []
    for setting, arm in runs:
        run_rows = pq.filter((pl.col("setting") == setting) & (pl.col("arm") == arm))
        for level in LEVELS:
            sub = run_rows.filter(pl.col("level") == level)
            for cat in cats:
                if cat == ALL:
                    g = sub
                elif cat == HELD_OUT:
                    g = sub.filter(pl.col("query_id").is_in(held))
                else:
                    g = sub.filter(pl.col("category") == cat)
                base = {
                    "setting": setting,
                    "arm": arm,
                    "level": level,
                    "category": cat,
                    "n_queries": g.height,
                }
                means = {m: _mean(g[m]) for m in METRIC_COLUMNS}
                rows.append(base | means | {m: _mean(g[m]) for m in FILL_COLUMNS})
                ci = dict(base)
                defined = [m for m in METRIC_COLUMNS if not math.isnan(means[m])]
                cis = bootstrap_cis([g[m].to_numpy() for m in defined], n_boot=n_boot, seed=seed)
                bounds = dict(zip(defined, cis, strict=True))
                for m in METRIC_COLUMNS:
                    lo, hi = bounds.get(m, (math.nan, math.nan))
                    ci |= {m: means[m], f"{m}_lo": lo, f"{m}_hi": hi}
                ci_rows.append(ci)
    key_schema = {
        "setting": pl.String,
        "arm": pl.String,
        "level": pl.String,
        "category": pl.String,
        "n_queries": pl.Int64,
    }
    scores = pl.DataFrame(
        rows, schema=key_schema | dict.fromkeys((*METRIC_COLUMNS, *FILL_COLUMNS), pl.Float64)
    )
    ci_schema = dict(key_schema)
    for m in METRIC_COLUMNS:
        ci_schema |= {m: pl.Float64, f"{m}_lo": pl.Float64, f"{m}_hi": pl.Float64}
    write_csv(out_csv, scores)
    write_csv(ci_csv, pl.DataFrame(ci_rows, schema=ci_schema))
    return scores
