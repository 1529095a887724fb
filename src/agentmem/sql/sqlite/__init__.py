"""SQLite through apsw, shared by the SQLite, graph and three-tier arms.

:mod:`.connection` (open, sizes, integrity), :mod:`.schema` (the memory tables' DDL) and
:mod:`.statements` (predicate conditions, plan rendering).
"""
