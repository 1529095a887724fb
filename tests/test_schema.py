"""One schema declaration: the engines' tables agree with it and with each other."""

import apsw

from agentmem.arms.sqlite import SqliteFtsArm
from agentmem.schema import SCHEMA, dot_er, mermaid_er, postgres_ddl, sqlite_ddl


def test_relationships_cover_supersession_and_provenance():
    rels = set(SCHEMA.relationships())
    assert ("memories", "superseded_by", "memories", "memory_id") in rels
    assert ("memories", "session_id", "sessions", "session_id") in rels
    assert ("memories", "fact_id", "facts", "fact_id") in rels
    assert ("memory_entities", "entity_id", "entities", "entity_id") in rels
    for table, col, rt, rc in rels:  # every reference points at a real column
        SCHEMA.table(table).column(col)
        SCHEMA.table(rt).column(rc)
    assert SCHEMA.table("memories").specialization == (
        "kind",
        ("episodic", "semantic", "procedural"),
    )


def test_ddl_executes_in_sqlite_with_foreign_keys():
    tables = tuple(t.name for t in SCHEMA.tables)
    creates, indexes = sqlite_ddl(tables, foreign_keys=True)
    conn = apsw.Connection(":memory:")
    for stmt in creates + indexes:
        conn.execute(stmt)
    got = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")}
    assert got == set(tables)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(memories)")]
    assert cols == [c.name for c in SCHEMA.table("memories").columns]


def test_postgres_ddl_text():
    creates, indexes = postgres_ddl(("memories",), extra_columns={"memories": ["x integer"]})
    assert creates[0].startswith("CREATE TABLE memories (memory_id text NOT NULL")
    assert "x integer, PRIMARY KEY (memory_id)" in creates[0]
    assert "CREATE INDEX memories_created_day_idx ON memories (created_day)" in indexes


def test_sqlite_arm_tables_come_from_the_schema(tiny, tmp_path):
    corpus, vectors = tiny
    arm = SqliteFtsArm()
    arm.build(corpus, vectors, tmp_path)
    arm.close()
    conn = apsw.Connection(str(tmp_path / "memory.db"))
    cols = [r[1] for r in conn.execute("PRAGMA table_info(memories)")]
    assert cols == ["id"] + [c.name for c in SCHEMA.table("memories").columns]
    idx = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='index'")}
    assert {i.name for i in SCHEMA.table("memories").indexes} <= idx


def test_diagram_texts_name_every_table():
    mm, dot = mermaid_er(), dot_er()
    for t in SCHEMA.tables:
        assert f"    {t.name} {{" in mm
        assert f"  {t.name} [label=" in dot
    assert 'memories ||--o{ memories : "superseded_by"' in mm


def test_scope_column_and_its_partial_index_in_every_rendering():
    mem = SCHEMA.table("memories")
    assert mem.columns[-1].name == "scope_id" and mem.column("scope_id").nullable
    _, lite = sqlite_ddl(("memories",))
    _, pg = postgres_ddl(("memories",))
    assert (
        "CREATE INDEX memories_scope_id_idx ON memories(scope_id) WHERE scope_id IS NOT NULL"
        in lite
    )
    assert (
        "CREATE INDEX memories_scope_id_idx ON memories (scope_id) WHERE scope_id IS NOT NULL" in pg
    )
    assert "        text scope_id\n    }" in mermaid_er()  # the last attribute of memories
    assert "|tokens : int|scope_id : text}" in dot_er()


def test_sqlite_uses_the_scope_index_for_a_bound_scope():
    """A bound ``scope_id = ?`` implies the partial index's ``scope_id IS NOT NULL``."""
    creates, indexes = sqlite_ddl(("memories",))
    conn = apsw.Connection(":memory:")
    for stmt in creates + indexes:
        conn.execute(stmt)
    rows = [(f"m{i}", "b", None if i % 10 else f"u{i % 7}") for i in range(2000)]
    conn.executemany("INSERT INTO memories(memory_id, body, scope_id) VALUES (?, ?, ?)", rows)
    conn.execute("ANALYZE")
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT count(*) FROM memories WHERE scope_id = ?", ("u3",)
    ).fetchall()
    assert "USING COVERING INDEX memories_scope_id_idx (scope_id=?)" in plan[0][3]
    # scoped rows are i = 10 j (j < 200) with 10 j = 3 j = 3 (mod 7): j = 1, 8, ..., 197
    got = conn.execute("SELECT count(*) FROM memories WHERE scope_id = ?", ("u3",)).fetchall()
    assert got == [(29,)]
