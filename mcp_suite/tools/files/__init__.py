"""The files family: the directory-fd walk (`fdwalk`), its pure path policy (`policy`), the two
tools that share the sandbox root (`sandbox_fs_read`, `sandbox_fs_list`: faces that declare their
spec), their models (`models`) and the family's opener (`opener.open_files`). A tool imports the
walk, the policy and the family's modules, never a sibling tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcp_suite.lazy import Lazy

if TYPE_CHECKING:
    from mcp_suite.tools.files.models import FilesModels

__all__ = ["MODELS", "SCOPE"]

# The OAuth scope of every tool of the family (docs/operations/remote.md).
SCOPE: Final = "files:read"


def _import_models() -> FilesModels:
    # The family's one deferred import: the models (pydantic) load after the handshake, by the
    # warm-up or the first call (docs/performance.md, "Start-up").
    from mcp_suite.tools.files.models import LOADED

    return LOADED


MODELS: Final = Lazy(_import_models)
