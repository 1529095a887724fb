"""What every SQL arm's build checks first: the corpus's columns and its embeddings."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from support.tiny import make_tiny

from agentmem.arms import base
from agentmem.arms.graph import SqliteGraphArm
from agentmem.arms.sqlite import SqliteFtsArm, SqliteHybridArm


def test_build_memories_adds_a_null_scope_and_names_missing_columns():
    mem = pl.DataFrame({"memory_id": ["M1", "M2"], "body": ["a", "b"]})
    out = base.build_memories(mem, ("memory_id", "body", "scope_id"), "arm-x", "/s")
    assert out.columns == ["memory_id", "body", "scope_id"]
    assert out["scope_id"].to_list() == [None, None] and out["scope_id"].dtype == pl.String
    scoped = mem.with_columns(scope_id=pl.Series(["u1", "u2"]))
    assert base.build_memories(scoped, ("scope_id",), "arm-x", "/s")["scope_id"].to_list() == [
        "u1",
        "u2",
    ]
    with pytest.raises(base.ArmError) as exc:
        base.build_memories(mem, ("memory_id", "seq", "kind"), "arm-x", "/store/m.db")
    assert str(exc.value) == "arm-x: corpus memories lack columns ['seq', 'kind'] (/store/m.db)"


def test_embedding_matrix_rows_follow_the_ids_and_bad_vectors_are_named():
    ids = ["b", "a"]
    vectors = base.Embeddings(["a", "b"], np.arange(2 * base.VECTOR_DIM).reshape(2, -1))
    mat = base.embedding_matrix(vectors, ids, "arm-x", "/s")
    assert mat.dtype == np.float32 and mat.shape == (2, base.VECTOR_DIM)
    assert mat[0, 0] == base.VECTOR_DIM and mat[1, 0] == 0  # row i is the vector of ids[i]
    empty = base.embedding_matrix(vectors, [], "arm-x", "/s")
    assert empty.shape == (0, base.VECTOR_DIM)
    with pytest.raises(base.ArmError) as exc:
        base.embedding_matrix(vectors, ["a", "zz"], "arm-x", "/s/m.db")
    assert str(exc.value) == "arm-x: no embedding for id 'zz' (/s/m.db)"
    short = base.Embeddings(["a"], np.zeros((1, 3), np.float32))
    with pytest.raises(base.ArmError, match=r"arm-x: embeddings have shape \(1, 3\), need"):
        base.embedding_matrix(short, ["a"], "arm-x", "/s")


@pytest.mark.parametrize("cls", [SqliteFtsArm, SqliteHybridArm, SqliteGraphArm])
def test_a_sql_arm_refuses_a_corpus_it_cannot_build(cls, tmp_path):
    corpus, vectors = make_tiny()
    arm = cls()
    lacking = base.Corpus(memories=corpus.memories.drop("created_day"))
    with pytest.raises(base.ArmError, match=r"lack columns \['created_day'\]"):
        arm.build(lacking, vectors, tmp_path / "a")
    first = corpus.memories["memory_id"][0]
    keep = [i for i in vectors.ids if i != first]
    partial = base.Embeddings(keep, vectors.get(keep))
    if cls is SqliteFtsArm:  # a text arm reads no vectors: it builds without them
        assert arm.build(corpus, partial, tmp_path / "b").ingest_ms >= 0
    else:
        with pytest.raises(base.ArmError, match=f"no embedding for id {first!r}"):
            arm.build(corpus, partial, tmp_path / "b")
    arm.close()
