"""Pure shaping of a metrics sample into the `system_metrics` result: clamping, rounding, no I/O.

Readings from the OS can be odd (a percent above 100 on some kernels, negative deltas after a clock
step, None where a platform lacks a counter): every value is clamped into its range here (docs/tools/).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Final

from pydantic import Field

from mcp_suite.tools.models import StrictModel

__all__ = [
    "LOADED",
    "MetricsModels",
    "RawSample",
    "SystemMetricsArgs",
    "SystemMetricsResult",
    "shape_sample",
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


def clamp_percent(value: float | None) -> float:
    if value is None or not math.isfinite(value):
        return 0.0
    return round(min(100.0, max(0.0, float(value))), 2)


# Every counter the kernel keeps fits 64 bits; a reading above it is clamped, so no reading can
# lengthen the reply beyond its stated constant (docs/tools/system_metrics.md, "Reply size").
COUNT_MAX: Final = 2**64 - 1


def clamp_count(value: int | float | None) -> int:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return 0
    return min(COUNT_MAX, max(0, int(value)))


def clamp_float(value: float | None) -> float:
    if value is None or not math.isfinite(value):
        return 0.0
    return round(max(0.0, float(value)), 3)


def shape_sample(raw: RawSample) -> SystemMetricsResult:
    load = raw.load_average or (0.0, 0.0, 0.0)
    return SystemMetricsResult(
        cpu=CpuMetrics(
            percent=clamp_percent(raw.cpu_percent),
            sample_seconds=clamp_float(raw.sample_seconds),
            logical_count=clamp_count(raw.logical_count),
            physical_count=clamp_count(raw.physical_count),
            load_average=[clamp_float(x) for x in load],
        ),
        memory=MemoryMetrics(
            total_bytes=clamp_count(raw.mem_total),
            available_bytes=min(clamp_count(raw.mem_available), clamp_count(raw.mem_total)),
            percent=clamp_percent(raw.mem_percent),
        ),
        swap=SwapMetrics(
            total_bytes=clamp_count(raw.swap_total),
            free_bytes=min(clamp_count(raw.swap_free), clamp_count(raw.swap_total)),
            percent=clamp_percent(raw.swap_percent),
        ),
        disk=DiskMetrics(
            total_bytes=clamp_count(raw.disk_total),
            free_bytes=min(clamp_count(raw.disk_free), clamp_count(raw.disk_total)),
            percent=clamp_percent(raw.disk_percent),
        ),
        uptime_seconds=clamp_float(raw.uptime_seconds),
        process=ProcessMetrics(
            rss_bytes=clamp_count(raw.rss),
            threads=clamp_count(raw.threads),
            open_fds=clamp_count(raw.open_fds),
        ),
    )


@dataclass(frozen=True, slots=True)
class MetricsModels:
    """What the tool face takes from this module (through `tools.metrics.MODELS`)."""

    args: type[SystemMetricsArgs]
    result: type[SystemMetricsResult]
    shape_sample: Callable[[RawSample], SystemMetricsResult]


LOADED: Final = MetricsModels(args=SystemMetricsArgs, result=SystemMetricsResult, shape_sample=shape_sample)
