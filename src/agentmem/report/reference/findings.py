"""The findings engine: every finding the report checks, read from ``data/findings.yaml``.

A finding is a declaration (docs/FINDINGS.md): a claim, the statistic it computes from a
lookup (``ref -> value``: the published numbers or one of our result trees, the keys of
:class:`agentmem.report.reference.OurResults`), its verdict rules and the captions shown
with it. This module compiles the declarations into :class:`Finding` objects:

- :data:`FINDINGS`: the study's qualitative findings of docs/STUDY.md §1–4, compared in
  ``vs_reference`` (reproduced when :meth:`Finding.holds` is true on ours);
- :data:`HEADLINE_FINDINGS`: the study's twelve findings of docs/STUDY.md §7, in its order;
- :data:`DESIGN_FINDINGS`: the project's own claims; :data:`ALL_FINDINGS` both, in the
  findings table's row order (:mod:`agentmem.report.headline`).

No arm is named here: the arms, classes and keys a finding reads are in its declaration.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agentmem.report.reference.records import LATENCY_WHY, Lookup
from agentmem.report.reference.study import (
    ANOMALY_ARM,
    CLASSES,
    DBMS_ARMS,
    DBMS_TEXT_ARMS,
    FILE_ARMS,
    POSTFILTER_ARM,
    REFERENCE_ARMS,
    SIZES,
    TEXT_ONLY_ARMS,
    VECTOR_ARMS,
)

Stat = Callable[[Lookup], float | None]
"""A statistic: its value from a lookup, None when a value it needs is unknown."""

VERDICTS = ("holds", "weakens", "flips", "n/a")
"""The verdicts of a headline finding, in the findings table's order."""

#: Groups a ``for`` may range over besides the data file's ``sets``: the study's arms by
#: role (derived from the arms' capability declarations), its sizes and its classes.
GROUPS: dict[str, tuple[Any, ...]] = {
    "study": REFERENCE_ARMS,
    "dbms": DBMS_ARMS,
    "file": FILE_ARMS,
    "text_only": TEXT_ONLY_ARMS,
    "vector": VECTOR_ARMS,
    "dbms_text": DBMS_TEXT_ARMS,
    "sizes": tuple(SIZES),
    "classes": CLASSES,
}

#: Constants every declaration may use besides the data file's ``constants``.
STUDY_CONSTANTS: dict[str, Any] = {
    "postfilter_arm": POSTFILTER_ARM,
    "anomaly_arm": ANOMALY_ARM,
    "latency_why": LATENCY_WHY,
}

_EPS = 1e-9
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": lambda x, t: x <= t + _EPS,
    ">=": lambda x, t: x >= t - _EPS,
    "==": lambda x, t: abs(x - t) <= _EPS,
}
_CONDITION = re.compile(r"^(<=|>=|==|<|>)\s*(\S+)$|^in \[\s*(\S+?)\s*,\s*(\S+?)\s*\]$")
_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


class FindingsFileError(ValueError):
    """A declaration of ``data/findings.yaml`` that cannot be compiled (names the finding)."""


class _Declaration(BaseModel):
    """One finding as written in the data file (the fields of docs/FINDINGS.md)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    section: str | None = Field(None, pattern=r"^§[1-4]$")
    number: int | None = Field(None, ge=1)
    claim: str
    statistic: str
    rule: str
    why: str = ""
    value: Any
    with_: dict[str, Any] = Field(default_factory=dict, alias="with")
    holds: dict[str, str]
    flips: dict[str, str] = Field(default_factory=dict)
    corpus_dependent: bool = True


class _FindingsFile(BaseModel):
    """The data file: constants, named sets, and the three lists of declarations."""

    model_config = ConfigDict(extra="forbid")

    constants: dict[str, str | float] = Field(default_factory=dict)
    sets: dict[str, list[str]] = Field(default_factory=dict)
    study: list[_Declaration]
    headline: list[_Declaration]
    ours: list[_Declaration]


def _known(vals: Sequence[float | None]) -> list[float]:
    return [x for x in vals if x is not None]


def _all_known(vals: Sequence[float | None]) -> bool:
    return all(x is not None for x in vals)


def _slope(y: Sequence[float | None], x: Sequence[float | None]) -> float | None:
    """Log-log slope between two points; None unless all four are known and positive."""
    (y0, y1), (x0, x1) = y, x
    if not _all_known([y0, y1, x0, x1]) or min(y0, y1, x0, x1) <= 0 or x1 == x0:
        return None
    return math.log(y1 / y0) / math.log(x1 / x0)


#: reductions of a list of statistics' values (None values included), None when undefined
_REDUCE: dict[str, Callable[[list[float | None]], float | None]] = {
    "min": lambda v: min(_known(v)) if _known(v) else None,
    "max": lambda v: max(_known(v)) if _known(v) else None,
    "range": lambda v: max(_known(v)) - min(_known(v)) if len(_known(v)) >= 2 else None,
    "mean": lambda v: sum(v) / len(v) if v and _all_known(v) else None,
    "sum": lambda v: sum(v) if _all_known(v) else None,
    "sum_known": lambda v: sum(_known(v)),
}

#: operations on two statistics' values, None when either is unknown
_BINARY: dict[str, Callable[[float, float], float | None]] = {
    "minus": operator.sub,
    "plus": operator.add,
    "ratio": lambda x, y: x / y if y else None,
}


class _Compiler:
    """Compiles the expressions of one declaration; errors name the finding."""

    def __init__(self, where: str, constants: Mapping[str, Any], groups: Mapping[str, Any]):
        self.where = where
        self.constants = constants
        self.groups = groups

    def fail(self, msg: str) -> FindingsFileError:
        return FindingsFileError(f"data/findings.yaml, {self.where}: {msg}")

    def subst(self, item: Any, env: Mapping[str, Any]) -> Any:
        """``item`` with ``$name`` replaced (a whole ``$name`` keeps the value's type)."""
        if not isinstance(item, str):
            return item
        scope = {**self.constants, **env}
        whole = _VAR.fullmatch(item)
        if whole:
            if whole.group(1) not in scope:
                raise self.fail(f"unknown name ${whole.group(1)}")
            return scope[whole.group(1)]

        def one(m: re.Match) -> str:
            if m.group(1) not in scope:
                raise self.fail(f"unknown name ${m.group(1)}")
            return str(scope[m.group(1)])

        return _VAR.sub(one, item)

    def stat(self, node: Any, env: Mapping[str, Any] | None = None) -> Stat:
        """The statistic of one expression node."""
        env = env or {}
        if isinstance(node, list):
            ref = tuple(self.subst(x, env) for x in node)
            return lambda v: v(ref)
        if not isinstance(node, dict) or len(node) != 1:
            raise self.fail(f"an expression is a key (a list) or one operation, not {node!r}")
        ((op, arg),) = node.items()
        if op == "ndcg":
            arm, cls = (arg, "all") if isinstance(arg, str) else tuple(arg)
            ref = ("by_class", self.subst(arm, env), self.subst(cls, env), "ndcg_at_10")
            return lambda v: v(ref)
        if op in _BINARY:
            if not isinstance(arg, list) or len(arg) != 2:
                raise self.fail(f"{op} takes two expressions, got {arg!r}")
            f, g, fn = self.stat(arg[0], env), self.stat(arg[1], env), _BINARY[op]

            def binary(v: Lookup) -> float | None:
                x, y = f(v), g(v)
                return None if x is None or y is None else fn(x, y)

            return binary
        if op == "abs":
            f = self.stat(arg, env)
            return lambda v: None if (x := f(v)) is None else abs(x)
        if op in _REDUCE:
            parts, reduce = self.items(arg, env), _REDUCE[op]
            return lambda v: reduce([p(v) for p in parts])
        if op == "slope":
            if not isinstance(arg, dict) or set(arg) != {"x", "y"}:
                raise self.fail("slope takes {x: [e0, e1], y: [e0, e1]}")
            ys, xs = self.items(arg["y"], env), self.items(arg["x"], env)
            if len(ys) != 2 or len(xs) != 2:
                raise self.fail("slope takes two points")
            return lambda v: _slope([p(v) for p in ys], [p(v) for p in xs])
        raise self.fail(f"unknown operation {op!r}")

    def items(self, node: Any, env: Mapping[str, Any]) -> list[Stat]:
        """The statistics of a list of expressions or of ``{for: {VAR: GROUP}, each: e}``."""
        if isinstance(node, list):
            return [self.stat(x, env) for x in node]
        if not isinstance(node, dict) or set(node) != {"for", "each"} or len(node["for"]) != 1:
            raise self.fail(f"expected a list or {{for: {{VAR: GROUP}}, each: ...}}, not {node!r}")
        ((var, group),) = node["for"].items()
        if group not in self.groups:
            raise self.fail(f"unknown group {group!r} (known: {', '.join(sorted(self.groups))})")
        return [self.stat(node["each"], {**env, var: x}) for x in self.groups[group]]

    def condition(self, name: str, text: str, stats: Mapping[str, Stat]) -> Callable:
        """``lookup -> bool | None`` for the condition ``text`` on the statistic ``name``."""
        if name not in stats:
            raise self.fail(f"condition on unknown statistic {name!r}")
        m = _CONDITION.match(self.subst(text, {}))
        if not m:
            raise self.fail(f"condition {text!r}: expected 'OP NUMBER|STATISTIC' or 'in [a, b]'")
        f = stats[name]
        if m.group(1) is None:
            lo, hi = float(m.group(3)), float(m.group(4))
            return lambda v: None if (x := f(v)) is None else lo - _EPS <= x <= hi + _EPS
        test, rhs = _OPS[m.group(1)], m.group(2)
        if rhs in stats:
            g = stats[rhs]

            def against(v: Lookup) -> bool | None:
                x, y = f(v), g(v)
                return None if x is None or y is None else test(x, y)

            return against
        try:
            t = float(rhs)
        except ValueError:
            raise self.fail(f"condition {text!r}: {rhs!r} is no number or statistic") from None
        return lambda v: None if (x := f(v)) is None else test(x, t)


def _all(conds: Sequence[Callable]) -> Callable[[Lookup], bool | None]:
    def f(v: Lookup) -> bool | None:
        vals = [c(v) for c in conds]
        return None if any(x is None for x in vals) else all(vals)

    return f


def _any(conds: Sequence[Callable]) -> Callable[[Lookup], bool | None]:
    def f(v: Lookup) -> bool | None:
        vals = [c(v) for c in conds]
        return None if any(x is None for x in vals) else any(vals)

    return f


@dataclass(frozen=True)
class Finding:
    """One finding, compiled from its declaration.

    Attributes:
        section: docs/STUDY.md section of a study finding (``§1``–``§4``), else None.
        number: its number in docs/STUDY.md §7 (1–12), 13 on for the project's own claims;
            None for a study finding.
        claim: the finding in words.
        statistic: what the number is.
        rule: the verdict rule in words (shown as the tolerance).
        why: the mechanism, and why ours may differ (if known).
        stat: computes the statistic from a lookup (None when an input is missing).
        holds: ``lookup -> bool | None``: all of its conditions hold (None: unknown).
        flips: ``lookup -> bool | None``: any of its conditions holds (None: unknown).
        corpus_dependent: False for a finding whose inputs read no corpus (its value on a
            further corpus is the headline run's).
    """

    section: str | None
    number: int | None
    claim: str
    statistic: str
    rule: str
    why: str
    stat: Stat
    holds: Callable[[Lookup], bool | None]
    flips: Callable[[Lookup], bool | None]
    corpus_dependent: bool = True

    def verdict(self, v: Lookup) -> str:
        """``holds``, ``flips``, ``weakens`` or ``n/a`` (an input is missing)."""
        if self.stat(v) is None:
            return "n/a"
        h, f = self.holds(v), self.flips(v)
        if h is None or f is None:
            return "n/a"
        return "holds" if h else ("flips" if f else "weakens")


def _compile(decl: _Declaration, where: str, constants: dict, groups: dict) -> Finding:
    c = _Compiler(where, constants, groups)
    stats = {"value": c.stat(decl.value)}
    stats.update({k: c.stat(e) for k, e in decl.with_.items()})
    holds = _all([c.condition(k, t, stats) for k, t in decl.holds.items()])
    flips = _any([c.condition(k, t, stats) for k, t in decl.flips.items()])
    texts = {
        **{k: "/".join(map(str, g)) for k, g in groups.items()},
        **{k: str(x) for k, x in constants.items()},
    }
    try:
        claim, statistic, rule, why = (
            s.format_map(texts) for s in (decl.claim, decl.statistic, decl.rule, decl.why)
        )
    except KeyError as exc:
        raise c.fail(f"unknown name {{{exc.args[0]}}} in a text") from None
    return Finding(
        decl.section,
        decl.number,
        claim,
        statistic,
        rule,
        why,
        stats["value"],
        holds,
        flips,
        decl.corpus_dependent,
    )


def load_findings(text: str) -> dict[str, tuple[Finding, ...]]:
    """Compile a findings file (docs/FINDINGS.md) into its lists ``study``, ``headline``, ``ours``.

    Raises:
        FindingsFileError: an unknown operation, group, name or statistic, naming the finding.
        pydantic.ValidationError: a field missing, misspelt or of the wrong type.
    """
    doc = _FindingsFile.model_validate(yaml.safe_load(text))
    constants = {**STUDY_CONSTANTS, **doc.constants}
    groups = {**GROUPS, **{k: tuple(v) for k, v in doc.sets.items()}}
    out = {}
    for part in ("study", "headline", "ours"):
        decls = getattr(doc, part)
        out[part] = tuple(
            _compile(d, f"{part}[{i}] ({d.number or d.claim[:40]})", constants, groups)
            for i, d in enumerate(decls)
        )
    return out


_LOADED = load_findings(
    (resources.files(__package__) / "data" / "findings.yaml").read_text("utf-8")
)

FINDINGS: tuple[Finding, ...] = _LOADED["study"]
"""The study's findings of docs/STUDY.md §1–4, each with the statistic and rule that decide
whether ours reproduces it."""
HEADLINE_FINDINGS: tuple[Finding, ...] = _LOADED["headline"]
"""The twelve findings of docs/STUDY.md §7, in its order."""
DESIGN_FINDINGS: tuple[Finding, ...] = _LOADED["ours"]
"""The project's own claims, checked like the study's: the recommended design's."""
ALL_FINDINGS: tuple[Finding, ...] = HEADLINE_FINDINGS + DESIGN_FINDINGS
"""Every finding the findings table shows, in its row order."""
