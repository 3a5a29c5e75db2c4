"""The metrics family's argument and result models (pydantic): `system_metrics` takes no arguments and
answers one bounded snapshot, every reading clamped into its field's range by the policy (`policy`);
`RawSample`, what the probe read before the policy clamps it.

Loaded only through the family's one deferred import (`tools.metrics.MODELS`), after the handshake or
by the first call: the tool face imports it for types only. Imports no tool; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from mcp_suite.tools.models import StrictModel

__all__ = [
    "CpuMetrics",
    "DiskMetrics",
    "MemoryMetrics",
    "MetricsModels",
    "ProcessMetrics",
    "RawSample",
    "SwapMetrics",
    "SystemMetricsArgs",
    "SystemMetricsResult",
]

Percent = Annotated[float, Field(ge=0, le=100)]
Count = Annotated[int, Field(ge=0)]
NonNegative = Annotated[float, Field(ge=0)]


class SystemMetricsArgs(StrictModel):
    """`system_metrics` takes no arguments: `{}` only."""


class CpuMetrics(StrictModel):
    percent: Percent = Field(description="CPU busy percent over the sample window, all cores")
    sample_seconds: NonNegative = Field(description="Length of the sampling window in seconds")
    logical_count: Count = Field(description="Logical CPUs")
    physical_count: Count = Field(description="Physical cores (0 when unknown)")
    load_average: list[NonNegative] = Field(
        description="1, 5 and 15 minute load averages", min_length=3, max_length=3
    )


class MemoryMetrics(StrictModel):
    total_bytes: Count
    available_bytes: Count
    percent: Percent


class SwapMetrics(StrictModel):
    total_bytes: Count
    free_bytes: Count
    percent: Percent


class DiskMetrics(StrictModel):
    total_bytes: Count
    free_bytes: Count
    percent: Percent


class ProcessMetrics(StrictModel):
    rss_bytes: Count = Field(description="Resident memory of this server process")
    threads: Count
    open_fds: Count


class SystemMetricsResult(StrictModel):
    cpu: CpuMetrics
    memory: MemoryMetrics
    swap: SwapMetrics
    disk: DiskMetrics = Field(description="Usage of the configured disk path (never named here)")
    uptime_seconds: NonNegative
    process: ProcessMetrics


@dataclass(frozen=True, slots=True)
class RawSample:
    """What the probe read, unclamped; None where the platform has no value."""

    cpu_percent: float | None
    sample_seconds: float
    logical_count: int | None
    physical_count: int | None
    load_average: tuple[float, float, float] | None
    mem_total: int | None
    mem_available: int | None
    mem_percent: float | None
    swap_total: int | None
    swap_free: int | None
    swap_percent: float | None
    disk_total: int | None
    disk_free: int | None
    disk_percent: float | None
    uptime_seconds: float | None
    rss: int | None
    threads: int | None
    open_fds: int | None


@dataclass(frozen=True, slots=True)
class MetricsModels:
    """What the tool face takes from the family (through `tools.metrics.MODELS`): its models and the
    policy's shaping of a sample into the result."""

    args: type[SystemMetricsArgs]
    result: type[SystemMetricsResult]
    shape_sample: Callable[[RawSample], SystemMetricsResult]
