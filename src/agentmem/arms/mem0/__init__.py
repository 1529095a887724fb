"""The mem0 product arms: mem0's ``Memory`` (``infer=False``) on a local vector store.

``mem0-qdrant`` runs it on qdrant-client's local mode, ``mem0-faiss`` on mem0's FAISS
store; both hand mem0 the cached MiniLM vectors through a replaced embedder
(:class:`~agentmem.arms.mem0.arm.Mem0Arm`). Calls, capabilities and findings:
docs/arms/mem0-qdrant.md and docs/arms/mem0-faiss.md.
"""

from agentmem.arms.mem0.arm import AGENT_ID, Mem0Arm
from agentmem.arms.mem0.stores import Mem0FaissArm, Mem0QdrantArm

__all__ = ["AGENT_ID", "Mem0Arm", "Mem0FaissArm", "Mem0QdrantArm"]
