r"""Milvus boolean filter expressions for the arm's predicates and id look-ups.

Milvus Lite's filter grammar reads string literals in double or single quotes with the
C-style escapes ``\"``, ``\'``, ``\\``, ``\n``, ``\r``, ``\t``; every untrusted
value is written through :func:`string_literal`. Milvus Lite 3.2.2 does not implement
filter templating (``filter_params``): a ``{name}`` placeholder is refused by its
parser, so values are inlined, escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentmem.arms import base
from agentmem.arms.product import NO_ID, matchless_id

__all__ = ["ids_expr", "predicate_expr", "query_expr", "string_literal"]

#: an expression no memory matches (``created_day`` is stored non-null)
_NOTHING = "created_day is null"
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def string_literal(value: str) -> str:
    r"""``value`` as a double-quoted Milvus string literal (any text, NUL included).

    Example: ``string_literal('a"b')`` is ``"a\"b"`` (with the quotes).
    """
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'


def predicate_expr(pred: base.Predicate | None) -> str:
    """The Milvus filter expression for ``pred``; ``""`` (no filter) for ``None``.

    ``created_day <= 11`` and ``created_day == 11`` for days; ``session_id == "S1"`` for
    ids; ``is_null`` on an id field is ``field == ""`` (nulls are stored as
    :data:`~agentmem.arms.product.NO_ID`) and on ``created_day`` (stored non-null) is
    ``created_day is null``, which matches nothing. So is ``field = ""`` (``""`` is the
    stored null marker, no memory's id) and ``field = v`` for a ``v`` that is not UTF-8
    (a lone surrogate: no stored string equals it, and pymilvus cannot encode it).
    """
    if pred is None:
        return ""
    if pred.op == "is_null":
        if pred.field == "created_day":
            return _NOTHING
        return f"{pred.field} == {string_literal(NO_ID)}"
    if pred.field == "created_day":
        op = "<=" if pred.op == "<=" else "=="
        return f"created_day {op} {int(pred.value)}"  # type: ignore[arg-type]
    value = str(pred.value)
    if matchless_id(value):
        return _NOTHING
    return f"{pred.field} == {string_literal(value)}"


def query_expr(q: base.Query) -> str:
    """The Milvus filter expression for every filter of ``q``; ``""`` when it has none.

    The scope is ``scope_id == "<scope>"`` (a :func:`string_literal`, so quotes,
    backslashes and operators in the scope stay inside the literal; memories without a
    scope store ``""``, which no scope equals); scope and predicate are
    ``(scope) and (predicate)``. A filter that matches nothing makes the whole
    expression ``created_day is null``.
    """
    exprs = [predicate_expr(p) for p in q.filters]
    if _NOTHING in exprs:
        return _NOTHING
    if len(exprs) == 1:
        return exprs[0]
    return " and ".join(f"({e})" for e in exprs)


def ids_expr(pk: str, ids: Sequence[str]) -> str:
    """``pk in ["a", "b", ...]`` with every id escaped (``client.get`` does not escape)."""
    return f"{pk} in [{', '.join(string_literal(i) for i in ids)}]"
