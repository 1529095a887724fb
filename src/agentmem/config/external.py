"""Section ``external``: datasets run through every arm (docs/DATASETS.md, docs/LOCOMO.md)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from agentmem.config.base import StrictModel

#: the retrieval settings of an external dataset: each query within its scope (``scoped``:
#: one user's or one conversation's memories, as LoCoMo's authors evaluate) or over every
#: memory of the dataset (``unscoped``: all scopes pooled)
EXTERNAL_SETTINGS = ("scoped", "unscoped")
#: LoCoMo's memory units (agentmem.external.locomo.convert_locomo): dialog turns, the
#: observations generated from them, and session summaries
LOCOMO_UNITS = ("turns", "observations", "summaries")
#: an external dataset's name: a directory name under results/external/ and a wildcard value
DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class _ExternalBase(StrictModel):
    """Keys every external dataset takes."""

    warmup: int = Field(0, ge=0, le=10, description="untimed calls per query before the run")
    repeats: int = Field(
        1,
        ge=1,
        le=50,
        description="calls per query; with warmup 0 and repeats 1 the queries are one untimed "
        "pass through the arms' batch search (runs record no latency)",
    )
    arms: list[str] | None = Field(
        None,
        description="arms to run on this dataset (only those also in arms, in the order of "
        "arms); null: every arm; []: none (the dataset is skipped)",
    )
    tuning_scopes: list[str] = Field(
        default_factory=list,
        description="scopes (conversations, users) some arm's parameters were fixed on; the "
        "scores add a held-out row over the other scopes' questions",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> _ExternalBase:
        if len(set(self.settings)) != len(self.settings):  # type: ignore[attr-defined]
            raise ValueError(f"settings: duplicate names in {self.settings}")  # type: ignore
        if self.arms is not None and len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms: duplicate names in {self.arms}")
        if len(set(self.tuning_scopes)) != len(self.tuning_scopes):
            raise ValueError(f"tuning_scopes: duplicate names in {self.tuning_scopes}")
        return self


class LocomoConfig(_ExternalBase):
    """LoCoMo: read from ``path`` (never copied), converted into one dataset per memory unit."""

    format: Literal["locomo"] = "locomo"
    path: str = Field(
        "data/external/locomo10.json",
        description="LoCoMo JSON (public repository snap-research/LoCoMo, data/locomo10.json); "
        "a relative path is relative to the working directory",
    )
    limit_conversations: int | None = Field(
        None, ge=1, le=10, description="use only the first N conversations (tests)"
    )
    units: list[Literal[LOCOMO_UNITS]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(LOCOMO_UNITS),
        min_length=1,
        description="memory units run as datasets <name>-<unit>: dialog turns, observations, "
        "session summaries",
    )
    settings: list[Literal[EXTERNAL_SETTINGS]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["scoped"],
        min_length=1,
        description="scoped: each question within its conversation (the authors' setting); "
        "unscoped: over every conversation's memories",
    )

    @model_validator(mode="after")
    def _unique_units(self) -> LocomoConfig:
        if len(set(self.units)) != len(self.units):
            raise ValueError(f"units: duplicate names in {self.units}")
        return self


class MemoryDatasetConfig(_ExternalBase):
    """A dataset in the agentmem-memory format (docs/DATASETS.md): a directory at ``path``."""

    format: Literal["agentmem-memory"]
    path: str = Field(
        description="the dataset directory (dataset.json, corpus.jsonl, queries.jsonl, "
        "qrels.tsv); a relative path is relative to the working directory"
    )
    settings: list[Literal[EXTERNAL_SETTINGS]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["scoped"],
        min_length=1,
        description="scoped: each query within its scope (a query without one searches "
        "everything); unscoped: every query over every memory",
    )


def _dataset_format(value: Any) -> str | None:
    """The ``format`` of one ``external`` entry (the tag of the union), ``None`` if absent."""
    if isinstance(value, dict):
        return value.get("format")
    return getattr(value, "format", None)


#: one ``external`` entry, by its ``format``
ExternalDataset = Annotated[
    Annotated[LocomoConfig, Tag("locomo")] | Annotated[MemoryDatasetConfig, Tag("agentmem-memory")],
    Discriminator(
        _dataset_format,
        custom_error_type="format",
        custom_error_message="expected `format: locomo` or `format: agentmem-memory`",
    ),
]


DATASET_TAGS = ("locomo", "agentmem-memory")


def check_external(external: dict[str, Any]) -> None:
    """Raise ValueError for a name that is not path-safe or an id two datasets share."""
    owner: dict[str, str] = {}
    for name, d in external.items():
        if not DATASET_NAME.fullmatch(name):
            raise ValueError(
                f"dataset name {name!r} is not path-safe: use up to 64 letters, "
                "digits, '.', '_' and '-', starting with a letter or digit"
            )
        units = d.units if isinstance(d, LocomoConfig) else [None]
        for unit in units:
            rid = name if unit is None else f"{name}-{unit}"
            where = f"external.{name}" + ("" if unit is None else f" (unit {unit})")
            if rid in owner:
                raise ValueError(
                    f"dataset id {rid!r} of {where} is also the id of {owner[rid]}; "
                    "rename one of them"
                )
            owner[rid] = where
