"""Reading the LoCoMo file: its conversations, session dates and evidence labels.

Evidence parsing is lenient and reports every repair and skip (rules: ``docs/LOCOMO.md``).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

DEFAULT_PATH = "data/external/locomo10.json"
SOURCE_REPOSITORY = "snap-research/LoCoMo"
SOURCE_FILE = "data/locomo10.json"
LICENSE = "CC BY-NC 4.0"

_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")
_SPLIT = re.compile(r"[;,\s]+")
_LABEL = re.compile(r"D(:?)(\d+):(\d+)", re.IGNORECASE)
_SESSION_KEY = re.compile(r"session_(\d+)")


class LocomoMissing(FileNotFoundError):
    """The LoCoMo file is not at the configured path (message says where to get it)."""


class LocomoFormatError(ValueError):
    """The LoCoMo file does not have the expected shape (message names the place)."""


def missing_message(path: str | Path) -> str:
    """The message of :class:`LocomoMissing`: where to get the file and where to put it."""
    return (
        f"LoCoMo file not found at {path}. Get locomo10.json from the public repository "
        f"{SOURCE_REPOSITORY} (path {SOURCE_FILE}; licence {LICENSE}: non-commercial use, "
        f"attribute the LoCoMo authors) and put it at {path} — the path configured as "
        f"external.locomo.path (default {DEFAULT_PATH}, git-ignored). The file is read in "
        "place and never copied into the repository."
    )


def load_locomo(path: str | Path) -> list[dict[str, Any]]:
    """Read the LoCoMo JSON file (a list of conversations).

    Raises:
        LocomoMissing: when ``path`` is not a file (message says where to get it).
        LocomoFormatError: when the file is not JSON or not a list of conversations.
    """
    p = Path(path)
    if not p.is_file():
        raise LocomoMissing(missing_message(p))
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LocomoFormatError(f"{p} is not valid JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
        raise LocomoFormatError(f"{p}: expected a JSON list of conversations")
    for i, conv in enumerate(data):
        for key in ("sample_id", "conversation", "qa"):
            if key not in conv:
                raise LocomoFormatError(f"{p}: conversation {i} has no {key!r}")
    return data


def parse_session_datetime(text: str) -> datetime:
    """Parse a session date such as ``"1:56 pm on 8 May, 2023"`` (runs of spaces allowed).

    Raises:
        LocomoFormatError: when the text matches none of the known formats.
    """
    s = " ".join(str(text).split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(s, fmt)
        except ValueError:
            continue
    raise LocomoFormatError(f"unparseable session date {text!r}")


def normalise_label(token: str) -> tuple[str | None, list[str]]:
    """Canonicalise one evidence token to ``D<session>:<turn>``.

    ``"D:11:26"`` → ``"D11:26"`` (extra colon), ``"D30:05"`` → ``"D30:5"`` (leading zero);
    a canonical label comes back unchanged with no reasons.

    Returns:
        ``(canonical label or None when the token is not a label, repair reasons)``.
    """
    m = _LABEL.fullmatch(token.strip())
    if not m:
        return None, ["not a label"]
    colon, sess, turn = m.groups()
    canon = f"D{int(sess)}:{int(turn)}"
    reasons = []
    if colon:
        reasons.append("extra colon after D")
    if str(int(sess)) != sess or str(int(turn)) != turn:
        reasons.append("leading zero")
    if token.strip()[0] != "D":
        reasons.append("lower-case d")
    return canon, reasons


def parse_evidence(evidence: Any, turns: set[str]) -> tuple[list[str], list[dict[str, str]]]:
    """Parse one question's evidence leniently against the turns of its conversation.

    Args:
        evidence: the ``evidence`` value (normally a list of strings; a bare string is
            taken as a one-element list).
        turns: canonical ``dia_id`` labels that exist in the conversation.

    Returns:
        ``(labels, issues)``: the usable canonical labels in order, without repeats, and one
        dict (raw_label, action ``repaired``/``skipped``, repaired_to, reason) per raw
        string that was repaired and per token that was skipped. Clean labels make no issue.
    """
    items = [evidence] if isinstance(evidence, str) else list(evidence or [])
    labels: list[str] = []
    issues: list[dict[str, str]] = []
    for item in items:
        raw = str(item)
        tokens = [t for t in _SPLIT.split(raw.strip()) if t]
        kept: list[str] = []
        reasons: list[str] = []
        if len(tokens) > 1:
            reasons.append(f"{len(tokens)} labels in one string")
        elif raw != raw.strip():
            reasons.append("surrounding whitespace")
        if not tokens:
            issues.append(label_issue(raw, "skipped", "", "empty label"))
        for tok in tokens:
            canon, why = normalise_label(tok)
            if canon is None:
                issues.append(label_issue(raw, "skipped", "", f"{tok!r} is not a label"))
            elif canon not in turns:
                issues.append(
                    label_issue(raw, "skipped", "", f"no turn {canon} in this conversation")
                )
            elif canon in labels or canon in kept:
                issues.append(label_issue(raw, "skipped", "", f"{canon} repeats an earlier label"))
            else:
                kept.append(canon)
                reasons.extend(r for r in why if r not in reasons)
        if kept and (len(tokens) > 1 or kept[0] != raw):
            issues.append(label_issue(raw, "repaired", " ".join(kept), "; ".join(reasons)))
        labels.extend(kept)
    return labels, issues


def label_issue(raw: str, action: str, repaired_to: str, reason: str) -> dict[str, str]:
    """One row of the conversion's issue report: the raw label, what was done and why."""
    return {"raw_label": raw, "action": action, "repaired_to": repaired_to, "reason": reason}


def dated_sessions(conv: dict[str, Any], sample_id: str) -> list[tuple[int, datetime, str, list]]:
    """``(session_no, date_time, raw date, turns)`` per session with turns, by number.

    Date keys without a session (the file has some) are ignored.
    """
    c = conv["conversation"]
    out = []
    for key, turns in c.items():
        m = _SESSION_KEY.fullmatch(key)
        if not m or not isinstance(turns, list):
            continue
        n = int(m.group(1))
        raw = c.get(f"session_{n}_date_time")
        if raw is None:
            raise LocomoFormatError(f"{sample_id}: session_{n} has no session_{n}_date_time")
        try:
            dt = parse_session_datetime(raw)
        except LocomoFormatError as exc:
            raise LocomoFormatError(f"{sample_id}: session_{n}: {exc}") from None
        if turns:
            out.append((n, dt, str(raw), turns))
    return sorted(out, key=lambda s: s[0])
