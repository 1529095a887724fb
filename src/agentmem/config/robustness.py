"""Section ``robustness``: further corpora the findings are checked on (docs/ROBUSTNESS.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt

from agentmem.config.base import SIZE_NAMES, StrictModel


class VariantConfig(StrictModel):
    """One design variant of the corpus: a name and the corpus options that differ."""

    name: str = Field(description="its directory under results/robustness/ (path-safe)")
    options: dict[str, Any] = Field(
        min_length=1,
        description="corpus options that differ from `corpus` (merged key by key; not seed: "
        "further seeds are robustness.seeds)",
    )


#: the further corpus of ``robustness.study_corpus`` (its directory under results/robustness/)
STUDY_CORPUS_ID = "study-corpus"

#: the design variants the robustness check runs by default (docs/ROBUSTNESS.md)
DEFAULT_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("distractors-none", {"distractor_ratio": 0.0}),
    ("distractors-double", {"distractor_ratio": 0.344}),
    ("restatements-light", {"restatements": {"every_nth_heavy": 0}}),
    ("superseded-0.05", {"superseded_fraction": 0.05}),
    ("superseded-0.25", {"superseded_fraction": 0.25}),
    ("corrections-restated", {"restated_after_correction": 0.5}),
)


class RobustnessConfig(StrictModel):
    """Further corpora the study's findings are checked on (docs/ROBUSTNESS.md)."""

    arms: list[str] | None = Field(
        None,
        description="arms run on every further corpus (those of them in arms, in the order "
        "of arms); null: the study's ten arms",
    )
    seeds: list[Annotated[StrictInt, Field(ge=0, le=2**63 - 1)]] = Field(
        default_factory=lambda: [20260811, 20260813],
        description="further corpus seeds: each is a corpus at seed_size with the default "
        "options (corpus.seed is the headline corpus); [] runs none",
    )
    seed_size: Literal[SIZE_NAMES] | None = Field(  # type: ignore[valid-type]
        None, description="size of the seed corpora; null: main_size"
    )
    variant_size: Literal[SIZE_NAMES] | None = Field(  # type: ignore[valid-type]
        None,
        description="size of the design variants (and of their baseline, the default "
        "options at that size); null: main_size",
    )
    queries_per_class: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="questions drawn per class on each generated further corpus (seeds, "
        "variants and their baseline), whatever its size; null: the main size's "
        "queries_per_class, so a class gap is measured as finely as on the headline corpus",
    )
    models: list[Literal["paraphrase-MiniLM-L3-v2"]] = Field(
        default_factory=list,
        description="further embedding models: each embeds the headline corpus (main size) "
        "for the robustness arms (docs/EMBEDDINGS.md); [] runs none (config/full.yaml runs "
        "paraphrase-MiniLM-L3-v2)",
    )
    study_corpus: str | None = Field(
        "data/external/study-corpus.json",
        description="the study's own corpus, as its generator writes it (tools/corpus.mjs: "
        "data/corpus.json, plain or .xz): run through the robustness arms as the further "
        "corpus study-corpus when the file exists (skipped with a notice when not); null: "
        "never",
    )
    variants: list[VariantConfig] = Field(
        default_factory=lambda: [VariantConfig(name=n, options=o) for n, o in DEFAULT_VARIANTS],
        description="design variants, each {name, options}: the corpus options that differ "
        "from `corpus` (a list, replaced whole by a second --configfile); [] runs none",
    )
