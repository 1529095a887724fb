"""ArmBase: the per-instance lock and the exception contract every built-in arm inherits."""

from __future__ import annotations

import threading
import time

import pytest

from agentmem.arms.base import ArmBase, ArmError


class _Probe(ArmBase):
    name = "probe"

    def __init__(self) -> None:
        self.inside = 0
        self.overlaps = 0

    def query(self, what: str) -> str:
        self.inside += 1
        if self.inside > 1:
            self.overlaps += 1
        time.sleep(0.002)
        self.inside -= 1
        if what == "attr":
            return None.missing  # type: ignore[attr-defined]
        if what == "value":
            raise ValueError("bad k")
        if what == "nested":
            return self.storage()
        return what

    def storage(self) -> str:
        return "nested ok"

    @property
    def size(self) -> int:
        return 3

    def _private(self) -> None:
        raise KeyError("internal")


def test_foreign_exceptions_become_arm_error_with_cause():
    arm = _Probe()
    with pytest.raises(ArmError, match=r"probe: query failed: AttributeError: .*missing") as info:
        arm.query("attr")
    assert isinstance(info.value.__cause__, AttributeError)
    with pytest.raises(ValueError, match="bad k"):  # documented: bad arguments
        arm.query("value")
    with pytest.raises(KeyError):  # private helpers are not wrapped
        arm._private()
    assert arm.query("nested") == "nested ok"  # re-entrant lock
    assert arm.size == 3


def test_calls_on_one_instance_never_overlap():
    arm = _Probe()
    threads = [
        threading.Thread(target=lambda t=t: [arm.query(t) for _ in range(20)]) for t in "xyz"
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert arm.overlaps == 0
    # the same class without the base overlaps under the same load
    plain = _Probe.__dict__["query"].__wrapped__
    bare = _Probe()
    workers = [
        threading.Thread(target=lambda: [plain(bare, "x") for _ in range(20)]) for _ in range(3)
    ]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert bare.overlaps > 0
