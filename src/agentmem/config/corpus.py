"""Sections ``sizes``, ``corpus`` and ``validation``: the generated corpus (docs/CORPUS.md)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from agentmem.config.base import StrictModel


class SizeConfig(StrictModel):
    """One corpus size: how many facts to render and how many queries per class."""

    facts: int = Field(ge=10, le=1_000_000, description="facts in the world (m: 2,500)")
    queries_per_class: int = Field(ge=1, le=1000, description="queries drawn per class")


class RestatementConfig(StrictModel):
    """How many memories each fact is rendered into (docs/STUDY.md §1: every 11th fact heavy)."""

    every_nth_heavy: int = Field(
        11, ge=0, description="every n-th fact gets heavy restatement; 0: none (light only)"
    )
    heavy_min: int = Field(6, ge=1)
    heavy_max: int = Field(14, ge=1)
    light_min: int = Field(1, ge=1)
    light_max: int = Field(4, ge=1)

    @model_validator(mode="after")
    def _ranges(self) -> RestatementConfig:
        if self.heavy_min > self.heavy_max:
            raise ValueError(f"heavy_min {self.heavy_min} > heavy_max {self.heavy_max}")
        if self.light_min > self.light_max:
            raise ValueError(f"light_min {self.light_min} > light_max {self.light_max}")
        return self


class CorpusConfig(StrictModel):
    """Generator options (docs/STUDY.md §1); defaults reproduce the study's main corpus."""

    seed: int = Field(20260809, ge=0, description="RNG seed; same seed -> byte-identical corpus")
    restatements: RestatementConfig = RestatementConfig()
    distractor_ratio: float = Field(
        0.172, ge=0.0, le=2.0, description="distractors per rendered memory"
    )
    superseded_fraction: float = Field(0.12, ge=0.0, le=0.9, description="facts later corrected")
    correction_day: int = Field(320, ge=1, description="day the corrections are written")
    days: int = Field(365, ge=30, description="length of the simulated year in days")
    memories_per_session: int = Field(25, ge=2, le=1000)
    temporal_cutoff_day: int = Field(160, ge=1, description="'before day N' in temporal queries")
    restated_after_correction: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="share of corrected facts restated once more with their old value after "
        "the correction (a stale memory newer than the correction: recency is then not "
        "currency); 0 keeps every correction the newest memory of its fact",
    )

    @model_validator(mode="after")
    def _days(self) -> CorpusConfig:
        if not self.temporal_cutoff_day < self.correction_day < self.days:
            raise ValueError(
                "need temporal_cutoff_day < correction_day < days, got "
                f"{self.temporal_cutoff_day}, {self.correction_day}, {self.days}"
            )
        return self


class ValidationConfig(StrictModel):
    """Corpus validation (docs/VALIDATION.md); its RNG seed is the corpus seed."""

    random_pairs: int = Field(1000, ge=400, description="memory pairs of the baseline cosine")


def merge_options(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in key by key, nested mappings merged too (new dict)."""
    out = dict(base)
    for k, v in over.items():
        nested = isinstance(v, dict) and isinstance(out.get(k), dict)
        out[k] = merge_options(out[k], v) if nested else v
    return out


def variant_options(corpus: CorpusConfig, overrides: dict[str, Any]) -> CorpusConfig:
    """``corpus`` with ``overrides`` merged in key by key (nested mappings merged too).

    Raises:
        pydantic.ValidationError: when the merged options are not valid corpus options.
    """
    return CorpusConfig.model_validate(merge_options(corpus.model_dump(), overrides))
