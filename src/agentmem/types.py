"""The records every layer shares: queries, predicates, results, corpora, embeddings.

Ground truth (:mod:`agentmem.corpus`), measurement (:mod:`agentmem.metrics`,
:mod:`agentmem.summarise`) and the arms all speak these types; this module imports none
of them. Schemas of the tables are in docs/DATA.md.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ENTITY_SCHEMA",
    "FACT_SCHEMA",
    "MEMORY_SCHEMA",
    "PREDICATE_FIELDS",
    "PREDICATE_OPS",
    "QRELS_SCHEMA",
    "QUERY_SCHEMA",
    "VECTOR_DIM",
    "Corpus",
    "Embeddings",
    "Predicate",
    "Query",
    "Result",
]

#: Embedding dimension (all-MiniLM-L6-v2); the one definition every arm uses.
VECTOR_DIM = 384

#: Fields a structured predicate may constrain, with the column type they compare to.
PREDICATE_FIELDS: dict[str, type] = {
    "created_day": int,
    "session_id": str,
    "fact_id": str,
    "superseded_by": str,
    "scope_id": str,
}
PredicateOp = Literal["<=", "=", "is_null"]
PREDICATE_OPS: tuple[str, ...] = ("<=", "=", "is_null")


@dataclass(frozen=True)
class Predicate:
    """A structured filter on memory metadata, as an agent's tool call would carry it.

    Attributes:
        field: one of :data:`PREDICATE_FIELDS` (``created_day``, ``session_id``,
            ``fact_id``, ``superseded_by``, ``scope_id``).
        op: ``"<="`` (only for ``created_day``), ``"="`` or ``"is_null"``.
        value: the comparison value (``int`` day for ``created_day``, ``str`` id
            otherwise); ``None`` for ``is_null``.

    Raises:
        ValueError: on an unknown field or op, a value of the wrong type, or a day outside
            the signed 64-bit range (SQLite's and PostgreSQL's ``bigint``).
    """

    field: str
    op: str
    value: int | str | None = None

    def __post_init__(self) -> None:
        if self.field not in PREDICATE_FIELDS:
            raise ValueError(
                f"predicate field {self.field!r} is not one of {sorted(PREDICATE_FIELDS)}"
            )
        if self.op not in PREDICATE_OPS:
            raise ValueError(f"predicate op {self.op!r} is not one of {PREDICATE_OPS}")
        if self.op == "is_null":
            if self.value is not None:
                raise ValueError("predicate op 'is_null' takes no value")
            return
        if self.op == "<=" and self.field != "created_day":
            raise ValueError(f"predicate op '<=' applies to created_day only, not {self.field}")
        want = PREDICATE_FIELDS[self.field]
        if not isinstance(self.value, want) or isinstance(self.value, bool):
            raise ValueError(
                f"predicate {self.field} {self.op} needs a {want.__name__} value, "
                f"got {self.value!r}"
            )
        if want is int and not -(2**63) <= self.value < 2**63:  # type: ignore[operator]
            raise ValueError(
                f"predicate {self.field} {self.op} {self.value}: outside the 64-bit "
                "integer range the stores hold"
            )

    @classmethod
    def parse(cls, field: str | None, op: str | None, value: str | None) -> Predicate | None:
        """Build a predicate from the three string columns of ``queries.parquet``.

        Args:
            field: predicate field name, or ``None`` for "no predicate".
            op: predicate op.
            value: the value as text (days are parsed as ``int``).

        Returns:
            The predicate, or ``None`` when ``field`` is ``None``.

        Raises:
            ValueError: as :class:`Predicate`, or when a day is not an integer.
        """
        if field is None:
            return None
        if op == "is_null":
            return cls(field, op, None)
        if field == "created_day":
            try:
                day = int(str(value))
            except ValueError as exc:
                raise ValueError(
                    f"created_day predicate value {value!r} is not an integer"
                ) from exc
            return cls(field, str(op), day)
        return cls(field, str(op), value)

    def matches(self, row: dict[str, Any]) -> bool:
        """Evaluate the predicate on one memory row (a dict with the memory columns).

        Used by arms that post-filter in Python (file arms). ``row[field]`` missing is
        treated as ``None``.
        """
        v = row.get(self.field)
        if self.op == "is_null":
            return v is None
        if v is None:
            return False
        if self.op == "=":
            return v == self.value
        return v <= self.value  # type: ignore[operator]


@dataclass(frozen=True)
class Query:
    """One retrieval request.

    Attributes:
        query_id: id from ``queries.parquet``.
        text: the free text, untrusted (may hold quotes, ``*``, ``NEAR``, SQL, emoji...).
        embedding: float32 array of shape ``(384,)``, L2-normalised, from the shared cache.
        predicate: structured filter, or ``None``.
        wants_count: ``True`` for aggregate questions; arms that can count return
            :attr:`Result.count`.
        query_class: the class label (informational only; an arm must not branch on it).
        scope: whose memory this is (one user, one conversation): when set, every arm
            returns and counts only memories whose ``scope_id`` equals it, a hard filter
            applied whatever the arm does with :attr:`predicate` (memories with a null
            ``scope_id`` are outside every scope). ``None``: no scope, all memories.
    """

    query_id: str
    text: str
    embedding: np.ndarray
    predicate: Predicate | None = None
    wants_count: bool = False
    query_class: str = ""
    scope: str | None = None

    def __post_init__(self) -> None:
        if self.scope is not None and (not isinstance(self.scope, str) or not self.scope):
            raise ValueError(f"query scope must be a non-empty string or None, got {self.scope!r}")

    @functools.cached_property
    def scope_predicate(self) -> Predicate | None:
        """``scope_id = scope`` as a :class:`Predicate`, or ``None`` for an unscoped query.

        Built once per query (the query is frozen).
        """
        return None if self.scope is None else Predicate("scope_id", "=", self.scope)

    @functools.cached_property
    def filters(self) -> tuple[Predicate, ...]:
        """Every filter the query carries, to be AND-ed: the scope first, then the predicate.

        Built once per query (the query is frozen).
        """
        return tuple(p for p in (self.scope_predicate, self.predicate) if p is not None)


@dataclass
class Result:
    """An arm's answer: ranked memory ids (best first, at most ``k``) and an optional count.

    ``count`` is the exact number of matching memories for aggregate questions, or
    ``None`` when the arm cannot count (file and vector arms).
    """

    memory_ids: list[str]
    count: int | None = None


#: Columns and dtypes of a memory row (``memories.parquet``, docs/DATA.md); every corpus
#: source and every :meth:`Arm.remember` call uses these.
MEMORY_SCHEMA: dict[str, pl.DataType] = {
    "memory_id": pl.String,
    "session_id": pl.String,
    "turn_no": pl.Int32,
    "seq": pl.Int64,
    "kind": pl.String,
    "body": pl.String,
    "fact_id": pl.String,
    "created_day": pl.Int32,
    "source": pl.String,
    "confidence": pl.Float64,
    "superseded_by": pl.String,
    "tokens": pl.Int32,
    "entity_ids": pl.List(pl.String),
    "form": pl.String,  # id | para | correction | distractor (synthetic), turn (LoCoMo)
    "scope_id": pl.String,  # whose memory (one user / conversation); null: no scope
}

#: Columns and dtypes of a query row (``queries.parquet``, docs/DATA.md) of the synthetic
#: corpus; a dataset of real conversations adds the query's ``scope_id``.
QUERY_SCHEMA: dict[str, pl.DataType] = {
    "query_id": pl.String,
    "class": pl.String,
    "text": pl.String,
    "predicate_field": pl.String,
    "predicate_op": pl.String,
    "predicate_value": pl.String,
    "expected_count": pl.Int32,
    "similarity_expressible": pl.Boolean,
}
#: ``facts.parquet``: one row per fact (docs/DATA.md §1); a corpus without facts has none.
FACT_SCHEMA: dict[str, pl.DataType] = {
    "fact_id": pl.String,
    "subject_id": pl.String,
    "subject_type": pl.String,
    "service_id": pl.String,
    "predicate": pl.String,
    "object_value": pl.String,
    "memory_kind": pl.String,
    "valid_from_day": pl.Int32,
    "corrected_value": pl.String,
    "corrected_day": pl.Int32,
    "correction_memory_id": pl.String,
}
#: ``entities.parquet``: one row per world entity (docs/DATA.md §1).
ENTITY_SCHEMA: dict[str, pl.DataType] = {
    "entity_id": pl.String,
    "type": pl.String,
    "name": pl.String,
    "service_id": pl.String,
}
#: ``qrels.parquet``: one row per (query, relevant memory), its graded relevance.
QRELS_SCHEMA: dict[str, pl.DataType] = {
    "query_id": pl.String,
    "memory_id": pl.String,
    "grade": pl.Int8,
}


@dataclass
class Corpus:
    """The tables an arm ingests, as polars DataFrames (schemas in docs/DATA.md).

    Attributes:
        memories: one row per memory; columns memory_id, session_id, turn_no, seq,
            kind, body, fact_id, created_day, source, confidence, superseded_by, tokens,
            entity_ids (list[str]).
        sessions: one row per session (session_id, agent_id, start_day, ...).
        facts: one row per fact.
        entities: one row per world entity.
    """

    memories: pl.DataFrame
    sessions: pl.DataFrame | None = None
    facts: pl.DataFrame | None = None
    entities: pl.DataFrame | None = None


@dataclass
class Embeddings:
    """Vectors keyed by id (memory ids and query ids share one table).

    Attributes:
        ids: list of ids, length ``n``.
        matrix: float32 array ``(n, dim)``, rows L2-normalised.
    """

    ids: list[str]
    matrix: np.ndarray
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.ids):
            raise ValueError(
                f"embedding matrix shape {self.matrix.shape} does not match {len(self.ids)} ids"
            )
        self._index = {i: n for n, i in enumerate(self.ids)}

    @property
    def dim(self) -> int:
        """Vector dimension (384 for all-MiniLM-L6-v2)."""
        return int(self.matrix.shape[1])

    def get(self, ids: list[str]) -> np.ndarray:
        """Return the ``(len(ids), dim)`` float32 rows for ``ids``.

        Raises:
            KeyError: naming the first id that has no vector.
        """
        try:
            rows = [self._index[i] for i in ids]
        except KeyError as exc:
            raise KeyError(f"no embedding for id {exc.args[0]!r}") from None
        return self.matrix[rows]
