"""The metrics family, laid out as every family is: `system_metrics` (its face,
`system_metrics/tool.py`), its models (`models`), the pure shaping of a host sample (`policy`), the
psutil reads behind it (`probe`) and the family's opener (`opener.open_metrics`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcp_suite.lazy import Lazy

if TYPE_CHECKING:
    from mcp_suite.tools.metrics.models import MetricsModels

__all__ = ["MODELS", "SCOPE"]

# The OAuth scope of every tool of the family (docs/operations/remote.md).
SCOPE: Final = "metrics:read"


def _import_models() -> MetricsModels:
    # The family's deferred import of its models (pydantic) and the policy that fills them: after the
    # handshake, by the warm-up or the first call (docs/performance.md, "Start-up"). psutil waits for
    # the first call (the face).
    from mcp_suite.tools.metrics import models, policy

    return models.MetricsModels(
        args=models.SystemMetricsArgs, result=models.SystemMetricsResult, shape_sample=policy.shape_sample
    )


MODELS: Final = Lazy(_import_models)
