"""The MCP bundle of mcp-suite: `make mcpb` (mcpb/build.py) and its server entry (mcpb/launch.py)."""
