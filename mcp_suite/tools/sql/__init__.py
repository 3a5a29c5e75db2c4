"""The SQL family: the PostgreSQL engine (`engine/`: pool, executor, policy, role audit) and the three
tools that share it (`read_only_sql`, `sql_schema`, `explain_sql`). A tool imports the engine, never
a sibling tool.
"""

from typing import Final

# The OAuth scope of every tool of the family (docs/operations/remote.md).
SCOPE: Final = "sql:read"
