"""The arms the conformance suite (tests/test_conformance.py) runs on.

``conftest.pytest_configure`` fills :data:`SELECTED_ARMS` from ``--arm`` before any test
module is imported, so ``@pytest.fixture(params=conformance_arms())`` sees the selection.
"""

from __future__ import annotations

#: arms given with ``--arm``, in the order given, without repeats
SELECTED_ARMS: list[str] = []


def conformance_arms() -> list[str]:
    """The arms the conformance suite runs on: those given with ``--arm``, else all."""
    from agentmem.arms import ARMS

    return list(SELECTED_ARMS) or sorted(ARMS)
