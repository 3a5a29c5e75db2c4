"""The SQL family: the PostgreSQL engine (`engine/`: pool, executor, policy, role audit), the three
tools that share it (`read_only_sql`, `sql_schema`, `explain_sql`: faces that declare their spec),
their models (`models`) and the family's opener (`opener.open_sql`). A tool imports the engine and
the family's modules, never a sibling tool; the registry imports this family only when it is enabled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcp_suite.lazy import Lazy

if TYPE_CHECKING:
    from mcp_suite.tools.sql.models import SqlModels

__all__ = ["MODELS", "SCOPE"]

# The OAuth scope of every tool of the family (docs/operations/remote.md).
SCOPE: Final = "sql:read"


def _import_models() -> SqlModels:
    # The family's one deferred import: the models (pydantic) load after the handshake, by the
    # warm-up or the first call (docs/performance.md, "Start-up").
    from mcp_suite.tools.sql.models import LOADED

    return LOADED


MODELS: Final = Lazy(_import_models)
