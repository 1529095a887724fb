"""Reading a dataset's files line by line: JSON lines, keys, typed fields, characters.

Each helper raises :class:`~agentmem.external.schema.DatasetError` naming the file, the
1-based line and the field at fault.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmem.external.schema import (
    DATASET_FILES,
    NUL_PROBLEM,
    SURROGATE_PROBLEM,
    UNSTORABLE,
    DatasetError,
)


def printable(text: str) -> str:
    r"""``text`` with each NUL and lone surrogate written as its JSON escape (``\u0000``)."""
    return UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def got(value: Any) -> str:
    """``value`` as an error message shows it: JSON, at most 60 characters, escapes visible."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = printable(text)
    return text if len(text) <= 60 else text[:57] + "..."


def excerpt(text: str, at: int) -> str:
    """``text`` as :func:`got` shows it, from at most 20 characters before index ``at``."""
    start = max(0, at - 20)
    return ("..." if start else "") + got(text[start:])


def string_values(value: Any) -> Iterator[str]:
    """Every string of a parsed JSON value: itself, or the keys and values nested in it."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from string_values(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from string_values(v)


def check_chars(path: Path, no: int | None, key: str, value: Any) -> None:
    """Refuse a character no arm can store in any string of ``value`` (field ``key``).

    Raises:
        DatasetError: naming ``path``, line ``no`` and ``key``, showing where the character is.
    """
    for text in string_values(value):
        bad = UNSTORABLE.search(text)
        if bad:
            problem = NUL_PROBLEM if bad.group() == "\x00" else SURROGATE_PROBLEM
            raise DatasetError(path, no, key, f"{problem}, got {excerpt(text, bad.start())}")


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of :func:`json.loads` that refuses a key given twice.

    Raises:
        ValueError: naming the repeated key (the caller turns it into a DatasetError).
    """
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def file_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(1-based line number, text)`` of each non-blank line of a UTF-8 file."""
    if not path.is_file():
        raise DatasetError(
            path, None, None, "missing (a dataset needs " + ", ".join(DATASET_FILES) + ")"
        )
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for no, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                path, no, None, f"not UTF-8 ({exc.reason} at byte {exc.start})"
            ) from None
        if text.strip():
            yield no, text.rstrip("\r")


def json_lines(path: Path, allowed: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line, object) of each JSON line of ``path``, keys checked against ``allowed``.

    Raises:
        DatasetError: bad JSON, a non-object line, a duplicate or unknown key, a NUL or a
            lone surrogate in a string.
    """
    for no, text in file_lines(path):
        try:
            obj = json.loads(text, object_pairs_hook=no_duplicate_keys)
        except ValueError as exc:
            raise DatasetError(path, no, None, f"not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise DatasetError(path, no, None, f"expected a JSON object, got {got(obj)}")
        check_keys(path, no, obj, allowed)
        for key, value in obj.items():
            check_chars(path, no, key, value)
        yield no, obj


def check_keys(path: Path, no: int | None, obj: Mapping[str, Any], allowed: Sequence[str]) -> None:
    """Refuse a key of ``obj`` not in ``allowed``, suggesting the closest allowed key.

    Raises:
        DatasetError: naming the unknown key.
    """
    for key in obj:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DatasetError(
                path, no, printable(key), f"unknown key (allowed: {', '.join(allowed)}){hint}"
            )


def str_field(
    path: Path,
    no: int | None,
    obj: Mapping[str, Any],
    key: str,
    *,
    required: bool = False,
    default: str | None = None,
    empty_ok: bool = False,
    null_ok: bool = False,
) -> str | None:
    """The string at ``key`` of ``obj`` (``default`` when absent and not required).

    Raises:
        DatasetError: missing when required; not a string, empty (unless ``empty_ok``) or
            null (unless ``null_ok``).
    """
    if key not in obj:
        if required:
            raise DatasetError(path, no, key, "missing (required)")
        return default
    v = obj[key]
    if v is None and null_ok:
        return None
    kind = "a string" + ("" if empty_ok else " (non-empty)") + (" or null" if null_ok else "")
    if not isinstance(v, str) or (not empty_ok and not v.strip()):
        raise DatasetError(path, no, key, f"expected {kind}, got {got(v)}")
    return v


def int_field(
    path: Path,
    no: int | None,
    obj: Mapping[str, Any],
    key: str,
    *,
    required: bool = False,
    default: int | None = None,
) -> int | None:
    """The integer >= 0 at ``key`` of ``obj`` (``default`` when absent and not required).

    Raises:
        DatasetError: missing when required; not an integer >= 0 (booleans refused).
    """
    if key not in obj:
        if required:
            raise DatasetError(path, no, key, "missing (required)")
        return default
    v = obj[key]
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise DatasetError(path, no, key, f"expected an integer >= 0, got {got(v)}")
    return v


def str_list_field(
    path: Path, no: int | None, obj: Mapping[str, Any], key: str, *, empty_ok: bool
) -> list[str] | None:
    """The list of distinct non-empty strings at ``key`` of ``obj``; ``None`` when absent.

    Raises:
        DatasetError: not such a list, empty (unless ``empty_ok``), or an entry repeated.
    """
    if key not in obj:
        return None
    v = obj[key]
    what = "a list of non-empty strings" + ("" if empty_ok else " (at least one)")
    if (
        not isinstance(v, list)
        or not all(isinstance(e, str) and e.strip() for e in v)
        or (not v and not empty_ok)
    ):
        raise DatasetError(path, no, key, f"expected {what}, got {got(v)}")
    seen: set[str] = set()
    for e in v:
        if e in seen:
            raise DatasetError(path, no, key, f"{got(e)} is listed twice")
        seen.add(e)
    return list(v)


def id_field(path: Path, no: int, obj: Mapping[str, Any]) -> str:
    """The record's ``_id``: a non-empty string without tab, line break or outer space.

    Raises:
        DatasetError: missing or malformed.
    """
    v = str(str_field(path, no, obj, "_id", required=True))
    if v != v.strip() or "\t" in v or "\n" in v or "\r" in v:
        raise DatasetError(
            path, no, "_id", f"expected no tab, line break or surrounding space, got {got(v)}"
        )
    return v


def key_line(text: str, key: str) -> int:
    """1-based line of the first mention of ``key`` (as written, or JSON-escaped), else 1."""
    spellings = (f'"{key}"', json.dumps(key))
    for no, line in enumerate(text.splitlines(), start=1):
        if any(k in line for k in spellings):
            return no
    return 1
