"""ArmBase: the per-instance lock and the exception contract every built-in arm inherits;
the one conversion of embeddings to float32 every arm uses."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import numpy as np
import polars as pl
import pytest

from agentmem.arms import base


class _Probe(base.ArmBase):
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
    with pytest.raises(
        base.ArmError, match=r"probe: query failed: AttributeError: .*missing"
    ) as info:
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


# ------------------------------------------------------------ embeddings as float32
@pytest.mark.parametrize(
    "values",
    [
        [1, 2, 3],
        np.array([0.5, 1.5, -2.0], dtype=np.float64),
        np.array([[1, 0], [0, 1]], dtype=np.int64),
        np.array([True, False]),
        [Decimal("0.25"), Decimal("1")],
        np.arange(6, dtype=np.float32)[::2],  # not contiguous
    ],
)
def test_float32_array_converts_numbers_keeping_the_shape(values):
    got = base.float32_array(values, "arm-x", "query 'q1' embedding")
    assert got.dtype == np.float32 and got.flags["C_CONTIGUOUS"]
    assert got.shape == np.asarray(values).shape
    np.testing.assert_array_equal(got, np.asarray(values, dtype=np.float64).astype(np.float32))


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        (np.array(["a", "b"]), "not numeric (dtype <U1)"),
        (["a", "b"], "not numeric (dtype <U1)"),
        (["0.5", "1.5"], "not numeric (dtype <U3)"),  # numpy would read these as numbers
        (np.array([b"a"]), "not numeric (dtype |S1)"),
        (np.array([1 + 2j]), "not numeric (dtype complex128)"),
        (np.array(["2024-01-01"], dtype="datetime64[D]"), "not numeric (dtype datetime64[D])"),
        (np.array([1.0, "a"], dtype=object), "not an array of numbers (could not convert"),
        ([[1.0], [1.0, 2.0]], "not an array of numbers ("),  # ragged
    ],
)
def test_float32_array_refuses_what_is_not_numbers_naming_arm_and_field(values, reason):
    with pytest.raises(base.ArmError) as info:
        base.float32_array(values, "arm-x", "query 'q1' embedding")
    assert str(info.value).startswith(f"arm-x: query 'q1' embedding: {reason}")


def test_checked_vector_and_prepare_memories_name_the_arm_and_field():
    words = np.array(["a", "b"] * 192)
    for emb in (words, words.tolist()):
        with pytest.raises(base.ArmError, match=r"^sqlite-fts: query 'q1' embedding: not numeric "):
            base.checked_vector(emb, "sqlite-fts", "query 'q1'")
    assert base.checked_vector(np.ones((1, 384)), "a", "q").shape == (384,)
    frame = pl.DataFrame([{"memory_id": "N1", "body": "b", "created_day": 1}])
    with pytest.raises(base.ArmError, match=r"^sqlite-fts: remember: embeddings: not numeric "):
        base.prepare_memories(frame, base.Embeddings(["N1"], words.reshape(1, -1)), "sqlite-fts")
