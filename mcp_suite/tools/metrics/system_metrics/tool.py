"""`system_metrics`: thin async glue — no arguments, one psutil sample in a worker thread, shaped by
the policy. Declares the tool (`spec`); opened by the family's opener (`tools/metrics/opener.py`).
Imports its family's modules, never the opener or the registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from mcp_suite.lazy import Lazy
from mcp_suite.settings import Settings
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.metrics import MODELS, SCOPE

if TYPE_CHECKING:
    from mcp_suite.tools.metrics.models import RawSample, SystemMetricsArgs, SystemMetricsResult

__all__ = ["DESCRIPTION", "TOOL_NAME", "models", "spec"]

TOOL_NAME: Final = "system_metrics"

# The CPU sampling window: short enough for an interactive call, long enough to mean something
# (docs/tools/system_metrics.md allows up to 2 s).
SAMPLE_SECONDS: Final = 0.2

# What it tells, and what it never does; the inputSchema says it takes no arguments.
DESCRIPTION: Final = (
    "An aggregate snapshot of the host: CPU, load, memory, swap, disk, uptime, and this server's "
    "own memory, threads and open files. No processes, users or network details."
)


def _sample(disk_path: Path, seconds: float) -> RawSample:
    # psutil is imported on first use, in the worker thread: it is not needed to answer initialize,
    # and its import is a noticeable share of a cold start.
    from mcp_suite.tools.metrics.probe import read_sample

    return read_sample(disk_path, seconds)


def models() -> tuple[type[SystemMetricsArgs], type[SystemMetricsResult]]:
    """The tool's (arguments, result) models (the family's `MODELS`)."""
    loaded = MODELS.get()
    return loaded.args, loaded.result


def spec(settings: Settings) -> ToolSpec:
    """The tool, sampling `MCP_METRICS_DISK_PATH`'s disk."""
    disk_path = settings.metrics_disk_path
    # One sampler thread at a time: concurrent calls queue here instead of piling up threads.
    limiter = trio.CapacityLimiter(1)

    async def call(args: SystemMetricsArgs) -> SystemMetricsResult:
        raw = await trio.to_thread.run_sync(
            _sample, disk_path, SAMPLE_SECONDS, limiter=limiter, abandon_on_cancel=True
        )
        return MODELS.get().shape_sample(raw)

    return ToolSpec(
        name=TOOL_NAME,
        title="System metrics",
        description=DESCRIPTION,
        models=Lazy(models),
        call=call,
        scope=SCOPE,
    )
