"""The root model :class:`Config`, its cross-section checks, and :func:`load_config`."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from agentmem.config.base import SIZE_NAMES, ConfigError, StrictModel
from agentmem.config.corpus import CorpusConfig, SizeConfig, ValidationConfig, variant_options
from agentmem.config.experiments import SeedSystemsConfig, SweepsConfig
from agentmem.config.external import (
    DATASET_NAME,
    DATASET_TAGS,
    ExternalDataset,
    LocomoConfig,
    check_external,
)
from agentmem.config.pareto import ParetoConfig
from agentmem.config.report import ReportConfig
from agentmem.config.robustness import STUDY_CORPUS_ID, RobustnessConfig
from agentmem.config.run import EmbeddingConfig, RunConfig
from agentmem.config.trials import TrialsConfig


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


class Config(StrictModel):
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
    pareto: ParetoConfig = ParetoConfig()
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
        self._check_pareto()
        for name, params in self.arm_params.items():
            try:
                inspect.signature(ARMS[name]).bind(**(params or {}))
                # constructors validate values (ranges, types) without touching any store
                ARMS[name](**(params or {})).close()
            except (TypeError, ValueError) as exc:
                raise ValueError(f"arm_params.{name}: bad parameters {params!r}: {exc}") from None
        return self

    def _check_pareto(self) -> None:
        """Size known; arms known, distinct, with knobs; each grid a knob's valid values."""
        from agentmem.arms import ARMS

        par = self.pareto
        size = par.size or self.main_size
        if size not in self.sizes:
            raise ValueError(f"pareto.size {size!r} is not among sizes {sorted(self.sizes)}")
        if min(par.budgets_ms) <= 0:
            raise ValueError(f"pareto.budgets_ms: budgets must be > 0, got {par.budgets_ms}")
        arms = par.arms or []
        if len(set(arms)) != len(arms):
            raise ValueError(f"pareto.arms: duplicate names in {arms}")
        for name in [*arms, *par.grids]:
            if name not in ARMS:
                raise ValueError(f"pareto: unknown arm {name!r}; known arms: {sorted(ARMS)}")
            if not getattr(ARMS[name], "knobs", ()):
                raise ValueError(
                    f"pareto: {name} declares no knobs (`agentmem arms --knobs` lists them)"
                )
        for name, grid in par.grids.items():
            knobs = {k.param: k for k in ARMS[name].knobs}
            for param, values in grid.items():
                if param not in knobs:
                    raise ValueError(
                        f"pareto.grids.{name}: {param!r} is not a knob of {name} "
                        f"(its knobs: {sorted(knobs)})"
                    )
                if not values:
                    raise ValueError(f"pareto.grids.{name}.{param}: the grid is empty")
                base = dict(self.arm_params.get(name) or {})
                for v in values:
                    try:
                        ARMS[name](**{**base, param: v}).close()
                    except (TypeError, ValueError) as exc:
                        raise ValueError(
                            f"pareto.grids.{name}.{param}: {v!r} is refused: {exc}"
                        ) from None

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
            if (
                not DATASET_NAME.fullmatch(v.name)
                or v.name.startswith(("seed-", "model-", "default-"))
                or v.name == STUDY_CORPUS_ID
            ):
                raise ValueError(
                    f"{where}: the name is not path-safe or is reserved: use up to 64 letters, "
                    "digits, '.', '_' and '-', not starting with 'seed-', 'model-' or "
                    f"'default-', and not {STUDY_CORPUS_ID!r}"
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
                    for line in error_lines(exc)
                ]
                raise ValueError(f"{where}: " + "; ".join(lines)) from None
            if opts.model_dump() == base:
                raise ValueError(f"{where}: options {v.options} change nothing in `corpus`")

    @field_validator("external")
    @classmethod
    def _external_ids(cls, external: dict[str, Any]) -> dict[str, Any]:
        """Dataset names are path-safe and no two datasets share an id (``<name>-<unit>``)."""
        check_external(external)
        return external


def error_lines(exc: ValidationError) -> list[str]:
    """One ``loc: message (got X)`` line per error of ``exc``."""
    lines = []
    for err in exc.errors():
        parts = list(err["loc"])
        if len(parts) > 2 and parts[0] == "external" and parts[2] in DATASET_TAGS:
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
    return "invalid configuration:\n" + "\n".join(f"  {line}" for line in error_lines(exc))


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
