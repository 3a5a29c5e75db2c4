"""The metrics family: `system_metrics`, a host sample shaped by its pure policy."""

from typing import Final

# The OAuth scope of every tool of the family (docs/operations/remote.md).
SCOPE: Final = "metrics:read"
