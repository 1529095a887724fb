"""The keys of ``sqlite-gated``: entity names and ids in a query text, and int8 vectors.

docs/arms/sqlite-gated.md says why each is there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Any

import numpy as np

from agentmem.arms.sqlite.rows import VectorLayout
from agentmem.text import STOPWORDS, is_utf8

#: Longest entity name (in words) looked up in the query text.
MAX_NAME_WORDS = 4
#: Words of the query text looked at for entity names and identifiers.
MAX_KEY_WORDS = 64

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# words joined by hyphens (ADR-297, SVC-5345, billing-api): a candidate entity id as
# written (the optional group keeps the match linear in the text's length)
_HYPHENATED = re.compile(r"[^\W_]+(?:-[^\W_]+)*", re.UNICODE)

_VECTORS_SQL = """
CREATE TABLE memory_vectors(
    id INTEGER PRIMARY KEY REFERENCES memories(id),
    embedding BLOB NOT NULL
);
"""


def quantise(matrix: np.ndarray) -> np.ndarray:
    """int8 codes of float32 embeddings, each row scaled so its largest magnitude is 127.

    Cosine is scale-free, so the per-row scale is not kept; the codes' cosine differs
    from the float32 cosine by about 1e-4 (docs/arms/sqlite-gated.md).

    Args:
        matrix: float32 ``(n, 384)``.

    Returns:
        int8 ``(n, 384)``.

    Raises:
        ValueError: when a value is NaN or infinite.
    """
    m = np.asarray(matrix, dtype=np.float32)
    if not np.isfinite(m).all():
        raise ValueError("embeddings hold NaN or infinite values")
    peak = np.abs(m).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return np.rint(m / peak * 127.0).astype(np.int8)


#: the largest finite float32: a query's scale 127 / peak above it would overflow
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def quantise_query(v: np.ndarray) -> bytes:
    """The int8 codes of one query embedding, as the bytes ``vec_int8`` reads.

    The row is scaled so its largest magnitude is 127 in one float32 product,
    ``v * (127 / peak)``, where :func:`quantise` takes two (``/ peak``, then ``* 127``):
    fewer numpy calls on the query path, and each code at most one step from
    :func:`quantise`'s (docs/arms/sqlite-gated.md). A zero vector gives zero codes; a
    peak so small that ``127 / peak`` overflows float32 is divided out first.

    Args:
        v: float32 ``(384,)``.

    Returns:
        384 bytes, one int8 code each.

    Raises:
        ValueError: when a value is NaN or infinite.
    """
    peak = float(np.abs(v).max())
    if not math.isfinite(peak):  # NaN and inf both make the peak non-finite
        raise ValueError("embedding holds NaN or inf")
    if peak and 127.0 / peak > _FLOAT32_MAX:  # a peak below ~4e-37
        v, peak = v / np.float32(peak), 1.0
    scale = np.float32(127.0 / peak if peak else 127.0)
    return np.rint(v * scale).astype(np.int8).tobytes()


def _quantised_rows(matrix: np.ndarray, first_id: int) -> list[tuple[Any, ...]]:
    """``(id, int8 codes)`` tuples of the rows of ``matrix``, ids from ``first_id``."""
    codes = quantise(matrix)
    return [(first_id + i, codes[i].tobytes()) for i in range(len(codes))]


#: One 384-byte int8 vector per memory (sqlite-vec ``vec_int8``).
QUANTISED_VECTORS = VectorLayout(
    _VECTORS_SQL,
    "INSERT INTO memory_vectors(id, embedding) VALUES (?, ?)",
    _quantised_rows,
)


def name_key(text: str) -> str:
    """An entity name as it is looked up: lower-cased words joined by single spaces.

    ``"billing-api"``, ``"Billing API"`` and ``"billing_api"`` all give ``"billing api"``.
    """
    return " ".join(_WORD.findall(text.lower()))


def text_keys(text: str, name_starts: Collection[str] | None = None) -> tuple[list[str], list[str]]:
    """The entity names and entity ids a query text may mention.

    Args:
        text: the query text (untrusted).
        name_starts: the first words of the stored entity names (as :func:`name_key`
            spells them); when given, only runs starting with one of them are returned,
            which leaves out no run that can equal a stored name.

    Returns:
        ``(names, ids)``: every run of 1 to :data:`MAX_NAME_WORDS` consecutive words of the
        first :data:`MAX_KEY_WORDS` (as :func:`name_key` spells names; a run that is one
        stopword is left out), and every word and hyphenated token as written, upper-
        and lower-cased (``adr-297``, ``ADR-297``), to be looked up as entity ids. Tokens
        that are not UTF-8 are dropped.
    """
    if text.isascii():  # lower-casing keeps every ASCII word whole: one regex pass
        raw = _WORD.findall(text)[:MAX_KEY_WORDS]
        words = [w.lower() for w in raw]
        whole = True
    else:  # a text that is UTF-8 has no lone surrogate, nor has any piece of it
        whole = is_utf8(text)
        words = _WORD.findall(text.lower())[:MAX_KEY_WORDS]
        if not whole:
            words = [w for w in words if is_utf8(w)]
        raw = _WORD.findall(text)[:MAX_KEY_WORDS]
    starts = [i for i, w in enumerate(words) if name_starts is None or w in name_starts]
    names = dict.fromkeys(words[i] for i in starts if words[i] not in STOPWORDS)
    if starts:
        for n in range(2, MAX_NAME_WORDS + 1):
            last = len(words) - n
            names.update(dict.fromkeys(" ".join(words[i : i + n]) for i in starts if i <= last))
    ids: dict[str, None] = {}
    hyphenated = (
        [t for t in _HYPHENATED.findall(text) if "-" in t][:MAX_KEY_WORDS] if "-" in text else []
    )
    for tok in hyphenated + raw:
        low = tok.lower()
        if low not in STOPWORDS and (whole or is_utf8(tok)):
            ids[tok] = ids[tok.upper()] = ids[low] = None
    return list(names), list(ids)
