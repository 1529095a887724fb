"""The findings table: every finding evaluated on every result tree, with a verdict.

The findings are declared in ``reference/data/findings.yaml`` (the study's twelve, docs/STUDY.md
§7, and the project's own). Each computes one statistic from a lookup (``ref -> value``,
the keys of :class:`agentmem.report.reference.OurResults`), on the published numbers (the
study's value) and on each of our result trees alike, and decides a verdict by a stated
rule: **holds** (the finding's direction with at least the stated margin), **flips** (the
opposite direction) or **weakens** (in between). A finding whose inputs a run lacks is
``n/a``.

:func:`findings_table` evaluates them on the headline run and on every further corpus of
config ``robustness`` (:mod:`agentmem.robustness`): corpus seeds, design variants, the
variants' baseline and further embedding models. Three findings do not depend on the corpus
or the model (the file-jsonl scaling sweep, the crash and the lost-update trials are not
re-run per corpus); their value on a further corpus is the headline run's, marked
``carried``.

Beside the arms as shipped, the headline, seed and study corpora are evaluated under the
study's implementation choices (:data:`agentmem.choices.RUNS_BY_KIND`: all of them, and on
the study's corpus each alone); the ``choices`` column names the configuration, and the
Markdown shows them as the sensitivity table (docs/arms/choices.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from agentmem.choices import AS_SHIPPED, RUNS_BY_KIND, STUDY
from agentmem.io import write_csv
from agentmem.report.reference import (
    OurResults,
    published_lookup,
)
from agentmem.report.reference.findings import (
    ALL_FINDINGS,
    VERDICTS,
)
from agentmem.report.reference.records import Lookup
from agentmem.report.stats import seed_interval

FINDINGS_SCHEMA: dict[str, pl.DataType] = {
    "finding": pl.Int64,
    "claim": pl.String,
    "statistic": pl.String,
    "rule": pl.String,
    "corpus": pl.String,
    "choices": pl.String,
    "kind": pl.String,
    "size": pl.String,
    "value": pl.Float64,
    "verdict": pl.String,
    "carried": pl.Boolean,
}
"""Columns of :func:`findings_table` (one row per finding × corpus)."""


@dataclass(frozen=True)
class Tree:
    """One result tree the findings are evaluated on.

    Attributes:
        corpus: column name (``study``, ``default``, ``seed-<n>``, a variant, ``default-<size>``).
        kind: ``study``, ``headline``, or the :class:`agentmem.robustness.RobustnessCorpus`
            kind (``seed``, ``variant``, ``baseline``, ``model``).
        size: its corpus size (None for the study).
        root: the results directory (None for the study).
        choices: the configuration of the study's implementation choices the arms ran
            under (:data:`agentmem.choices.CONFIGURATIONS`; the published numbers are the
            study's own, ``study``).
    """

    corpus: str
    kind: str
    size: str | None
    root: str | Path | None
    choices: str = AS_SHIPPED


def _lookup(tree: Tree, headline: OurResults) -> Lookup:
    if tree.root is None:
        pub = published_lookup()
        return lambda ref: pub.get(ref)
    if tree.kind == "headline" and tree.choices == AS_SHIPPED:
        return headline.get
    return OurResults(tree.root, tree.size, tree.choices).get


def findings_table(
    trees: Sequence[Tree], headline_root: str | Path, main_size: str
) -> pl.DataFrame:
    """Every finding of :data:`ALL_FINDINGS` on every tree (columns :data:`FINDINGS_SCHEMA`).

    Args:
        trees: the trees in column order; include a ``Tree("study", "study", None, None)``
            for the published values and the headline run as kind ``headline``.
        headline_root: the headline ``results`` directory (read for the findings that do
            not depend on the corpus).
        main_size: the headline run's main size.
    """
    headline = OurResults(headline_root, main_size)
    rows = []
    for tree in trees:
        v = _lookup(tree, headline)
        for f in ALL_FINDINGS:
            carried = tree.kind not in ("study", "headline") and not f.corpus_dependent
            use = headline.get if carried else v
            rows.append(
                {
                    "finding": f.number,
                    "claim": f.claim,
                    "statistic": f.statistic,
                    "rule": f.rule,
                    "corpus": tree.corpus,
                    "choices": tree.choices,
                    "kind": tree.kind,
                    "size": tree.size,
                    "value": f.stat(use),
                    "verdict": f.verdict(use),
                    "carried": carried,
                }
            )
    return pl.DataFrame(rows, schema=FINDINGS_SCHEMA)


SEEDS_SCHEMA: dict[str, pl.DataType] = {
    "finding": pl.Int64,
    "n_seeds": pl.Int64,
    "seed_mean": pl.Float64,
    "seed_ci_low": pl.Float64,
    "seed_ci_high": pl.Float64,
    "seed_verdicts": pl.String,
}
"""Columns of :func:`across_seeds`."""


def across_seeds(table: pl.DataFrame) -> pl.DataFrame:
    """Per finding: mean and 95 % t-interval of the value over the corpus seeds.

    The seeds are the seed corpora, and the headline run when they are at its size (a
    corpus of another size is not a draw of the same population). A finding that reads no
    corpus has no spread over seeds: its row carries the headline value, no interval and
    the verdict ``carried``.

    Returns:
        Columns :data:`SEEDS_SCHEMA`; ``seed_verdicts`` e.g. ``3 holds``, ``2 holds, 1 weakens``.
    """
    table = table.filter(pl.col("choices") == AS_SHIPPED)
    seed_sizes = set(table.filter(pl.col("kind") == "seed")["size"].to_list())
    head = table.filter(pl.col("kind") == "headline")
    kinds = ["seed"]
    if not seed_sizes or seed_sizes == set(head["size"].to_list()):
        kinds.append("headline")
    dependent = {f.number for f in ALL_FINDINGS if f.corpus_dependent}
    rows = []
    seeds = table.filter(pl.col("kind").is_in(kinds))
    for (num,), g in seeds.group_by(["finding"], maintain_order=True):
        vals = [x for x in g["value"].to_list() if x is not None]
        if num in dependent:
            ci = seed_interval(vals)
            counts = g.group_by("verdict", maintain_order=True).len()
            order = sorted(counts.iter_rows(), key=lambda r: VERDICTS.index(r[0]))
            n, summary = g.height, ", ".join(f"{c} {v}" for v, c in order)
        else:
            ci, n, summary, vals = None, 1, "carried", vals[:1]
        rows.append(
            {
                "finding": num,
                "n_seeds": n,
                "seed_mean": sum(vals) / len(vals) if vals else None,
                "seed_ci_low": ci[0] if ci else None,
                "seed_ci_high": ci[1] if ci else None,
                "seed_verdicts": summary,
            }
        )
    return pl.DataFrame(rows, schema=SEEDS_SCHEMA)


def as_shipped(table: pl.DataFrame) -> pl.DataFrame:
    """The findings table's published column and every corpus with the arms as shipped."""
    if "choices" not in table.columns:
        return table
    return table.filter((pl.col("kind") == "study") | (pl.col("choices") == AS_SHIPPED))


def _cell(value: float | None, verdict: str, carried: bool) -> str:
    if value is None:
        return "n/a"
    num = f"{value:.3g}" if abs(value) >= 10 else f"{value:.3f}"
    return f"{num} {verdict}" + (" (carried)" if carried else "")


def findings_markdown(table: pl.DataFrame, seeds: pl.DataFrame) -> str:
    """The findings as Markdown: a row per finding, a column per corpus, the seed interval.

    Then each finding's statistic and verdict rule, and the sensitivity table: the findings
    on the corpora run under the study's implementation choices, a column per corpus and
    configuration.
    """
    varied = sensitivity(table)
    table = as_shipped(table)
    corpora = list(dict.fromkeys(table["corpus"].to_list()))
    sizes = dict(zip(table["corpus"], table["size"], strict=True))
    head = ["#", "finding", *[f"{c} ({sizes[c]})" if sizes[c] else c for c in corpora]]
    head.append("across seeds: mean [95 % CI]")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by_seed = {r["finding"]: r for r in seeds.iter_rows(named=True)}
    for (num,), g in table.group_by(["finding"], maintain_order=True):
        cells = {
            r["corpus"]: _cell(r["value"], r["verdict"], r["carried"])
            for r in g.iter_rows(named=True)
        }
        s = by_seed.get(num)
        if s and s["seed_verdicts"] == "carried":
            spread = "carried (reads no corpus)"
        elif s and s["seed_mean"] is not None and s["seed_ci_low"] is not None:
            spread = (
                f"{s['seed_mean']:.3f} [{s['seed_ci_low']:.3f}, {s['seed_ci_high']:.3f}]; "
                f"{s['seed_verdicts']}"
            )
        else:
            spread = "n/a"
        lines.append(
            "| "
            + " | ".join([str(num), g["claim"][0], *[cells[c] for c in corpora], spread])
            + " |"
        )
    lines += ["", "| # | statistic | verdict rule |", "|---|---|---|"]
    for f in ALL_FINDINGS:
        lines.append(f"| {f.number} | {f.statistic} | {f.rule} |")
    lines += [
        "",
        "Verdicts: holds (the finding's direction with the stated margin), flips (the "
        "opposite), weakens (in between), n/a (an input is missing). A value marked "
        "(carried) is the headline run's: that finding reads no corpus (docs/ROBUSTNESS.md).",
    ]
    if varied.height:
        lines += ["", *_sensitivity_markdown(varied)]
    return "\n".join(lines) + "\n"


def sensitivity(table: pl.DataFrame) -> pl.DataFrame:
    """The findings table's rows of the corpora run under the study's choices.

    Args:
        table: :func:`findings_table`'s rows.

    Returns:
        The rows of every corpus of ours that was also run under a configuration other
        than ``as-shipped``, all its configurations, in the table's order (corpus, then
        configuration: as shipped first); empty when none was.
    """
    if "choices" not in table.columns:
        return table.clear()
    ours = table.filter(pl.col("kind") != "study")
    varied = ours.filter(pl.col("choices") != AS_SHIPPED)["corpus"].unique().to_list()
    return ours.filter(pl.col("corpus").is_in(varied))


def _sensitivity_markdown(both: pl.DataFrame) -> list[str]:
    """The sensitivity table: per finding, each corpus as shipped and under each configuration."""
    columns = list(dict.fromkeys(zip(both["corpus"], both["choices"], strict=True)))
    cells = {
        (r["finding"], r["corpus"], r["choices"]): _cell(r["value"], r["verdict"], r["carried"])
        for r in both.iter_rows(named=True)
    }
    head = ["#", *[f"{c}: {x}" for c, x in columns]]
    lines = [
        "## Under the study's implementation choices",
        "",
        f"Each finding on the arms as shipped ({AS_SHIPPED}) and with the study's term "
        f"extraction, tie-breaks and ts_rank_cd normalisation ({STUDY}); on the study's own "
        "corpus each choice alone as well (docs/arms/choices.md). Only the quality numbers "
        "change with a configuration.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for num in dict.fromkeys(both["finding"].to_list()):
        lines.append(
            "| "
            + " | ".join([str(num), *[cells.get((num, c, x), "n/a") for c, x in columns]])
            + " |"
        )
    return lines


def write_findings(
    trees: Sequence[Tree],
    headline_root: str | Path,
    main_size: str,
    csv_out: str | Path,
    md_out: str | Path,
    seeds_out: str | Path,
) -> pl.DataFrame:
    """Write ``findings.csv``, ``findings.md`` and the across-seed summary CSV.

    See :func:`findings_table` and :func:`across_seeds`; returns the findings table.
    """
    table = findings_table(trees, headline_root, main_size)
    seeds = across_seeds(table)
    write_csv(csv_out, table)
    write_csv(seeds_out, seeds)
    Path(md_out).write_text(findings_markdown(table, seeds))
    return table


def trees_from(
    corpora: Mapping[str, tuple[str, str, str]], headline_root: str | Path, main_size: str
) -> list[Tree]:
    """The study, the headline run, then ``corpora`` (id -> (kind, size, root)) in order.

    Each of our trees is there as shipped and then under each configuration of
    :data:`agentmem.choices.RUNS_BY_KIND` for its kind.
    """
    ours = [("default", "headline", main_size, headline_root)]
    ours += [(c, kind, size, root) for c, (kind, size, root) in corpora.items()]
    return [
        Tree("study", "study", None, None, STUDY),
        *(
            Tree(c, kind, size, root, choice)
            for c, kind, size, root in ours
            for choice in (AS_SHIPPED, *RUNS_BY_KIND.get(kind, ()))
        ),
    ]


def by_class_seeds(
    by_class: Mapping[str, str | Path], arms: Sequence[str], bootstrap_csv: str | Path | None
) -> pl.DataFrame:
    """nDCG@10 per arm × class across corpus seeds, beside the headline run's bootstrap.

    Args:
        by_class: seed label -> that corpus's by-class CSV (the headline run's first when it
            is one of the seeds).
        arms: the arms to keep (those run on every seed), in table order.
        bootstrap_csv: the headline run's ``bootstrap_ci.csv`` (None: no bootstrap columns).

    Returns:
        :func:`agentmem.report.stats.seed_spread`'s columns (mean, min, max, standard
        deviation and 95 % Student-t interval over seeds) plus ``boot_mean``,
        ``boot_ci_low``, ``boot_ci_high``: the headline run's nDCG@10 and its 95 %
        percentile bootstrap interval over queries (null without ``bootstrap_csv``).
    """
    from agentmem.report.stats import seed_spread

    spread = seed_spread(by_class).filter(pl.col("arm").is_in(list(arms)))
    order = {a: i for i, a in enumerate(arms)}
    spread = spread.sort(
        pl.col("arm").replace_strict(order, return_dtype=pl.Int64), maintain_order=True
    )
    boot = pl.DataFrame(
        schema={
            "arm": pl.String,
            "query_class": pl.String,
            "boot_mean": pl.Float64,
            "boot_ci_low": pl.Float64,
            "boot_ci_high": pl.Float64,
        }
    )
    if bootstrap_csv is not None:
        b = pl.read_csv(bootstrap_csv).filter(pl.col("metric") == "ndcg_at_10")
        boot = b.select(
            "arm",
            "query_class",
            pl.col("mean").cast(pl.Float64).alias("boot_mean"),
            pl.col("ci_low").cast(pl.Float64).alias("boot_ci_low"),
            pl.col("ci_high").cast(pl.Float64).alias("boot_ci_high"),
        )
    return spread.join(boot, on=["arm", "query_class"], how="left", maintain_order="left")


def write_by_class_seeds(
    by_class: Mapping[str, str | Path],
    arms: Sequence[str],
    bootstrap_csv: str | Path | None,
    out: str | Path,
) -> pl.DataFrame:
    """Write :func:`by_class_seeds` to ``out`` (CSV) and return it."""
    table = by_class_seeds(by_class, arms, bootstrap_csv)
    write_csv(out, table)
    return table
