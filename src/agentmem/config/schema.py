"""The JSON schema of :class:`~agentmem.config.Config`, written by ``agentmem schema``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from agentmem.config.root import Config


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of :class:`Config` (draft 2020-12, as pydantic emits it)."""
    schema = Config.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    # An ``external`` entry picks its schema by ``format`` (if/then/else, not pydantic's
    # oneOf): Snakemake's validate fills defaults while it validates, and under oneOf the
    # branch that fails (LoCoMo's, for an agentmem-memory entry) would still write its
    # defaults into the entry and make the other branch fail too.
    schema["properties"]["external"]["additionalProperties"] = {
        "if": {
            "properties": {"format": {"const": "agentmem-memory"}},
            "required": ["format"],
        },
        "then": {"$ref": "#/$defs/MemoryDatasetConfig"},
        "else": {"$ref": "#/$defs/LocomoConfig"},
    }
    return schema


def write_json_schema(path: str | Path) -> None:
    """Write :func:`json_schema` as YAML to ``path`` (``workflow/schemas/config.schema.yaml``)."""
    text = "# generated from agentmem.config.Config by `agentmem schema`; do not edit\n"
    text += yaml.safe_dump(json_schema(), sort_keys=True)
    Path(path).write_text(text)
