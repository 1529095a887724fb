"""The file arm (family ``file``): ``file-jsonl``, an append-only JSONL memory file.

Recall re-reads and re-parses the whole file on every call; design notes:
docs/arms/files.md. Modules: :mod:`~agentmem.arms.files.jsonl` (the arm),
:mod:`~agentmem.arms.files.reader` (one read of the file),
:mod:`~agentmem.arms.files.recovery` (torn-line recovery) and
:mod:`~agentmem.arms.files.scan` (the term-count scan).
"""

from agentmem.arms.files.jsonl import JSONL_NAME, FileJsonlArm
from agentmem.arms.files.reader import FETCH_SCHEMA, SCAN_SCHEMA, SCOPED_SCAN_SCHEMA

__all__ = ["FETCH_SCHEMA", "JSONL_NAME", "SCAN_SCHEMA", "SCOPED_SCAN_SCHEMA", "FileJsonlArm"]
