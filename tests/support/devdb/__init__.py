"""The test harness's servers beside the demo cluster (mcp_suite/demo): a streaming replica, a
PgBouncer, TLS with Debian's PostgreSQL, and the SDK-driven tour of `make demo`. Outside the
installed package: they need test dependencies (cryptography, the MCP SDK) and Debian's packages.
"""
