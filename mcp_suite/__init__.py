"""mcp-suite: a hardened, read-only MCP server on trio (PostgreSQL, a sandboxed folder, host metrics)."""

import os as _os

__version__ = "0.1.0"
SERVER_NAME = "mcp-suite"

# pydantic loads third-party "plugins" from any installed package's entry points into every model it
# builds. A hardened server runs no code it did not choose: turn them off, by pydantic's documented
# switch, before pydantic is first imported.
_os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
