"""The Chroma product arm (``chroma``): one embedded Chroma collection fed our vectors.

Module: :mod:`~agentmem.arms.chroma.arm`; API calls and findings: docs/arms/chroma.md.
"""

from agentmem.arms.chroma.arm import COLLECTION, ChromaArm
from agentmem.arms.chroma.filters import query_where, where_filter

__all__ = ["COLLECTION", "ChromaArm", "query_where", "where_filter"]
