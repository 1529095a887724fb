"""Every published number and finding beside ours, with a verdict.

Our numbers come from another corpus generator, machine and engine build (native
PostgreSQL 18 instead of PGlite/WebAssembly, Linux instead of Windows), so a number is
*reproduced* when it lies within the tolerance of its kind
(:data:`~agentmem.report.reference.records.TOLERANCES`: e.g. ±0.10 for a score in [0, 1],
within ×3 for a latency), and for a retrieval score also when the published value lies
inside our 95 % bootstrap interval (``results/tables/bootstrap_ci.csv``, when present).
Study settings (trial counts, generator options) are marked ``same setting`` / ``other
setting``. A *finding* is reproduced when its rule holds on our numbers, whatever the
exact values: the orderings, not the decimals, are what must carry over.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.report.reference.findings import FINDINGS
from agentmem.report.reference.ours import OurResults
from agentmem.report.reference.published import PUBLISHED, published_lookup
from agentmem.report.reference.records import TOLERANCES, Published

COMPARE_SCHEMA: dict[str, pl.DataType] = {
    "section": pl.String,
    "group": pl.String,
    "item": pl.String,
    "published": pl.Float64,
    "ours": pl.Float64,
    "difference": pl.Float64,
    "verdict": pl.String,
    "tolerance": pl.String,
    "source": pl.String,
    "note": pl.String,
}
"""Columns of :func:`compare` (``results/tables/vs_reference.csv``)."""

FINDING_GROUP = "Findings"
"""``group`` of the rows that test findings."""

_CI_METRICS = ("ndcg_at_10", "recall_at_10", "mrr")
_UNLIKE = ("differs", "other setting")


def _number_verdict(p: Published, ours: float | None, res: OurResults) -> tuple[str, str]:
    """Verdict and extra note for one published number."""
    if ours is None:
        return "not measured", ""
    desc, ok = TOLERANCES[p.kind]
    note = ""
    within = ok(p.value, ours)
    if p.ref[0] == "by_class" and p.ref[3] in _CI_METRICS:
        ci = res.ci(p.ref[1], p.ref[2], p.ref[3])
        if ci is not None:
            note = f"ours 95 % CI [{ci[0]:.3f}, {ci[1]:.3f}]"
            within = within or ci[0] <= p.value <= ci[1]
    if p.kind in ("latency", "bytes", "tokens", "rank", "racy") and p.value and ours:
        note = f"×{ours / p.value:.2f}" + (f"; {note}" if note else "")
    if p.kind == "setting":
        return ("same setting" if within else "other setting"), note
    return ("reproduced" if within else "differs"), note


def compare(results_dir: str | Path, main_size: str | None = None) -> pl.DataFrame:
    """Every published number and finding beside ours.

    Args:
        results_dir: the ``results`` directory of a run.
        main_size: size of the headline tables (None: see :class:`OurResults`).

    Returns:
        Columns :data:`COMPARE_SCHEMA`; first every number of :data:`PUBLISHED` in
        document order, then the :data:`FINDINGS` (``group = "Findings"``, ``item`` = the
        claim, ``published``/``ours`` = the finding's statistic). ``difference`` is
        ``ours − published``. ``verdict``: ``reproduced`` / ``differs`` (numbers: within
        the kind's tolerance or, for retrieval scores, the published value inside our 95 %
        bootstrap CI; findings: the rule holds on ours), ``same setting`` / ``other
        setting`` for study settings, ``not measured`` when our input is missing.
    """
    return compare_results(OurResults(results_dir, main_size))


def compare_results(res: OurResults) -> pl.DataFrame:
    """:func:`compare` on an open reader (which then knows the missing inputs).

    Args:
        res: the reader of our results tree.

    Returns:
        The :func:`compare` table.
    """
    rows = []
    for p in PUBLISHED:
        ours = res.get(p.ref)
        verdict, extra = _number_verdict(p, ours, res)
        rows.append(
            {
                "section": p.section,
                "group": p.group,
                "item": p.item,
                "published": p.value,
                "ours": ours,
                "difference": None if ours is None else ours - p.value,
                "verdict": verdict,
                "tolerance": TOLERANCES[p.kind][0],
                "source": p.source,
                "note": "; ".join(
                    x for x in (extra, p.note, p.why if verdict in _UNLIKE else "") if x
                ),
            }
        )
    pub = published_lookup()
    for f in FINDINGS:
        pv = f.stat(pub.get)
        ov = f.stat(res.get)
        verdict = (
            "not measured" if ov is None else ("reproduced" if f.holds(res.get) else "differs")
        )
        rows.append(
            {
                "section": f.section,
                "group": FINDING_GROUP,
                "item": f.claim,
                "published": pv,
                "ours": ov,
                "difference": None if pv is None or ov is None else ov - pv,
                "verdict": verdict,
                "tolerance": f"{f.statistic}: {f.rule}",
                "source": f"{f.section} finding",
                "note": f.why,
            }
        )
    return pl.DataFrame(rows, schema=COMPARE_SCHEMA)
