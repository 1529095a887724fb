"""Where the repository and the shared data sets are."""

from __future__ import annotations

from pathlib import Path

#: the repository root (the directory holding Snakefile and config/)
REPO = Path(__file__).resolve().parents[2]
#: the shared folder beside the repository (absent in a user's clone)
SHARED = REPO.parent / "shared"
#: the LoCoMo file (the LoCoMo tests skip when it is absent)
LOCOMO = SHARED / "data" / "locomo" / "locomo10.json"
