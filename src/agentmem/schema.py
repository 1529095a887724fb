"""The one declaration of agentmem's relational schema, and everything rendered from it.

Entities, attributes, keys, relationships (foreign keys) and the specialization of
memories by kind are declared once in :data:`SCHEMA`. From it come:

- :func:`sqlite_ddl` / :func:`postgres_ddl`: the ``CREATE TABLE`` and ``CREATE INDEX``
  statements the SQLite and PostgreSQL arms execute (so the engines cannot disagree with
  each other or with the diagram);
- :func:`mermaid_er` / :func:`dot_er`: the ER diagram as Mermaid or Graphviz text;
- :mod:`agentmem.report.figures.er_diagram`: the same diagram drawn as a figure.

Arms add only what their access path needs on top (an FTS5 table, a tsvector column, an
embedding column and its HNSW index); those are architecture, not schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Column:
    """One attribute.

    Attributes:
        name: column name.
        kind: logical type: ``text``, ``int``, ``bigint``, ``real``, ``text[]``.
        nullable: whether NULL is allowed.
        references: ``"table.column"`` for a foreign key (a relationship), else ``None``.
        doc: what the attribute means.
    """

    name: str
    kind: str
    nullable: bool = True
    references: str | None = None
    doc: str = ""


@dataclass(frozen=True)
class Index:
    """A B-tree index: ``name`` over ``columns`` of its table.

    Attributes:
        name: index name.
        columns: indexed columns, in key order.
        where: condition of a partial index (SQL shared by SQLite and PostgreSQL, from
            code only), or ``None`` for a full index.
    """

    name: str
    columns: tuple[str, ...]
    where: str | None = None

    def ddl(self, table: str, sep: str = "") -> str:
        """Return the ``CREATE INDEX`` statement on ``table`` (``sep`` before the parenthesis)."""
        stmt = f"CREATE INDEX {self.name} ON {table}{sep}({', '.join(self.columns)})"
        return stmt + (f" WHERE {self.where}" if self.where else "")


@dataclass(frozen=True)
class Table:
    """One entity (or associative relation).

    Attributes:
        name: table name.
        columns: attributes in storage order.
        key: primary-key columns.
        indexes: secondary B-tree indexes.
        doc: what one row is.
        specialization: ``(discriminator column, subtypes)`` for a disjoint, total
            specialization (memories by kind).
    """

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    indexes: tuple[Index, ...] = ()
    doc: str = ""
    specialization: tuple[str, tuple[str, ...]] | None = None

    def column(self, name: str) -> Column:
        """Return the column called ``name``.

        Raises:
            KeyError: naming the table and the missing column.
        """
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name} has no column {name!r}")


@dataclass(frozen=True)
class Schema:
    """The whole relational schema: tables in dependency order."""

    tables: tuple[Table, ...] = field(default_factory=tuple)

    def table(self, name: str) -> Table:
        """Return the table called ``name`` (KeyError names it when absent)."""
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"schema has no table {name!r}")

    def relationships(self) -> list[tuple[str, str, str, str]]:
        """Foreign keys as ``(table, column, referenced table, referenced column)``."""
        out = []
        for t in self.tables:
            for c in t.columns:
                if c.references:
                    rt, rc = c.references.split(".")
                    out.append((t.name, c.name, rt, rc))
        return out


SCHEMA = Schema(
    tables=(
        Table(
            "agents",
            (Column("agent_id", "text", False), Column("role", "text")),
            key=("agent_id",),
            doc="an agent that writes memories",
        ),
        Table(
            "sessions",
            (
                Column("session_id", "text", False),
                Column("agent_id", "text", references="agents.agent_id"),
                Column("start_day", "int"),
                Column("end_day", "int"),
                Column("memories", "int"),
            ),
            key=("session_id",),
            doc="one working session of an agent",
        ),
        Table(
            "entities",
            (
                Column("entity_id", "text", False, doc="identifier such as CFG-799"),
                Column("type", "text"),
                Column("name", "text"),
                Column("service_id", "text", references="entities.entity_id"),
            ),
            key=("entity_id",),
            doc="a world record: service, config record, incident, decision, person, runbook",
        ),
        Table(
            "facts",
            (
                Column("fact_id", "text", False),
                Column("subject_id", "text", references="entities.entity_id"),
                Column("predicate", "text"),
                Column("object_value", "text"),
                Column("memory_kind", "text"),
                Column("valid_from_day", "int"),
                Column("corrected_value", "text"),
                Column("corrected_day", "int"),
            ),
            key=("fact_id",),
            doc="a subject-predicate-object triple with validity",
        ),
        Table(
            "memories",
            (
                Column("memory_id", "text", False),
                Column("session_id", "text", references="sessions.session_id"),
                Column("turn_no", "int"),
                Column("seq", "bigint", doc="insertion order; larger is newer"),
                Column("kind", "text", doc="episodic | semantic | procedural"),
                Column("body", "text", False),
                Column("fact_id", "text", references="facts.fact_id"),
                Column("created_day", "int"),
                Column("source", "text"),
                Column("confidence", "real"),
                Column(
                    "superseded_by",
                    "text",
                    references="memories.memory_id",
                    doc="the correction that replaced this memory (supersession)",
                ),
                Column("tokens", "int", doc="o200k tokens of body"),
                Column(
                    "scope_id",
                    "text",
                    doc="whose memory (one user / conversation); null: outside every scope",
                ),
            ),
            key=("memory_id",),
            indexes=(
                Index("memories_session_id_idx", ("session_id",)),
                Index("memories_created_day_idx", ("created_day",)),
                Index("memories_fact_id_idx", ("fact_id",)),
                Index("memories_superseded_by_idx", ("superseded_by",)),
                # partial: a scoped query's ``scope_id = ?`` implies it, and a store
                # without scopes (the synthetic corpus) pays no index bytes for them
                Index("memories_scope_id_idx", ("scope_id",), where="scope_id IS NOT NULL"),
            ),
            doc="one remembered statement (provenance: session, turn, source)",
            specialization=("kind", ("episodic", "semantic", "procedural")),
        ),
        Table(
            "memory_entities",
            (
                Column("memory_id", "text", False, references="memories.memory_id"),
                Column("entity_id", "text", False, references="entities.entity_id"),
            ),
            key=("memory_id", "entity_id"),
            indexes=(Index("memory_entities_entity_idx", ("entity_id", "memory_id")),),
            doc="which entities a memory mentions (many-to-many)",
        ),
    )
)

_SQLITE_TYPES = {"text": "TEXT", "int": "INTEGER", "bigint": "INTEGER", "real": "REAL"}
_PG_TYPES = {
    "text": "text",
    "int": "integer",
    "bigint": "bigint",
    "real": "double precision",
    "text[]": "text[]",
}


def _check(tables: tuple[str, ...]) -> list[Table]:
    return [SCHEMA.table(t) for t in tables]


def sqlite_ddl(
    tables: tuple[str, ...] = ("memories", "memory_entities"),
    *,
    rowid_alias: dict[str, str] | None = None,
    foreign_keys: bool = False,
) -> tuple[list[str], list[str]]:
    """SQLite ``CREATE TABLE`` and ``CREATE INDEX`` statements for ``tables``.

    Args:
        tables: table names from :data:`SCHEMA`.
        rowid_alias: table -> name of an ``INTEGER PRIMARY KEY`` rowid alias column to add
            first (FTS5 external content needs an integer rowid); the declared key then
            becomes ``UNIQUE``.
        foreign_keys: emit ``REFERENCES`` clauses (off by default: arms load only some
            tables, and SQLite does not enforce them unless asked).

    Returns:
        ``(create_tables, create_indexes)``.
    """
    creates, indexes = [], []
    for t in _check(tables):
        alias = (rowid_alias or {}).get(t.name)
        cols = [f"{alias} INTEGER PRIMARY KEY"] if alias else []
        for c in t.columns:
            d = f"{c.name} {_SQLITE_TYPES[c.kind]}"
            if not c.nullable:
                d += " NOT NULL"
            if alias and t.key == (c.name,):
                d += " UNIQUE"
            if foreign_keys and c.references and c.references.split(".")[0] in tables:
                rt, rc = c.references.split(".")
                d += f" REFERENCES {rt}({rc})"
            cols.append(d)
        if not alias:
            cols.append(f"PRIMARY KEY ({', '.join(t.key)})")
        creates.append(f"CREATE TABLE {t.name}(\n    " + ",\n    ".join(cols) + "\n)")
        indexes += [i.ddl(t.name) for i in t.indexes]
    return creates, indexes


def postgres_ddl(
    tables: tuple[str, ...] = ("memories", "memory_entities"),
    *,
    extra_columns: dict[str, list[str]] | None = None,
    foreign_keys: bool = False,
) -> tuple[list[str], list[str]]:
    """PostgreSQL ``CREATE TABLE`` and ``CREATE INDEX`` statements for ``tables``.

    Args:
        tables: table names from :data:`SCHEMA`.
        extra_columns: table -> extra column definitions an arm's access path needs
            (e.g. ``embedding vector(384)``, a generated ``tsvector``); appended verbatim,
            so they must come from code, never from user input.
        foreign_keys: emit ``REFERENCES`` clauses for tables created together.

    Returns:
        ``(create_tables, create_indexes)``.
    """
    creates, indexes = [], []
    for t in _check(tables):
        cols = []
        for c in t.columns:
            d = f"{c.name} {_PG_TYPES[c.kind]}"
            if not c.nullable:
                d += " NOT NULL"
            if foreign_keys and c.references and c.references.split(".")[0] in tables:
                rt, rc = c.references.split(".")
                d += f" REFERENCES {rt}({rc})"
            cols.append(d)
        cols += (extra_columns or {}).get(t.name, [])
        cols.append(f"PRIMARY KEY ({', '.join(t.key)})")
        creates.append(f"CREATE TABLE {t.name} (" + ", ".join(cols) + ")")
        indexes += [i.ddl(t.name, " ") for i in t.indexes]
    return creates, indexes


def mermaid_er() -> str:
    """The ER diagram in Mermaid ``erDiagram`` syntax (keys marked PK / FK)."""
    lines = ["erDiagram"]
    for t in SCHEMA.tables:
        lines.append(f"    {t.name} {{")
        for c in t.columns:
            tags = [x for x, on in (("PK", c.name in t.key), ("FK", bool(c.references))) if on]
            kind = c.kind.replace("[]", "_array")
            lines.append(f"        {kind} {c.name}{' ' + ','.join(tags) if tags else ''}")
        lines.append("    }")
    for table, col, rt, _rc in SCHEMA.relationships():
        lines.append(f'    {rt} ||--o{{ {table} : "{col}"')
    return "\n".join(lines) + "\n"


def dot_er() -> str:
    """The ER diagram as Graphviz DOT (record nodes, one edge per foreign key)."""
    out = ["digraph er {", "  rankdir=LR;", "  node [shape=record, fontsize=10];"]
    for t in SCHEMA.tables:
        fields = "|".join(
            f"{'* ' if c.name in t.key else ''}{c.name} : {c.kind}" for c in t.columns
        )
        out.append(f'  {t.name} [label="{{{t.name}|{fields}}}"];')
    for table, col, rt, _rc in SCHEMA.relationships():
        out.append(f'  {table} -> {rt} [label="{col}"];')
    out.append("}")
    return "\n".join(out) + "\n"
