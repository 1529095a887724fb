"""Record types of the comparison: lookup keys, published numbers, findings, tolerances.

A :class:`Published` record is one number of docs/STUDY.md with the lookup key (``ref``) of
our corresponding result; :data:`TOLERANCES` says, per kind of number, when ours reproduces
the published value. The findings are :mod:`agentmem.report.reference.findings`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Ref = tuple[Any, ...]
"""Lookup key of one quantity, shared by the published data and our results, e.g.
``("by_class", <arm>, "all", "ndcg_at_10")``."""

Lookup = Callable[[Ref], float | None]
"""A value by lookup key (None when unknown): the published numbers or ours."""

LATENCY_WHY = "other machine and engine build (see the note at the top)"
"""Why a latency or build time may differ from the study's (shown with such numbers)."""


def _abs(tol: float) -> Callable[[float, float], bool]:
    return lambda p, o: abs(o - p) <= tol + 1e-12


def _ratio(factor: float) -> Callable[[float, float], bool]:
    def ok(p: float, o: float) -> bool:
        if p == 0 or o == 0:
            return p == o
        r = o / p
        return r > 0 and 1 / factor <= r <= factor

    return ok


def _rel(share: float) -> Callable[[float, float], bool]:
    return lambda p, o: abs(o - p) <= share * abs(p) + 1e-12


TOLERANCES: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "score": ("±0.10 absolute", _abs(0.10)),
    "rate": ("±0.05 absolute", _abs(0.05)),
    "count": ("±10 % relative", _rel(0.10)),
    "tokens": ("within ×1.5", _ratio(1.5)),
    "bytes": ("within ×2", _ratio(2.0)),
    "latency": ("within ×3 (other machine and engine build)", _ratio(3.0)),
    "rank": ("within ×3", _ratio(3.0)),
    "racy": ("within ×2 (a race: varies run to run)", _ratio(2.0)),
    "outcome": ("same outcome: zero vs non-zero", lambda p, o: (p == 0) == (o == 0)),
    "setting": ("a study setting, compared for equality", lambda p, o: abs(o - p) < 1e-9),
}
"""Tolerance per kind of number: description and test ``(published, ours) -> bool``."""


@dataclass(frozen=True)
class Published:
    """One published number.

    Attributes:
        section: docs/STUDY.md section, ``"§1"`` … ``"§4"``.
        group: the table or paragraph of that section it belongs to (a heading in
            ``vs_reference.md``).
        item: human-readable name of the quantity.
        value: the published value (units as in REFERENCE: ms, bytes, MB, s, shares in
            [0, 1]).
        ref: lookup key of our corresponding result (see
            :class:`~agentmem.report.reference.ours.OurResults`).
        kind: tolerance kind, a key of :data:`TOLERANCES`.
        source: where in docs/STUDY.md the number stands.
        note: context shown with every comparison (how ours was measured).
        why: why ours may differ, if known (shown only when the verdict is not
            "reproduced" / "same setting").
    """

    section: str
    group: str
    item: str
    value: float
    ref: Ref
    kind: str
    source: str
    note: str = ""
    why: str = ""
