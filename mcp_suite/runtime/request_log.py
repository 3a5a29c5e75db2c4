"""Empty: split into `log_sink` (the stderr sink, logging set-up) and `audit_trail` (the audit records).

Kept only while pyproject's import-linter contract "only runtime.telemetry imports OpenTelemetry"
names this module (a contract naming a missing module fails); remove it once the contract names
`mcp_suite.runtime.log_sink` and `mcp_suite.runtime.audit_trail` instead. Imports nothing.
"""
