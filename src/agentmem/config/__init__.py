"""The experiment configuration as pydantic models, one module per section.

``config/config.yaml`` and ``config/smoke.yaml`` are instances of :class:`Config`. Every
setting is declared once, in these models: its type, bounds, default and description.
``workflow/schemas/config.schema.yaml`` is generated from them (``agentmem schema``), and a
test fails when the file drifts from the models. The workflow validates the loaded config
against that schema *and* through :func:`load_config` before any job runs, so an unknown
key or a bad value stops the run with a message naming it. What each section sets is in
``config/README.md``.

Runtime settings (threads, resources) are not here: they live in rules and profiles.
"""

from agentmem.config.base import SIZE_NAMES, ConfigError, StrictModel
from agentmem.config.corpus import (
    CorpusConfig,
    RestatementConfig,
    SizeConfig,
    ValidationConfig,
    variant_options,
)
from agentmem.config.experiments import (
    ConversationConfig,
    DecayConfig,
    SeedSystemsConfig,
    SweepsConfig,
)
from agentmem.config.external import (
    EXTERNAL_SETTINGS,
    LOCOMO_UNITS,
    ExternalDataset,
    LocomoConfig,
    MemoryDatasetConfig,
)
from agentmem.config.report import ReportConfig
from agentmem.config.robustness import DEFAULT_VARIANTS, RobustnessConfig, VariantConfig
from agentmem.config.root import Config, load_config
from agentmem.config.run import EmbeddingConfig, RunConfig
from agentmem.config.schema import json_schema, write_json_schema
from agentmem.config.trials import (
    CRASH_FAMILIES,
    AnomalyConfig,
    CrashConfig,
    FleetConfig,
    FleetMix,
    LostUpdateConfig,
    TrialsConfig,
)

__all__ = [
    "CRASH_FAMILIES",
    "DEFAULT_VARIANTS",
    "EXTERNAL_SETTINGS",
    "LOCOMO_UNITS",
    "SIZE_NAMES",
    "AnomalyConfig",
    "Config",
    "ConfigError",
    "ConversationConfig",
    "CorpusConfig",
    "CrashConfig",
    "DecayConfig",
    "EmbeddingConfig",
    "ExternalDataset",
    "FleetConfig",
    "FleetMix",
    "LocomoConfig",
    "LostUpdateConfig",
    "MemoryDatasetConfig",
    "ReportConfig",
    "RestatementConfig",
    "RobustnessConfig",
    "RunConfig",
    "SeedSystemsConfig",
    "SizeConfig",
    "StrictModel",
    "SweepsConfig",
    "TrialsConfig",
    "ValidationConfig",
    "VariantConfig",
    "json_schema",
    "load_config",
    "variant_options",
    "write_json_schema",
]
