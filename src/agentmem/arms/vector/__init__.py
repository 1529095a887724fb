"""The vector-file arms (family ``vector``): an hnswlib HNSW index beside a metadata file.

``file-vec`` takes the top-k by cosine with no predicate filter and no counts (a scope
is filtered inside the search); ``file-vec-meta`` post-filters ``k * overfetch``
neighbours on the metadata, scope included. Store layout, durability, scope and the
choice of ``ef_search``: docs/arms/vector.md.

Modules: :mod:`~agentmem.arms.vector.hnsw` (building the index),
:mod:`~agentmem.arms.vector.recall` (exact search and recall@k),
:mod:`~agentmem.arms.vector.scopes` (the labels of each scope),
:mod:`~agentmem.arms.vector.store` (the store both arms share) and one module per arm
(:mod:`~agentmem.arms.vector.file_vec`, :mod:`~agentmem.arms.vector.file_vec_meta`).
"""

from agentmem.arms.vector.file_vec import FileVecArm
from agentmem.arms.vector.file_vec_meta import FileVecMetaArm
from agentmem.arms.vector.hnsw import DEFAULT_EF_SEARCH, DEFAULT_SEED, SPACE, build_hnsw
from agentmem.arms.vector.recall import exact_topk, recall_by_ef, recall_vs_exact, topk_recall
from agentmem.arms.vector.store import INDEX_NAME, MANIFEST_NAME, META_NAME, HnswStore

__all__ = [
    "DEFAULT_EF_SEARCH",
    "DEFAULT_SEED",
    "INDEX_NAME",
    "MANIFEST_NAME",
    "META_NAME",
    "SPACE",
    "FileVecArm",
    "FileVecMetaArm",
    "HnswStore",
    "build_hnsw",
    "exact_topk",
    "recall_by_ef",
    "recall_vs_exact",
    "topk_recall",
]
