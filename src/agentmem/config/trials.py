"""Section ``trials``: crash, lost update, update anomaly and fleet (docs/MEASUREMENT.md §2)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from agentmem.config.base import SIZE_NAMES, StrictModel

#: the crash trial's families, in report order
CRASH_FAMILIES = ("file-append", "file-rewrite", "sqlite", "postgres-writer", "postgres-server")


class CrashConfig(StrictModel):
    """Crash trials (docs/MEASUREMENT.md §2)."""

    trials: int = Field(20, ge=1, le=1000)
    families: list[Literal[CRASH_FAMILIES]] = list(CRASH_FAMILIES)  # type: ignore[valid-type]
    record_chars: int = Field(330, ge=10)
    batch_size: int = Field(50, ge=1, description="rows per sqlite/postgres transaction")
    baseline_records: int = Field(200, ge=1, description="durable records before the kill window")
    max_kill_after_ms: int = Field(1500, ge=1, description="kill moment drawn in [0, this)")


class LostUpdateConfig(StrictModel):
    """Lost-update trials: ``writers`` x ``increments`` on one record."""

    writers: int = Field(8, ge=2, le=64)
    increments: int = Field(25, ge=1, le=10_000)
    modes: list[Literal["threads", "processes"]] = ["threads", "processes"]


class AnomalyConfig(StrictModel):
    """Update-anomaly probe: top-k repair over ``facts`` facts."""

    facts: int = Field(120, ge=1)
    k: int = Field(10, ge=1)


class FleetMix(StrictModel):
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


class FleetConfig(StrictModel):
    """Fleet trial: N agent processes on one store (docs/experiments/fleet.md)."""

    arms: list[str] | None = Field(
        None, description="arms the fleet runs (only those also in arms); null: every arm"
    )
    size: Literal[SIZE_NAMES] | None = Field(  # type: ignore[valid-type]
        None, description="corpus size the stores are built from; null: main_size"
    )
    processes: list[Annotated[int, Field(ge=1, le=64)]] = Field(
        default_factory=lambda: [1, 2, 4, 8],
        min_length=1,
        description="fleet sizes N (config/full.yaml adds 16)",
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


class TrialsConfig(StrictModel):
    """The integrity trials (crash, lost update, update anomaly, fleet)."""

    seed: int = 7
    crash: CrashConfig = CrashConfig()
    lost_update: LostUpdateConfig = LostUpdateConfig()
    anomaly: AnomalyConfig = AnomalyConfig()
    fleet: FleetConfig = FleetConfig()
