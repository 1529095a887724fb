"""The published study's numbers (docs/STUDY.md §1–4) as data, and our results beside them.

The study ("Persistent memory architecture in agents using DBMS", public capture
HKTITAN/dbms-agent-memory ``data/capture.json``, transcribed in ``docs/STUDY.md``) is the
yardstick. Submodules:

- :mod:`.study`: the published figures, read from the data files under ``data/``;
- :mod:`.records`: lookup keys, :class:`Published`, :data:`TOLERANCES`;
- :mod:`.published`: every published number as a record (:data:`PUBLISHED`);
- :mod:`.ours`: :class:`OurResults`, the reader of our result files;
- :mod:`.findings`: the findings engine, reading ``data/findings.yaml`` (:data:`FINDINGS`);
- :mod:`.comparison`: :func:`compare` and the verdicts;
- :mod:`.render`: :func:`write_vs_reference` (``results/tables/vs_reference.{md,csv}``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmem.report.reference.comparison import (
        COMPARE_SCHEMA,
        FINDING_GROUP,
        compare,
        compare_results,
    )
    from agentmem.report.reference.findings import FINDINGS, Finding
    from agentmem.report.reference.ours import OurResults
    from agentmem.report.reference.published import (
        PUBLISHED,
        overall_published,
        published_lookup,
        published_numbers,
    )
    from agentmem.report.reference.records import TOLERANCES, Lookup, Published, Ref
    from agentmem.report.reference.render import render_markdown, write_vs_reference
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
        DBMS_ARMS,
        DBMS_TEXT_ARMS,
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
        REFERENCE_ARMS,
        RELEVANCE_RULES,
        RESTATEMENTS,
        SCALING_L,
        SCALING_NDCG,
        SCALING_P50,
        SIMILARITY_EXPRESSIBLE,
        SIMILARITY_SHARE,
        SIZES,
        SUPERSEDED_FACTS,
        TEXT_ONLY_ARMS,
        VALIDATION_COSINE,
        VECTOR_ARMS,
        WORLD,
        study_arms,
    )

#: the submodule that defines each public name (imported on first use)
_SOURCES: dict[str, str] = {
    "ANOMALY": "agentmem.report.reference.study",
    "ANOMALY_ARM": "agentmem.report.reference.study",
    "BUDGET_K1": "agentmem.report.reference.study",
    "BY_CLASS": "agentmem.report.reference.study",
    "CLASSES": "agentmem.report.reference.study",
    "COMPARE_SCHEMA": "agentmem.report.reference.comparison",
    "CORPUS": "agentmem.report.reference.study",
    "CORPUS_SHARES": "agentmem.report.reference.study",
    "CRASH": "agentmem.report.reference.study",
    "CRASH_REWRITE_LOST": "agentmem.report.reference.study",
    "CRASH_REWRITE_TEXT": "agentmem.report.reference.study",
    "CRASH_SQLITE_INTEGRITY_FAILURES": "agentmem.report.reference.study",
    "DBMS_ARMS": "agentmem.report.reference.study",
    "DBMS_TEXT_ARMS": "agentmem.report.reference.study",
    "DENSE_PROBE": "agentmem.report.reference.study",
    "DESIGN_PARAMS": "agentmem.report.reference.study",
    "EXACT_COUNT": "agentmem.report.reference.study",
    "FILE_ARMS": "agentmem.report.reference.study",
    "FINDINGS": "agentmem.report.reference.findings",
    "FINDING_GROUP": "agentmem.report.reference.comparison",
    "GENERATOR": "agentmem.report.reference.study",
    "IDENTIFIER_OVERLAP": "agentmem.report.reference.study",
    "LOST_UPDATE": "agentmem.report.reference.study",
    "OVERALL": "agentmem.report.reference.study",
    "OVERALL_COLUMNS": "agentmem.report.reference.study",
    "POSTFILTER": "agentmem.report.reference.study",
    "POSTFILTER_ARM": "agentmem.report.reference.study",
    "POSTFILTER_QUERIES": "agentmem.report.reference.study",
    "PREDICATE_SHARE": "agentmem.report.reference.study",
    "PUBLISHED": "agentmem.report.reference.published",
    "QUERY_COUNTS": "agentmem.report.reference.study",
    "REFERENCE_ARMS": "agentmem.report.reference.study",
    "RELEVANCE_RULES": "agentmem.report.reference.study",
    "RESTATEMENTS": "agentmem.report.reference.study",
    "SCALING_L": "agentmem.report.reference.study",
    "SCALING_NDCG": "agentmem.report.reference.study",
    "SCALING_P50": "agentmem.report.reference.study",
    "SIMILARITY_EXPRESSIBLE": "agentmem.report.reference.study",
    "SIMILARITY_SHARE": "agentmem.report.reference.study",
    "SIZES": "agentmem.report.reference.study",
    "SUPERSEDED_FACTS": "agentmem.report.reference.study",
    "TEXT_ONLY_ARMS": "agentmem.report.reference.study",
    "TOLERANCES": "agentmem.report.reference.records",
    "VALIDATION_COSINE": "agentmem.report.reference.study",
    "VECTOR_ARMS": "agentmem.report.reference.study",
    "WORLD": "agentmem.report.reference.study",
    "Finding": "agentmem.report.reference.findings",
    "Lookup": "agentmem.report.reference.records",
    "OurResults": "agentmem.report.reference.ours",
    "Published": "agentmem.report.reference.records",
    "Ref": "agentmem.report.reference.records",
    "compare": "agentmem.report.reference.comparison",
    "compare_results": "agentmem.report.reference.comparison",
    "overall_published": "agentmem.report.reference.published",
    "published_lookup": "agentmem.report.reference.published",
    "published_numbers": "agentmem.report.reference.published",
    "render_markdown": "agentmem.report.reference.render",
    "study_arms": "agentmem.report.reference.study",
    "write_vs_reference": "agentmem.report.reference.render",
}

__all__ = [
    "ANOMALY",
    "ANOMALY_ARM",
    "BUDGET_K1",
    "BY_CLASS",
    "CLASSES",
    "COMPARE_SCHEMA",
    "CORPUS",
    "CORPUS_SHARES",
    "CRASH",
    "CRASH_REWRITE_LOST",
    "CRASH_REWRITE_TEXT",
    "CRASH_SQLITE_INTEGRITY_FAILURES",
    "DBMS_ARMS",
    "DBMS_TEXT_ARMS",
    "DENSE_PROBE",
    "DESIGN_PARAMS",
    "EXACT_COUNT",
    "FILE_ARMS",
    "FINDINGS",
    "FINDING_GROUP",
    "GENERATOR",
    "IDENTIFIER_OVERLAP",
    "LOST_UPDATE",
    "OVERALL",
    "OVERALL_COLUMNS",
    "POSTFILTER",
    "POSTFILTER_ARM",
    "POSTFILTER_QUERIES",
    "PREDICATE_SHARE",
    "PUBLISHED",
    "QUERY_COUNTS",
    "REFERENCE_ARMS",
    "RELEVANCE_RULES",
    "RESTATEMENTS",
    "SCALING_L",
    "SCALING_NDCG",
    "SCALING_P50",
    "SIMILARITY_EXPRESSIBLE",
    "SIMILARITY_SHARE",
    "SIZES",
    "SUPERSEDED_FACTS",
    "TEXT_ONLY_ARMS",
    "TOLERANCES",
    "VALIDATION_COSINE",
    "VECTOR_ARMS",
    "WORLD",
    "Finding",
    "Lookup",
    "OurResults",
    "Published",
    "Ref",
    "compare",
    "compare_results",
    "overall_published",
    "published_lookup",
    "published_numbers",
    "render_markdown",
    "study_arms",
    "write_vs_reference",
]


def __getattr__(name: str) -> Any:
    """A public name, from its submodule (:data:`_SOURCES`), imported on first use.

    The workflow's DAG needs only the study's arm names; the job of one figure or table then
    loads only the submodules it uses.
    """
    try:
        module = _SOURCES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
