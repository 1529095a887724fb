"""PostgreSQL through psycopg, shared by the PostgreSQL, three-tier and product arms.

:mod:`.schema` (the memory tables' DDL), :mod:`.queries` (bound predicate and tsquery SQL,
composed once per shape) and :mod:`.catalog` (EXPLAIN, relation sizes, consistency checks).
"""
