"""Curated tools (issue 55): named, typed, parameterized statements a DBA declares per source in the
configuration file (`[[sources.tools]]`), judged like free SQL at start-up and served as MCP tools.
`policy` reads and checks the declarations (pure); `faces` builds each one's `ToolSpec` and judges
it against PostgreSQL at start-up. Not a `<tool>/tool.py` face: its tools are named by the file.
"""
