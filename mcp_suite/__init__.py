"""mcp-suite: a hardened, read-only MCP server on trio (PostgreSQL, a sandboxed folder, host metrics)."""

__version__ = "0.1.0"
SERVER_NAME = "mcp-suite"
