"""Torn-line recovery: sorting the JSONL store's lines into readable and unreadable ones.

A torn tail left by a crash mid-append, a line cut short or text that is not a memory
object is unreadable: skipped and counted, never fatal. A memory glued onto a torn
fragment (the next append after a crash starts on the fragment's line) is recovered.
"""

from __future__ import annotations

import json
from typing import Any


def is_memory(obj: Any) -> bool:
    """True when ``obj`` is a JSON object with usable required values (types of ``SCAN_SCHEMA``)."""
    if not isinstance(obj, dict):
        return False
    ints = (obj.get("created_day"), obj.get("seq"))
    return (
        isinstance(obj.get("memory_id"), str)
        and isinstance(obj.get("body"), str)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in ints)
    )


def split_lines(data: bytes) -> tuple[bytes, int, int, int]:
    """Sort the store's lines into readable memories and unreadable lines.

    A line that does not parse may be a torn fragment with a whole memory appended to it
    (the next append after a crash mid-line): the memory is recovered from the last
    ``{`` at which the rest of the line parses as a memory object (at most
    :data:`RECOVERY_TRIES` positions are tried), and the line still counts as unreadable.

    Args:
        data: the file's bytes.

    Returns:
        ``(readable, unreadable_lines, unreadable_bytes, first_unreadable)``: the readable
        lines joined with newlines, how many lines were skipped, their bytes (newline
        included; for a recovered line, the fragment's bytes) and the first one's 1-based
        number (0 when none).
    """
    good: list[bytes] = []
    bad = bad_bytes = first = 0
    lines = data.split(b"\n")
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:  # JSONDecodeError and UnicodeDecodeError
            obj = None
        if is_memory(obj):
            good.append(line)
            continue
        bad += 1
        first = first or lineno
        recovered = recover_tail(line)
        bad_bytes += len(line) + (lineno < len(lines)) - len(recovered)
        if recovered:
            good.append(recovered)
    return b"\n".join(good), bad, bad_bytes, first


#: Positions of ``{`` tried when recovering a memory glued onto a torn fragment.
RECOVERY_TRIES = 64


def recover_tail(line: bytes) -> bytes:
    """Return the memory object that ends ``line`` after a torn fragment, or ``b""``."""
    pos = len(line)
    for _ in range(RECOVERY_TRIES):
        pos = line.rfind(b"{", 1, pos)
        if pos <= 0:
            return b""
        try:
            if is_memory(json.loads(line[pos:])):
                return line[pos:]
        except ValueError:
            continue
    return b""
