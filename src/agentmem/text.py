"""Turning untrusted free text into safe search terms (shared by every text arm).

Free text reaches FTS5 MATCH, tsquery and LIKE patterns. It is never spliced into SQL:
arms bind parameters, and the match expressions built here quote every term so that
operators (``NEAR``, ``AND``, ``OR``, ``NOT``, ``*``, ``^``, ``:``, ``-``, parentheses,
quotes) in the user's text are data, not syntax (docs/WRITING_AN_ARM.md; the FTS5
pitfall that a bare ``ADR-297`` parses as a column filter / NOT).
"""

from __future__ import annotations

import re

#: Upper bound on terms taken from one query (a 10,000-character query stays cheap).
MAX_TERMS = 32

# identifiers like ADR-297 / SVC-5345 stay whole; otherwise runs of letters/digits.
_TOKEN = re.compile(r"[A-Za-z]+-\d+|[^\W_]+", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each else ever every
    few for from further had has have having he her here hers him his how i if in into is it
    its itself just know let me more most my no nor not now of off on once only or other our
    ours out over own recorded same she should since so some still such than that the their
    theirs them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours""".split()
)


def query_terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Split free text into lower-cased, de-duplicated search terms.

    Identifiers such as ``ADR-297`` stay one term; other tokens are maximal runs of
    letters/digits in any script. Stopwords are dropped unless ``keep_stopwords``.

    Args:
        text: untrusted query text (any length; ``None``-safe callers pass ``""``).
        keep_stopwords: keep English function words.

    Returns:
        At most :data:`MAX_TERMS` terms in order of first appearance; ``[]`` for empty,
        whitespace-only or punctuation-only text.
    """
    out: list[str] = []
    seen: set[str] = set()
    for t in _TOKEN.findall(text or ""):
        t = t.lower()
        if t in seen or (not keep_stopwords and t in STOPWORDS):
            continue
        seen.add(t)
        out.append(t)
        if len(out) >= MAX_TERMS:
            break
    return out


def fts5_match(text: str) -> str | None:
    """Build an FTS5 MATCH expression: every term double-quoted, joined with ``OR``.

    ``"ADR-297"`` inside quotes is a phrase of the tokens ``adr`` and ``297``, so the
    identifier matches as a unit. Returns ``None`` when the text has no terms (the caller
    returns an empty result instead of running MATCH).
    """
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def like_pattern(term: str) -> str:
    r"""Return a ``LIKE … ESCAPE '\\'`` pattern matching ``term`` as a substring.

    ``%``, ``_`` and ``\\`` in the term are escaped so they match literally.
    """
    esc = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{esc}%"


def is_utf8(value: str) -> bool:
    r"""Whether ``value`` encodes as UTF-8 (False for a lone surrogate such as ``"\ud800"``).

    Such a string reaches Python from JSON (``"\ud800"`` escapes) or from a command line
    holding bytes that are not UTF-8 (``surrogateescape``). No engine can store it, so no
    stored value equals it; the drivers (apsw, psycopg, polars) raise when it is bound.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
