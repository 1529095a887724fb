"""What PostgreSQL reports about a store: query plans (``EXPLAIN``) and relation sizes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import sql


def explain_statements(
    conn: psycopg.Connection,
    statements: Sequence[tuple[str, tuple[sql.Composable, dict[str, Any]] | None]],
    setting_names: Iterable[str],
) -> list[dict[str, Any]]:
    """Return ``EXPLAIN (FORMAT JSON, SETTINGS)`` of each labelled statement.

    Args:
        conn: the store's connection (with the arm's session settings applied).
        statements: ``(label, (statement, params) | None)`` in the order they run; a
            ``None`` statement (the text has no terms) becomes a ``"Note"``.
        setting_names: the session GUCs to report (e.g. ``hnsw.ef_search``).

    Returns:
        One object per plan: PostgreSQL's own EXPLAIN object (``"Plan"``, ...) plus
        ``"Statement"`` (label), ``"Query Text"`` (the SQL with placeholders) and
        ``"Session Settings"`` (name -> current value).

    Raises:
        psycopg.Error: when a setting cannot be read or EXPLAIN fails.
    """
    plans: list[dict[str, Any]] = []
    settings = {
        key: conn.execute("SELECT current_setting(%s)", (key,)).fetchone()[0]  # type: ignore[index]
        for key in setting_names
    }
    for label, stmt in statements:
        if stmt is None:
            plans.append({"Statement": label, "Note": "no statement runs: the text has no terms"})
            continue
        body, params = stmt
        row = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON, SETTINGS) ") + body, params).fetchone()
        doc = row[0] if row is not None else []
        if isinstance(doc, str):
            doc = json.loads(doc)
        for entry in doc:
            plans.append(
                {
                    "Statement": label,
                    "Query Text": body.as_string(conn),
                    "Session Settings": settings,
                    **entry,
                }
            )
    return plans


def relation_sizes(conn: psycopg.Connection) -> dict[str, int]:
    """Return bytes per relation of the current schema's tables, from PostgreSQL's accounting.

    Objects: each table's heap (``pg_table_size`` minus its TOAST), its TOAST table with
    the TOAST index (``"<table> (toast)"``, ``pg_total_relation_size`` of
    ``reltoastrelid``) and each index (``pg_total_relation_size``), found in
    ``pg_class`` / ``pg_index``. The sum equals the sum of ``pg_total_relation_size``
    over the tables.

    Raises:
        psycopg.Error: when the catalog query fails.
    """
    objects: dict[str, int] = {}
    tables = conn.execute(
        "SELECT c.oid, c.relname, c.reltoastrelid::oid, pg_table_size(c.oid), "
        "CASE WHEN c.reltoastrelid = 0 THEN 0 "
        "ELSE pg_total_relation_size(c.reltoastrelid) END "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
        "ORDER BY c.relname"
    ).fetchall()
    for oid, relname, toast_oid, table_size, toast_size in tables:
        objects[relname] = int(table_size) - int(toast_size)
        if int(toast_oid) != 0:
            objects[f"{relname} (toast)"] = int(toast_size)
        for iname, isize in conn.execute(
            "SELECT ci.relname, pg_total_relation_size(ci.oid) FROM pg_index i "
            "JOIN pg_class ci ON ci.oid = i.indexrelid WHERE i.indrelid = %s "
            "ORDER BY ci.relname",
            (oid,),
        ):
            objects[iname] = int(isize)
    return objects


#: What :func:`consistency_problems` checks, as the fleet table names it.
CONSISTENCY_CHECK = "heap vs B-tree count, distinct ids, supersession links"


def consistency_problems(
    conn: psycopg.Connection, table: str = "memories", *, indexed: bool = True, links: bool = True
) -> list[str]:
    """Problems in ``table``'s rows, ``[]`` when they are consistent.

    Checks, in one read-only transaction: the rows a sequential scan counts against those
    the B-tree on ``memory_id`` counts (``indexed``: an index-only scan forced by
    switching the other scans off), ``memory_id`` held by more than one row, and
    (``links``) ``superseded_by`` naming a memory the table does not hold. (pgserver
    ships no ``amcheck``.)

    Raises:
        psycopg.Error: when a query fails.
    """
    t = sql.Identifier(table)
    problems: list[str] = []
    with conn.transaction():
        conn.execute("SET LOCAL enable_indexscan = off")
        conn.execute("SET LOCAL enable_indexonlyscan = off")
        conn.execute("SET LOCAL enable_bitmapscan = off")
        heap, distinct = conn.execute(
            sql.SQL("SELECT count(*), count(DISTINCT memory_id) FROM {}").format(t)
        ).fetchone() or (0, 0)
        dangling = (
            conn.execute(
                sql.SQL(
                    "SELECT count(*) FROM {t} AS a WHERE a.superseded_by IS NOT NULL AND NOT "
                    "EXISTS (SELECT 1 FROM {t} AS b WHERE b.memory_id = a.superseded_by)"
                ).format(t=t)
            ).fetchone()
            if links
            else None
        )
        if indexed:
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_indexonlyscan = on")
            (via_index,) = conn.execute(
                sql.SQL("SELECT count(memory_id) FROM {} WHERE memory_id >= ''").format(t)
            ).fetchone() or (0,)
            if via_index != heap:
                problems.append(f"{table}: the B-tree holds {via_index} ids, the heap {heap} rows")
    if distinct != heap:
        problems.append(f"{table}: {heap - distinct} rows repeat a memory_id")
    if dangling and dangling[0]:
        problems.append(f"{table}: {dangling[0]} rows superseded by a memory not stored")
    return problems
