"""The public names of this package and their submodules (read by lazy_loader.attach_stub)."""

from .comparison import (
    COMPARE_SCHEMA as COMPARE_SCHEMA,
    FINDING_GROUP as FINDING_GROUP,
    compare as compare,
    compare_results as compare_results,
)
from .findings import FINDINGS as FINDINGS, Finding as Finding
from .ours import OurResults as OurResults
from .published import (
    PUBLISHED as PUBLISHED,
    overall_published as overall_published,
    published_lookup as published_lookup,
    published_numbers as published_numbers,
)
from .records import TOLERANCES as TOLERANCES, Lookup as Lookup, Published as Published, Ref as Ref
from .render import render_markdown as render_markdown, write_vs_reference as write_vs_reference
from .study import (
    ANOMALY as ANOMALY,
    ANOMALY_ARM as ANOMALY_ARM,
    BUDGET_K1 as BUDGET_K1,
    BY_CLASS as BY_CLASS,
    CLASSES as CLASSES,
    CORPUS as CORPUS,
    CORPUS_SHARES as CORPUS_SHARES,
    CRASH as CRASH,
    CRASH_REWRITE_LOST as CRASH_REWRITE_LOST,
    CRASH_REWRITE_TEXT as CRASH_REWRITE_TEXT,
    CRASH_SQLITE_INTEGRITY_FAILURES as CRASH_SQLITE_INTEGRITY_FAILURES,
    DBMS_ARMS as DBMS_ARMS,
    DBMS_TEXT_ARMS as DBMS_TEXT_ARMS,
    DENSE_PROBE as DENSE_PROBE,
    DESIGN_PARAMS as DESIGN_PARAMS,
    EXACT_COUNT as EXACT_COUNT,
    FILE_ARMS as FILE_ARMS,
    GENERATOR as GENERATOR,
    IDENTIFIER_OVERLAP as IDENTIFIER_OVERLAP,
    LOST_UPDATE as LOST_UPDATE,
    OVERALL as OVERALL,
    OVERALL_COLUMNS as OVERALL_COLUMNS,
    POSTFILTER as POSTFILTER,
    POSTFILTER_ARM as POSTFILTER_ARM,
    POSTFILTER_QUERIES as POSTFILTER_QUERIES,
    PREDICATE_SHARE as PREDICATE_SHARE,
    QUERY_COUNTS as QUERY_COUNTS,
    REFERENCE_ARMS as REFERENCE_ARMS,
    RELEVANCE_RULES as RELEVANCE_RULES,
    RESTATEMENTS as RESTATEMENTS,
    SCALING_L as SCALING_L,
    SCALING_NDCG as SCALING_NDCG,
    SCALING_P50 as SCALING_P50,
    SIMILARITY_EXPRESSIBLE as SIMILARITY_EXPRESSIBLE,
    SIMILARITY_SHARE as SIMILARITY_SHARE,
    SIZES as SIZES,
    SUPERSEDED_FACTS as SUPERSEDED_FACTS,
    TEXT_ONLY_ARMS as TEXT_ONLY_ARMS,
    VALIDATION_COSINE as VALIDATION_COSINE,
    VECTOR_ARMS as VECTOR_ARMS,
    WORLD as WORLD,
    study_arms as study_arms,
)
