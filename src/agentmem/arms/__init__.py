"""The arm registry: ``ARMS`` maps each arm's name to its class (the one place arms are listed)."""

from __future__ import annotations

from agentmem.arms.base import Arm

ARMS: dict[str, type[Arm]] = {}

__all__ = ["ARMS", "Arm"]
