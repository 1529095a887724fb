"""Arm discovery: the built-in arms plus plug-in arms from installed packages.

A package adds an arm by declaring an entry point in the group :data:`ENTRY_POINT_GROUP`
(``agentmem.arms``) whose name is the arm's name and whose object is the arm class::

    [project.entry-points."agentmem.arms"]
    example-bag = "agentmem_example_arm:ExampleBagArm"

:func:`discover` loads every such entry point and checks the class against the
:class:`~agentmem.arms.base.Arm` protocol (:func:`contract_problems`). A plug-in that
clashes with another arm's name, fails to import or breaks the contract is left out of
the registry and reported as a :class:`PluginProblem` (arm, package, what is wrong); the
workflow refuses to start while any is reported.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, ClassVar

from agentmem.arms import base

__all__ = [
    "ENTRY_POINT_GROUP",
    "Discovery",
    "PluginProblem",
    "contract_problems",
    "discover",
    "format_problems",
]

#: The entry-point group plug-in packages declare their arms in.
ENTRY_POINT_GROUP = "agentmem.arms"


@dataclass(frozen=True)
class PluginProblem:
    """Why one plug-in arm was not registered.

    Attributes:
        arm: the entry point's name (the arm name it claims).
        package: the distribution that declares it, with its version (``pkg 1.0``).
        target: the entry point's object reference (``module:Class``).
        problems: what is wrong, one item per problem (an import error, a name clash,
            each missing or ill-typed member).
    """

    arm: str
    package: str
    target: str
    problems: tuple[str, ...]

    def message(self) -> str:
        """``plug-in arm 'x' (package p 1.0, entry point m:C): problem`` (one item per line)."""
        head = f"plug-in arm {self.arm!r} (package {self.package}, entry point {self.target})"
        if len(self.problems) == 1:
            return f"{head}: {self.problems[0]}"
        return f"{head}:\n" + "\n".join(f"  - {p}" for p in self.problems)


@dataclass
class Discovery:
    """What :func:`discover` found.

    Attributes:
        arms: plug-in arm name -> class, for the plug-ins that passed every check.
        packages: plug-in arm name -> ``"distribution version"``, for those arms.
        problems: the plug-ins left out, in entry-point order.
    """

    arms: dict[str, type[base.Arm]] = field(default_factory=dict)
    packages: dict[str, str] = field(default_factory=dict)
    problems: list[PluginProblem] = field(default_factory=list)


def _contract() -> tuple[dict[str, type], dict[str, tuple[str, ...]]]:
    """The protocol's class attributes (name -> type) and methods (name -> argument names).

    Read from :class:`~agentmem.arms.base.Arm` itself, so the check follows the protocol.
    """
    hints = typing.get_type_hints(base.Arm)
    attrs = {n: typing.get_args(t)[0] for n, t in hints.items() if typing.get_origin(t) is ClassVar}
    methods = {}
    for n, fn in vars(base.Arm).items():
        if n.startswith("_") or not inspect.isfunction(fn):
            continue
        params = list(inspect.signature(fn).parameters.values())[1:]  # drop self
        methods[n] = tuple(
            p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        )
    return attrs, methods


def _plain(sig: inspect.Signature) -> str:
    """``sig`` without annotations, for messages: ``(self, q, k=10)``."""
    empty = inspect.Parameter.empty
    params = [p.replace(annotation=empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=empty))


def _capability_problems(caps: base.Capabilities) -> list[str]:
    """Fields of ``caps`` whose value does not have the declared type or literal value."""
    out = []
    hints = typing.get_type_hints(base.Capabilities)
    for f in dataclasses.fields(base.Capabilities):
        want, value = hints[f.name], getattr(caps, f.name)
        if typing.get_origin(want) is typing.Literal:
            if value not in typing.get_args(want):
                out.append(
                    f"capabilities.{f.name} is {value!r}, not one of {typing.get_args(want)}"
                )
        elif not isinstance(value, want):
            out.append(
                f"capabilities.{f.name} is {value!r}, not a {getattr(want, '__name__', want)}"
            )
    return out


def contract_problems(cls: Any, name: str | None = None) -> list[str]:
    """List what ``cls`` lacks of the :class:`~agentmem.arms.base.Arm` contract.

    Checked: ``cls`` is a class constructible without arguments (``ARMS[name]()``); the
    class attributes ``name``, ``family`` (non-empty ``str``), ``capabilities``
    (a :class:`~agentmem.arms.base.Capabilities` with well-typed fields) and
    ``prefix_stable`` (``bool``); every protocol method (``build``, ``open``,
    ``remember``, ``fetch``, ``query``, ``explain``, ``storage``, ``close``) present,
    callable and accepting the protocol's positional arguments. The optional bench hooks
    are not required.

    Args:
        cls: the object an entry point loaded.
        name: the name the arm is registered under; ``cls.name`` must equal it.

    Returns:
        One message per problem (empty when the class satisfies the contract).
    """
    if not inspect.isclass(cls):
        return [f"the entry point names a {type(cls).__name__}, not an arm class"]
    attrs, methods = _contract()
    out = []
    for attr, want in attrs.items():
        if not hasattr(cls, attr):
            out.append(f"class attribute {attr!r} is missing (a {want.__name__})")
            continue
        value = getattr(cls, attr)
        if not isinstance(value, want) or (want is str and not value):
            out.append(
                f"class attribute {attr!r} is {value!r}, not a "
                f"{'non-empty ' if want is str else ''}{want.__name__}"
            )
        elif want is base.Capabilities:
            out.extend(_capability_problems(value))
    own = getattr(cls, "name", None)
    if name is not None and isinstance(own, str) and own and own != name:
        out.append(f"class attribute 'name' is {own!r}, but the entry point is named {name!r}")
    for meth, args in methods.items():
        fn = getattr(cls, meth, None)
        if fn is None:
            out.append(f"method {meth}() is missing")
            continue
        if not callable(fn):
            out.append(f"{meth} is a {type(fn).__name__}, not a method")
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):  # a builtin without a signature: cannot tell
            continue
        try:
            sig.bind(None, *([None] * len(args)))
        except TypeError:
            out.append(
                f"method {meth}{_plain(sig)} cannot be called as "
                f"{meth}({', '.join(args)}) (the protocol's arguments)"
            )
    try:
        inspect.signature(cls).bind()
    except TypeError:
        out.append(
            f"the constructor {cls.__name__}{_plain(inspect.signature(cls))} needs arguments; "
            "give every parameter a default (the pipeline calls it without any)"
        )
    except ValueError:  # no signature to inspect
        pass
    return out


def _package(ep: metadata.EntryPoint) -> str:
    """``"distribution version"`` of the package declaring ``ep``."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "(unknown package)"
    return f"{dist.name} {dist.version}"


def discover(builtin: Mapping[str, type], group: str = ENTRY_POINT_GROUP) -> Discovery:
    """Load and check every plug-in arm of the entry-point ``group``.

    Never raises for a broken plug-in: an entry point that clashes with a built-in or
    another plug-in, whose import raises (any exception, ``SystemExit`` included), or
    whose class fails :func:`contract_problems` is recorded in
    :attr:`Discovery.problems` and left out of :attr:`Discovery.arms`. When two plug-ins
    claim one name, neither is registered.

    Args:
        builtin: the built-in registry (name -> class).
        group: the entry-point group to read.

    Returns:
        The :class:`Discovery`.
    """
    found = Discovery()
    eps = list(metadata.entry_points(group=group))
    claims: dict[str, list[str]] = {}
    for ep in eps:
        claims.setdefault(ep.name, []).append(_package(ep))
    for ep in eps:
        pkg = _package(ep)
        problems: list[str] = []
        if ep.name in builtin:
            problems.append(f"the name clashes with the built-in arm {ep.name!r}; rename it")
        others = sorted(p for p in claims[ep.name] if p != pkg)
        if others:
            problems.append(f"the name is also declared by package {', '.join(others)}; rename one")
        try:
            cls = ep.load()
        except BaseException as exc:  # noqa: BLE001 - any failure of a plug-in's import
            if isinstance(exc, KeyboardInterrupt):
                raise
            problems.append(f"import failed: {type(exc).__name__}: {exc}")
        else:
            problems.extend(contract_problems(cls, ep.name))
        if problems:
            found.problems.append(PluginProblem(ep.name, pkg, ep.value, tuple(problems)))
        else:
            found.arms[ep.name] = cls
            found.packages[ep.name] = pkg
    return found


def format_problems(problems: list[PluginProblem]) -> str:
    """The message that stops the workflow: every broken plug-in, then what to do."""
    body = "\n".join(p.message() for p in problems)
    return (
        f"agentmem: broken plug-in arms (entry-point group {ENTRY_POINT_GROUP!r}):\n"
        + "\n".join("  " + line for line in body.splitlines())
        + "\nFix or uninstall the package(s) named above; "
        "`agentmem arms` lists the arms that are registered."
    )
