"""The published study's numbers (REFERENCE.md §1–4) as data, and our results beside them.

The study ("Persistent memory architecture in agents using DBMS", public capture
HKTITAN/dbms-agent-memory ``data/capture.json``, transcribed in ``REFERENCE.md``) is the
yardstick. Submodules:

- :mod:`.study`: the published figures, read from the data files under ``data/``;
- :mod:`.records`: lookup keys, :class:`Published`, :class:`Finding`, :data:`TOLERANCES`;
- :mod:`.published`: every published number as a record (:data:`PUBLISHED`);
- :mod:`.ours`: :class:`OurResults`, the reader of our result files;
- :mod:`.lookups` and :mod:`.findings`: the study's findings (:data:`FINDINGS`);
- :mod:`.comparison`: :func:`compare` and the verdicts;
- :mod:`.render`: :func:`write_vs_reference` (``results/tables/vs_reference.{md,csv}``).
"""

from agentmem.report.reference.comparison import (
    COMPARE_SCHEMA,
    FINDING_GROUP,
    compare,
    compare_results,
)
from agentmem.report.reference.findings import FINDINGS
from agentmem.report.reference.ours import OurResults
from agentmem.report.reference.published import (
    PUBLISHED,
    overall_published,
    published_lookup,
    published_numbers,
)
from agentmem.report.reference.records import TOLERANCES, Finding, Lookup, Published, Ref
from agentmem.report.reference.render import render_markdown, write_vs_reference
from agentmem.report.reference.study import (
    ANOMALY,
    ANOMALY_ARM,
    BUDGET_FTS_K1,
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

__all__ = [
    "ANOMALY",
    "ANOMALY_ARM",
    "BUDGET_FTS_K1",
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
