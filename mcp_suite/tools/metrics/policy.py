"""Pure shaping of a metrics sample into the `system_metrics` result (`models`): clamping, rounding,
no I/O.

Readings from the OS can be odd (a percent above 100 on some kernels, negative deltas after a clock
step, None where a platform lacks a counter): every value is clamped into its range here (docs/tools/).
"""

from __future__ import annotations

import math
from typing import Final

from mcp_suite.tools.metrics.models import (
    CpuMetrics,
    DiskMetrics,
    MemoryMetrics,
    ProcessMetrics,
    RawSample,
    SwapMetrics,
    SystemMetricsResult,
)

__all__ = ["COUNT_MAX", "shape_sample"]


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
