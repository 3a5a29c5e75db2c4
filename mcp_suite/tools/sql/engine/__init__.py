"""The PostgreSQL side of the SQL tools, one package: `engine.SqlEngine` (the one object the three
SQL tools share), the pool and executor (`executor`, `pipeline`, `result`, `convert`, `type_names`,
`sqlstate`, `availability`, `ticket`, `naming`), the SQL policy (`policy/`, `denylist`), the
run-time refusal of SECURITY DEFINER functions (`definers`) and the role audit (`role_audit/`).

It imports no SQL tool (an import-linter contract): `read_only_sql`, `sql_schema` and `explain_sql`
sit above it and call it.
"""
