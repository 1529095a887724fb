"""``example-bag``: an agentmem arm in a package of its own (the plug-in example).

The whole store is one JSON document, ``bag.json``: the memory rows and their
embeddings. ``query`` keeps the rows its scope and predicate admit, scores them by cosine
similarity to the query embedding (numpy, brute force) and returns the best ``k``, ties
broken by ``memory_id``. ``remember`` appends rows, marks corrected rows superseded and
rewrites the document atomically (temporary file, then rename), so a reader never sees
half a store. Small, slow on large corpora, and complete: it implements the whole
:class:`agentmem.arms.base.Arm` contract.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from agentmem.arms import base

STORE_FILE = "bag.json"


class ExampleBagArm(base.ArmBase):
    """Brute-force cosine over a JSON bag of memories; predicates filter before scoring."""

    name = "example-bag"
    family = "example"
    capabilities = base.Capabilities(
        predicate=True, vector_access="brute-force", filter_stage="in-search"
    )
    prefix_stable = True  # a total order (score, then id) cut at k

    def __init__(self) -> None:
        self._path: Path | None = None
        self._rows: list[dict[str, Any]] = []
        self._vectors = np.zeros((0, base.VECTOR_DIM), dtype=np.float32)
        self._index: dict[str, int] = {}

    # ------------------------------------------------------------------ store file
    def _write(self, path: Path, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        """Replace the store document atomically with ``rows`` and ``vectors``."""
        doc = {"memories": rows, "vectors": vectors.tolist()}
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def _load(self, path: Path) -> None:
        """Read the store document into memory."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise base.ArmError(f"{self.name}: no store at {path}") from None
        except (OSError, ValueError) as exc:
            raise base.ArmError(f"{self.name}: cannot read {path}: {exc}") from None
        self._rows = doc["memories"]
        self._vectors = np.asarray(doc["vectors"], dtype=np.float32).reshape(-1, base.VECTOR_DIM)
        self._index = {r["memory_id"]: i for i, r in enumerate(self._rows)}
        self._path = path

    def _open_path(self) -> Path:
        if self._path is None:
            raise base.ArmError(f"{self.name}: the store is not open (call build or open first)")
        return self._path

    # -------------------------------------------------------------------- contract
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Path
    ) -> base.BuildStats:
        """Write every corpus memory and its embedding to ``store_dir/bag.json``."""
        t0 = time.perf_counter()
        mem = corpus.memories
        batch = base.prepare_memories(
            mem.select([c for c in mem.columns if c in base.MEMORY_SCHEMA]),
            vectors,
            self.name,
            "build",
        )
        store_dir = Path(store_dir)
        store_dir.mkdir(parents=True, exist_ok=True)
        path = store_dir / STORE_FILE
        self._write(path, batch.memories.to_dicts(), batch.vectors)
        self._load(path)
        return base.BuildStats(ingest_ms=(time.perf_counter() - t0) * 1000, index_ms=0.0)

    def open(self, store_dir: Path) -> None:
        """Load ``store_dir/bag.json``; ArmError naming the path when it is missing."""
        self._load(Path(store_dir) / STORE_FILE)

    def remember(self, memories: pl.DataFrame, vectors: base.Embeddings) -> None:
        """Append ``memories``, apply their ``supersedes`` lists, rewrite the store."""
        path = self._open_path()
        batch = base.prepare_memories(memories, vectors, self.name)
        for mid in batch.ids:
            if mid in self._index:
                raise base.ArmError(f"{self.name}: memory {mid!r} is already stored")
        rows = [dict(r) for r in self._rows] + batch.memories.to_dicts()
        index = {r["memory_id"]: i for i, r in enumerate(rows)}
        for old, new in batch.supersessions:
            if old not in index:
                raise base.ArmError(f"{self.name}: {new!r} supersedes {old!r}, which is not stored")
            rows[index[old]]["superseded_by"] = new
        vecs = np.concatenate([self._vectors, batch.vectors])
        self._write(path, rows, vecs)  # all or nothing: memory changes only after this
        self._rows, self._vectors, self._index = rows, vecs, index

    def query(self, q: base.Query, k: int) -> base.Result:
        """Top ``k`` rows the scope and predicate admit, by cosine to ``q.embedding``."""
        self._open_path()
        # None, non-numeric (strings), the wrong length: an ArmError naming arm and query
        v = base.checked_vector(q.embedding, self.name, f"query {q.query_id!r}")
        if not np.all(np.isfinite(v)):
            raise base.ArmError(
                f"{self.name}: query {q.query_id!r} embedding has non-finite values"
            )
        if k <= 0:
            return base.Result([])
        keep = [i for i, r in enumerate(self._rows) if all(p.matches(r) for p in q.filters)]
        scores = self._vectors[keep] @ v if keep else np.zeros(0, np.float32)
        ranked = sorted(
            zip(scores.tolist(), keep, strict=True),
            key=lambda s: (-s[0], self._rows[s[1]]["memory_id"]),
        )
        return base.Result([self._rows[i]["memory_id"] for _, i in ranked[:k]])

    def fetch(self, memory_ids: Sequence[str]) -> pl.DataFrame:
        """The stored rows of ``memory_ids``, in the order asked, each once."""
        self._open_path()
        wanted = [m for m in dict.fromkeys(memory_ids) if m in self._index]
        return pl.DataFrame([self._rows[self._index[m]] for m in wanted], schema=base.MEMORY_SCHEMA)

    def explain(self, q: base.Query, k: int = 10) -> str:
        """Describe the scan (there is no engine plan)."""
        self._open_path()
        cond = " and ".join(str(p) for p in q.filters)
        where = f"rows where {cond}" if cond else "every row"
        return (
            f"scan {len(self._rows)} rows of {STORE_FILE}; score {where} by cosine "
            f"(numpy dot product); sort by score, then memory_id; keep {k}"
        )

    def storage(self) -> base.StorageStats:
        """Size of the store document."""
        path = self._open_path()
        size = path.stat().st_size
        return base.StorageStats(
            total_bytes=size,
            objects={STORE_FILE: size},
            source="file sizes",
            counts={"memories": len(self._rows)},
        )

    def close(self) -> None:
        """Forget the loaded store (nothing is held open); safe to call twice."""
        self._path = None
        self._rows, self._index = [], {}
        self._vectors = np.zeros((0, base.VECTOR_DIM), dtype=np.float32)
