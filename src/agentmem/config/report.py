"""Section ``report``: what the report compares beyond the per-arm tables."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agentmem.config.base import StrictModel

#: One ``[arm_a, arm_b]`` pair of the paired bootstrap.
ArmPair = Annotated[list[str], Field(min_length=2, max_length=2)]


class ReportConfig(StrictModel):
    """What the report compares beyond the per-arm tables."""

    paired_tests: list[ArmPair] = Field(
        default_factory=list,
        description="[arm_a, arm_b] pairs whose per-query nDCG@10 difference (a - b) the "
        "paired bootstrap tests; a pair naming an arm not in `arms` is left out",
    )
    n_boot: int = Field(2000, ge=1, description="bootstrap resamples (intervals, paired tests)")
