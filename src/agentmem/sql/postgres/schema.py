"""The Postgres arms' tables and indexes: memory columns, DDL, index statements.

One shared schema; each arm builds only the columns and indexes it reads, so that
``storage()`` measures what the architecture needs::

    memories(memory_id text PRIMARY KEY, session_id, turn_no, seq, kind, body, fact_id,
             created_day, source, confidence, superseded_by, tokens, scope_id,
             entity_ids text[],
             embedding vector(384),                         -- pg-hnsw*, pg-hybrid
             tsv tsvector GENERATED ALWAYS AS
                 (to_tsvector('english', body)) STORED)      -- pg-gin, pg-hybrid
    memory_entities(memory_id, entity_id)                   -- the "join" capability
    B-tree indexes on session_id, created_day, fact_id, superseded_by,
        scope_id (partial: WHERE scope_id IS NOT NULL), memory_entities(entity_id, memory_id)
    GIN index on tsv; HNSW index on embedding (vector_cosine_ops, m=16, ef_construction=64)
"""

from __future__ import annotations

from psycopg import sql

from agentmem.arms.base import VECTOR_DIM
from agentmem.schema import postgres_ddl

#: ``maintenance_work_mem`` for index builds, so an HNSW graph of the ``l`` corpus
#: (33k x 384) is built in memory (pgvector warns and slows down past the limit).
BUILD_MAINTENANCE_WORK_MEM = "256MB"
#: Text-search configuration of the stored tsvector and of every tsquery.
TS_CONFIG = "english"

#: (column, COPY type, DDL type) of the memory columns, in COPY order.
MEMORY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("memory_id", "text", "text PRIMARY KEY"),
    ("session_id", "text", "text"),
    ("turn_no", "int4", "integer"),
    ("seq", "int8", "bigint"),
    ("kind", "text", "text"),
    ("body", "text", "text NOT NULL"),
    ("fact_id", "text", "text"),
    ("created_day", "int4", "integer"),
    ("source", "text", "text"),
    ("confidence", "float8", "double precision"),
    ("superseded_by", "text", "text"),
    ("tokens", "int4", "integer"),
    ("scope_id", "text", "text"),
    ("entity_ids", "text[]", "text[] NOT NULL DEFAULT '{}'"),
)

#: Names of :data:`MEMORY_COLUMNS`, in COPY order.
MEMORY_NAMES: tuple[str, ...] = tuple(c for c, _, _ in MEMORY_COLUMNS)


def table_ddl(*, vectors: bool, fts: bool) -> list[sql.Composable]:
    """Return CREATE TABLE statements: the schema declaration plus the arm's access path.

    ``memories`` and ``memory_entities`` come from :func:`agentmem.schema.postgres_ddl`;
    the arm adds the denormalised ``entity_ids`` array, and by layout the ``embedding``
    column and the generated English ``tsvector`` (constants, never user input).

    Args:
        vectors: add ``embedding vector(384) NOT NULL``.
        fts: add the generated ``tsv`` column.
    """
    extra = ["entity_ids text[] NOT NULL DEFAULT '{}'"]
    if vectors:
        extra.append(f"embedding vector({int(VECTOR_DIM)}) NOT NULL")
    if fts:
        extra.append(f"tsv tsvector GENERATED ALWAYS AS (to_tsvector('{TS_CONFIG}', body)) STORED")
    creates, _ = postgres_ddl(("memories", "memory_entities"), extra_columns={"memories": extra})
    return [sql.SQL(c) for c in creates]  # type: ignore[arg-type]


def index_ddl(*, vectors: bool, fts: bool, m: int, ef_construction: int) -> list[sql.Composable]:
    """Return CREATE INDEX statements: the schema's B-tree indexes; GIN and HNSW by layout.

    The HNSW index gets ``m`` / ``ef_construction`` as literals (index storage
    parameters cannot be bound; both are validated ints).

    Args:
        vectors: add the HNSW index on ``embedding`` (``vector_cosine_ops``).
        fts: add the GIN index on ``tsv``.
        m: HNSW ``m`` (pgvector default 16).
        ef_construction: HNSW build candidate list size (pgvector default 64).
    """
    _, indexes = postgres_ddl(("memories", "memory_entities"))
    out: list[sql.Composable] = [sql.SQL(i) for i in indexes]  # type: ignore[arg-type]
    if fts:
        out.append(sql.SQL("CREATE INDEX memories_tsv_idx ON memories USING gin (tsv)"))
    if vectors:
        out.append(
            sql.SQL(
                "CREATE INDEX memories_embedding_idx ON memories "
                "USING hnsw (embedding vector_cosine_ops) WITH (m = {}, ef_construction = {})"
            ).format(sql.Literal(int(m)), sql.Literal(int(ef_construction)))
        )
    return out
