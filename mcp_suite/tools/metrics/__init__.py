"""The metrics family: `system_metrics`, a host sample (`probe`, psutil) shaped by its pure policy
(`policy`, which holds the models), declared by its face (`tool`) and opened by `opener.open_metrics`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcp_suite.lazy import Lazy

if TYPE_CHECKING:
    from mcp_suite.tools.metrics.policy import MetricsModels

__all__ = ["MODELS", "SCOPE"]

# The OAuth scope of every tool of the family (docs/operations/remote.md).
SCOPE: Final = "metrics:read"


def _import_models() -> MetricsModels:
    # The family's deferred import of its models (pydantic): after the handshake, by the warm-up
    # or the first call (docs/performance.md, "Start-up"). psutil waits for the first call (`tool`).
    from mcp_suite.tools.metrics.policy import LOADED

    return LOADED


MODELS: Final = Lazy(_import_models)
