"""The helpers every product arm shares (agentmem.arms.product)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from agentmem.arms.base import MEMORY_SCHEMA, ArmError, Embeddings, prepare_memories
from agentmem.arms.product import (
    METADATA_FIELDS,
    NO_ID,
    STORED_COLUMNS,
    directory_storage,
    metadata_rows,
    rows_frame,
)


def _batch() -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "memory_id": ["a", "b"],
            "body": ["first", "second"],
            "created_day": [3, 40],
            "session_id": [None, "s1"],
            "fact_id": ["f1", None],
            "seq": [10, 11],
            "scope_id": [None, "u'1"],
        }
    )
    vecs = Embeddings(ids=["a", "b"], matrix=np.eye(2, 384, dtype=np.float32))
    return prepare_memories(frame, vecs, "probe").memories


def test_an_empty_scope_id_is_refused_before_any_arm_sees_it() -> None:
    # products store "" for null (unscoped), the others "" verbatim: a scope no Query can name
    frame = pl.DataFrame({"memory_id": ["a", "b"], "body": ["x", "y"], "created_day": [1, 2],
                          "scope_id": ["u1", ""]})  # fmt: skip
    vecs = Embeddings(ids=["a", "b"], matrix=np.eye(2, 384, dtype=np.float32))
    with pytest.raises(ArmError, match=r"probe: remember: memory 'b' has an empty scope_id"):
        prepare_memories(frame, vecs, "probe")
    ok = prepare_memories(frame.with_columns(scope_id=pl.Series(["u1", None])), vecs, "probe")
    assert ok.memories["scope_id"].to_list() == ["u1", None]


def test_metadata_rows_make_nulls_storable() -> None:
    rows = metadata_rows(_batch())
    assert [r["memory_id"] for r in rows] == ["a", "b"]
    assert rows[0]["session_id"] == NO_ID and rows[1]["session_id"] == "s1"
    assert rows[0]["fact_id"] == "f1" and rows[1]["fact_id"] == NO_ID
    assert rows[0]["superseded_by"] == NO_ID
    assert rows[0]["scope_id"] == NO_ID and rows[1]["scope_id"] == "u'1"
    assert rows[0]["turn_no"] == -1
    assert rows[1]["created_day"] == 40 and isinstance(rows[1]["created_day"], int)
    assert rows[0]["kind"] == "episodic" and rows[0]["confidence"] == 1.0
    assert "body" not in rows[0] and "entity_ids" not in rows[0]


def test_rows_frame_inverts_metadata_rows() -> None:
    batch = _batch()
    rows = metadata_rows(batch)
    for r, body in zip(rows, ["first", "second"], strict=True):
        r["body"] = body
    back = rows_frame(rows)
    assert back.schema == pl.Schema(MEMORY_SCHEMA)
    want = batch.with_columns(entity_ids=pl.lit(None, dtype=pl.List(pl.String)))
    assert back.to_dicts() == want.to_dicts()
    assert rows_frame([]).height == 0


def test_directory_storage_sums_files_per_entry(tmp_path: Path) -> None:
    (tmp_path / "one.bin").write_bytes(b"x" * 10)
    sub = tmp_path / "index" / "deep"
    sub.mkdir(parents=True)
    (sub / "a").write_bytes(b"y" * 7)
    (tmp_path / "index" / "b").write_bytes(b"z" * 5)
    got = directory_storage(tmp_path)
    assert got.objects == {"index/": 12, "one.bin": 10}
    assert got.total_bytes == 22
    assert got.source == "directory size"
    with pytest.raises(ArmError, match="does not exist"):
        directory_storage(tmp_path / "missing")


def test_matchless_ids_are_the_null_marker_and_non_utf8_strings() -> None:
    from agentmem.arms.product import STORED_COLUMNS, matchless_id

    assert matchless_id("") and matchless_id("\ud800") and matchless_id("S1\udfff")
    assert not matchless_id("S1") and not matchless_id("*") and not matchless_id(" ")
    assert not matchless_id(12) and not matchless_id(None)
    assert STORED_COLUMNS == tuple(c for c in MEMORY_SCHEMA if c != "entity_ids")
    assert "body" in STORED_COLUMNS and len(STORED_COLUMNS) == len(MEMORY_SCHEMA) - 1


def test_scope_id_is_stored_and_a_missing_column_means_no_scope() -> None:
    assert METADATA_FIELDS["scope_id"] is str and "scope_id" in STORED_COLUMNS
    frame = pl.DataFrame({"memory_id": ["a"], "body": ["x"], "created_day": [1]})
    (row,) = metadata_rows(frame)  # a corpus without the id columns: all stored as ""
    assert row == {
        "memory_id": "a",
        "created_day": 1,
        "session_id": NO_ID,
        "fact_id": NO_ID,
        "superseded_by": NO_ID,
        "form": NO_ID,
        "scope_id": NO_ID,
    }
    back = rows_frame([{**row, "body": "x"}, {**row, "memory_id": "b", "scope_id": "u1"}])
    assert back["scope_id"].to_list() == [None, "u1"]
