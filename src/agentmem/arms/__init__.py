"""The arm registry: ``ARMS`` maps each arm's name to its class (the one place arms are listed)."""

from __future__ import annotations

from agentmem.arms.base import Arm
from agentmem.arms.files import FileJsonlArm
from agentmem.arms.graph import SqliteGraphArm
from agentmem.arms.postgres import (
    PgBtreeArm,
    PgGinArm,
    PgHnswArm,
    PgHnswIterativeArm,
    PgHybridArm,
)
from agentmem.arms.sqlite import SqliteBtreeArm, SqliteFtsArm, SqliteHybridArm
from agentmem.arms.three_tier import ThreeTierArm
from agentmem.arms.vector import FileVecArm, FileVecMetaArm

ARMS: dict[str, type[Arm]] = {
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
    )
}

__all__ = ["ARMS", "Arm"]
