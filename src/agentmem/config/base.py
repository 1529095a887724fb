"""What every section of the configuration shares: the strict base model and the error."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

#: the corpus sizes a configuration may name
SIZE_NAMES = ("xs", "s", "m", "l")


class ConfigError(ValueError):
    """The configuration is invalid; the message names every offending key."""


class StrictModel(BaseModel):
    """A frozen pydantic model that refuses unknown keys (every section of the config)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
