"""The SQL layer the SQL-backed arms share: connections, catalogs, predicates, plans.

:mod:`agentmem.sql.sqlite` (apsw: connection, ``dbstat`` sizes, integrity checks, the
memory tables' DDL, predicate conditions, EXPLAIN QUERY PLAN rendering) and
:mod:`agentmem.sql.postgres` (psycopg: the memory tables' DDL, bound predicate SQL composed
once per shape, EXPLAIN, relation sizes, consistency checks), and
:mod:`agentmem.sql.scaffold`, the statement loop every SQL arm runs a query with. The
SQLite, PostgreSQL, graph and three-tier arms import these, never each other.
"""
