"""The metrics family's opener: `open_metrics(settings)` yields `system_metrics` unless metrics are
disabled. Holds nothing to close; the tool's sampler thread is bounded per call (`tool.spec`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Final

from mcp_suite.settings import Settings
from mcp_suite.tools.base import Toolset
from mcp_suite.tools.metrics.system_metrics import tool as metrics_tool

__all__ = ["GUIDANCE", "open_metrics"]

GUIDANCE: Final = "system_metrics gives an aggregate snapshot of the host's CPU, memory and disk."


@contextlib.contextmanager
def open_metrics(settings: Settings) -> Iterator[Toolset | None]:
    if not settings.metrics_enabled:
        yield None
        return
    yield Toolset(guidance=GUIDANCE, tools=(metrics_tool.spec(settings),))
