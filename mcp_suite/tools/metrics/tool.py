"""`system_metrics`: thin async glue — no arguments, one psutil sample in a worker thread."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from mcp_suite.lazy import Lazy
from mcp_suite.settings import Settings
from mcp_suite.tools.base import Toolset, ToolSpec
from mcp_suite.tools.metrics import SCOPE

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mcp_suite.tools.metrics.policy import RawSample, SystemMetricsArgs, SystemMetricsResult

__all__ = ["open_system_metrics"]

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


def _models() -> tuple[type[BaseModel], type[BaseModel]]:
    # The models (and pydantic behind them) load on first use, not when the tool opens.
    from mcp_suite.tools.metrics.policy import SystemMetricsArgs, SystemMetricsResult

    return SystemMetricsArgs, SystemMetricsResult


@contextlib.contextmanager
def open_system_metrics(settings: Settings) -> Iterator[Toolset | None]:
    if not settings.metrics_enabled:
        yield None
        return
    disk_path = settings.metrics_disk_path
    # One sampler thread at a time: concurrent calls queue here instead of piling up threads.
    limiter = trio.CapacityLimiter(1)

    async def call(args: SystemMetricsArgs) -> SystemMetricsResult:
        raw = await trio.to_thread.run_sync(
            _sample, disk_path, SAMPLE_SECONDS, limiter=limiter, abandon_on_cancel=True
        )
        from mcp_suite.tools.metrics.policy import shape_sample  # loaded with the models

        return shape_sample(raw)

    yield Toolset(
        guidance="system_metrics gives an aggregate snapshot of the host's CPU, memory and disk.",
        tools=(
            ToolSpec(
                name="system_metrics",
                title="System metrics",
                description=DESCRIPTION,
                models=Lazy(_models),
                call=call,
                scope=SCOPE,
            ),
        ),
    )
