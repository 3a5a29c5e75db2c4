"""The statement that ends every call (issue 51): it names only pg_catalog's objects, and quotes what
the server set, whatever a role's name or a caller's claims hold."""

from __future__ import annotations

import json

from mcp_suite.tools.sql.engine.executor import identity_check
from mcp_suite.tools.sql.engine.identity import CallRole


def test_without_a_role_the_call_must_still_be_the_login_role() -> None:
    statement = identity_check(None).decode()
    assert "current_user OPERATOR(pg_catalog.=) session_user" in statement
    assert statement.endswith("::pg_catalog.int4")


def test_with_a_role_the_role_and_the_claims_are_quoted_literals_compared_by_pg_catalogs_operator() -> None:
    claims = json.dumps({"sub": "o'brien", "x": "'; SELECT 1 --"})
    statement = identity_check(CallRole(role="odd'role", claims=claims, application_name="a")).decode()
    assert "'odd''role'::pg_catalog.name" in statement
    assert claims.replace("'", "''") in statement
    assert statement.count("OPERATOR(pg_catalog.=)") == 2
    assert "current_setting('request.jwt.claims', true)" in statement
