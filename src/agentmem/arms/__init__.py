"""The arm registry: ``ARMS`` maps each arm's name to its class (the one place arms are listed).

``ARMS`` holds the built-in arms (:data:`BUILTIN_ARMS`) and every plug-in arm an installed
package declares in the ``agentmem.arms`` entry-point group (:mod:`agentmem.arms.registry`).
Plug-ins that clash, fail to import or break the contract are not registered; they are in
:data:`PLUGIN_PROBLEMS`, and :func:`check_plugins` refuses them.
"""

from __future__ import annotations

from agentmem.arms.base import Arm, ArmError
from agentmem.arms.chroma import ChromaArm
from agentmem.arms.files import FileJsonlArm
from agentmem.arms.graph import SqliteGraphArm
from agentmem.arms.lance import LanceDbArm, LanceDbHybridArm
from agentmem.arms.langgraph_store import LangGraphStoreArm
from agentmem.arms.mem0 import Mem0FaissArm, Mem0QdrantArm
from agentmem.arms.milvus import MilvusLiteArm
from agentmem.arms.postgres import (
    PgBtreeArm,
    PgGinArm,
    PgHnswArm,
    PgHnswIterativeArm,
    PgHybridArm,
)
from agentmem.arms.registry import PluginProblem, discover, format_problems
from agentmem.arms.sqlite import SqliteBtreeArm, SqliteFtsArm, SqliteGatedArm, SqliteHybridArm
from agentmem.arms.three_tier import ThreeTierArm
from agentmem.arms.vector import FileVecArm, FileVecMetaArm

#: The arms shipped with agentmem, name -> class.
BUILTIN_ARMS: dict[str, type[Arm]] = {
    cls.name: cls
    for cls in (
        FileJsonlArm,
        FileVecArm,
        FileVecMetaArm,
        SqliteFtsArm,
        SqliteBtreeArm,
        SqliteHybridArm,
        PgBtreeArm,
        PgGinArm,
        PgHnswArm,
        PgHybridArm,
        PgHnswIterativeArm,
        SqliteGraphArm,
        ThreeTierArm,
        # products, driven through their own APIs (family "product")
        ChromaArm,
        LanceDbArm,
        LanceDbHybridArm,
        MilvusLiteArm,
        LangGraphStoreArm,
        Mem0QdrantArm,
        Mem0FaissArm,
        # the design the measurements recommend (last: every other arm keeps its colour)
        SqliteGatedArm,
    )
}

_FOUND = discover(BUILTIN_ARMS)

#: Every registered arm, name -> class: the built-ins, then the plug-ins that passed.
ARMS: dict[str, type[Arm]] = {**BUILTIN_ARMS, **_FOUND.arms}

#: Plug-in arm name -> ``"distribution version"`` of the package that declares it.
PLUGIN_PACKAGES: dict[str, str] = dict(_FOUND.packages)

#: Plug-in arms left out of :data:`ARMS`, with the reasons.
PLUGIN_PROBLEMS: list[PluginProblem] = list(_FOUND.problems)


def arm_package(name: str) -> str | None:
    """The package (``"distribution version"``) of plug-in arm ``name``; ``None`` if built-in."""
    return PLUGIN_PACKAGES.get(name)


def plugin_problem(name: str) -> PluginProblem | None:
    """Why the plug-in arm ``name`` is not registered, or ``None`` if no plug-in claims it."""
    return next((p for p in PLUGIN_PROBLEMS if p.arm == name), None)


def check_plugins() -> None:
    """Refuse broken plug-in arms (the workflow calls this before any job).

    Raises:
        ArmError: listing every plug-in that clashes, fails to import or breaks the arm
            contract, each with its arm name, package and what is wrong.
    """
    if PLUGIN_PROBLEMS:
        raise ArmError(format_problems(PLUGIN_PROBLEMS))


__all__ = [
    "ARMS",
    "BUILTIN_ARMS",
    "PLUGIN_PACKAGES",
    "PLUGIN_PROBLEMS",
    "Arm",
    "arm_package",
    "check_plugins",
    "plugin_problem",
]
