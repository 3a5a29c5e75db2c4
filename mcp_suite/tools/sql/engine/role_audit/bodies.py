"""What the role's functions do when they run (issue 51): their configuration and their bodies, judged
by the policy's own lists.

A SECURITY INVOKER function runs with the caller's privileges, so its EXECUTE grant is harmless only
if what it runs is: a helper that calls `set_config`, `SET ROLE`s, or is declared with
`SET role = ...` / `SET request.jwt.claims = ...` changes who the call is, and one person reads
another's rows. For every function the role may EXECUTE outside PostgreSQL's own schemas, one
statement reads its language, configuration (`proconfig`) and body (an extension's function is
judged by its configuration alone: its code is the extension's), and:

- a configuration that sets `role`, `session_authorization` or a `request.jwt.*` setting is a finding;
- argument defaults (evaluated in the caller's query) are judged as a LANGUAGE sql body;
- LANGUAGE sql (a string body, or a SQL-standard body as PostgreSQL prints it): PostgreSQL's grammar
  reads it; a statement that is not a query or a data change (SET, RESET, DO, ...) is a finding, and
  so is a call of a function of PostgreSQL's that the policy's allow-list refuses (`set_config` first);
- LANGUAGE plpgsql: there is no grammar here for its statements, so it is read as PostgreSQL's lexer
  reads it and judged failing closed: any EXECUTE (dynamic SQL), SET or RESET, a Unicode-escaped
  identifier, or a call (a name before a parenthesis) of a function the allow-list refuses is a
  finding; what is left can only run SQL whose every function call is visible and allowed;
- any other language but C and internal (plpython, plperl, ...): not judged, so a finding. C and
  internal functions are the superuser's code; the definer, extension and reach checks judge them.

Verdicts on a body are pure and kept in a bounded cache keyed by its text (`judge_body`): a re-audit
reads the catalogue, not the parser. Sync psycopg only; no trio.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any, Final

import psycopg
from pglast import parser as pg_parser

from mcp_suite.tools.sql.engine.policy.allowlist import EXTERNAL, function_verdict
from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding
from mcp_suite.tools.sql.engine.role_audit.subject import Subject

__all__ = [
    "BODY_CACHE_SIZE",
    "FUNCTIONS_QUERY",
    "function_body_findings",
    "identity_settings",
    "judge_body",
    "refused_calls",
]

# The functions the role may EXECUTE outside PostgreSQL's own schemas: one row each with the
# language, the configuration, the body (a SQL-standard body as PostgreSQL prints it), the argument
# defaults, and whether an extension owns it (then only its configuration is judged here).
FUNCTIONS_QUERY: Final = """
WITH own AS MATERIALIZED (
  -- The database's own functions first: the privilege check then runs on these few, not on every
  -- function PostgreSQL ships (it is what the scan would otherwise evaluate first).
  SELECT p.oid FROM pg_catalog.pg_proc p
  WHERE p.pronamespace <> ALL (ARRAY['pg_catalog'::pg_catalog.regnamespace,
                                     'information_schema'::pg_catalog.regnamespace]::oid[])
    AND p.prokind IN ('f', 'p')
)
SELECT p.oid::pg_catalog.regprocedure::text, l.lanname, p.proconfig,
       CASE WHEN p.prosqlbody IS NOT NULL THEN pg_catalog.pg_get_functiondef(p.oid) ELSE p.prosrc END,
       p.prosqlbody IS NOT NULL, pg_catalog.pg_get_expr(p.proargdefaults, 0),
       EXISTS (SELECT FROM pg_catalog.pg_depend d
               WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                 AND d.deptype = 'e')
FROM own JOIN pg_catalog.pg_proc p ON p.oid = own.oid
JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
ORDER BY 1
"""

BODY_CACHE_SIZE: Final = 4096  # verdicts on distinct bodies kept between audits
# Settings that decide who a call is: the role, the session's user, and the caller's claims.
_IDENTITY_SETTINGS: Final = frozenset({"role", "session_authorization"})
_CLAIMS_PREFIX: Final = "request.jwt."
# Languages whose functions are the superuser's own code: not read here (module docstring).
_NOT_JUDGED: Final = frozenset({"c", "internal"})
# Statements a LANGUAGE sql body may hold: queries and data changes (the read-only transaction
# refuses the latter). Anything else (SET, RESET, DO, CALL, LOCK, ...) is a finding.
_SQL_STATEMENTS: Final = frozenset({"SelectStmt", "InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"})
# Tokens of a plpgsql body that run SQL the body does not spell out, or change settings.
_PLPGSQL_REFUSED: Final = {
    "EXECUTE": "runs dynamic SQL (EXECUTE), which cannot be checked",
    "SET": "changes a setting (SET)",
    "RESET": "changes a setting (RESET)",
    "UIDENT": 'names something with a Unicode-escaped identifier (U&"...")',
}


def identity_settings(config: list[str] | None) -> list[str]:
    """The names in a function's `proconfig` (`name=value` each) that decide who a call is."""
    names = [entry.partition("=")[0] for entry in config or ()]
    return [n for n in names if n.casefold() in _IDENTITY_SETTINGS or n.casefold().startswith(_CLAIMS_PREFIX)]


def refused_calls(calls: Iterator[tuple[str, str]]) -> list[str]:
    """The calls, (schema or "", name), of PostgreSQL's functions that the policy's allow-list
    refuses (with the catalogue lifted: a body may read it), as `name()`; sorted, distinct."""
    refused = {
        f"{schema + '.' if schema else ''}{name}()"
        for schema, name in calls
        if function_verdict(schema, name, allow_catalogue=True) not in (None, EXTERNAL)
    }
    return sorted(refused)


def _nodes(tree: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) of a pglast JSON tree, iteratively."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                yield key, value
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


def _calls(tree: Any) -> Iterator[tuple[str, str]]:
    for key, value in _nodes(tree):
        if key == "FuncCall":
            parts = [str(part["String"]["sval"]).casefold() for part in value["funcname"]]
            yield (parts[-2] if len(parts) > 1 else ""), parts[-1]


def _sql_reasons(body: str, *, standard: bool) -> list[str]:
    try:
        document = json.loads(pg_parser.parse_sql_json(body))
    except pg_parser.ParseError:
        return ["cannot be read by PostgreSQL's grammar here"]
    statements = [item["stmt"] for item in document.get("stmts", [])]
    if standard:
        # pg_get_functiondef's CREATE FUNCTION: the body is its sql_body (BEGIN ATOMIC or RETURN).
        create = statements[0].get("CreateFunctionStmt", {}) if len(statements) == 1 else {}
        if "sql_body" not in create:
            return ["cannot be read by PostgreSQL's grammar here"]
        tree: Any = create["sql_body"]
        kinds = {kind for stmt in _atomic(tree) for kind in stmt}
    else:
        tree = statements
        kinds = {kind for stmt in statements for kind in stmt}
    reasons = [f"runs a statement other than a query ({kind})" for kind in sorted(kinds - _SQL_STATEMENTS)]
    reasons += [f"calls {name}, which the policy refuses" for name in refused_calls(_calls(tree))]
    return reasons


def _atomic(sql_body: dict[str, Any]) -> list[dict[str, Any]]:
    """The statements of a SQL-standard body: `RETURN expr` (a query), or `BEGIN ATOMIC ... END`
    (PostgreSQL's grammar gives a list holding the list of statements)."""
    if "ReturnStmt" in sql_body:
        return [{"SelectStmt": sql_body["ReturnStmt"]}]
    statements: list[dict[str, Any]] = []
    for outer in sql_body.get("List", {}).get("items", []):
        statements.extend(outer.get("List", {}).get("items", []))
    return statements


def _plpgsql_reasons(body: str) -> list[str]:
    try:
        tokens = pg_parser.scan(body)
    except pg_parser.ParseError:
        return ["cannot be read by PostgreSQL's lexer here"]
    reasons = [_PLPGSQL_REFUSED[t.name] for t in tokens if t.name in _PLPGSQL_REFUSED]
    calls: list[tuple[str, str]] = []
    for index, token in enumerate(tokens[:-1]):
        if tokens[index + 1].name != "ASCII_40" or token.name.startswith("ASCII_"):
            continue  # only a name directly before "(" is a call
        name = _identifier(body[token.start : token.end + 1])
        qualified = index >= 2 and tokens[index - 1].name == "ASCII_46"
        schema = _identifier(body[tokens[index - 2].start : tokens[index - 2].end + 1]) if qualified else ""
        calls.append((schema, name))
    reasons += [f"calls {name}, which the policy refuses" for name in refused_calls(iter(calls))]
    return sorted(set(reasons))


def _identifier(text: str) -> str:
    """A name as PostgreSQL folds it: a quoted one exactly, else in lower case."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('""', '"')
    return text.casefold()


@functools.lru_cache(maxsize=BODY_CACHE_SIZE)
def judge_body(language: str, body: str, *, standard: bool = False) -> tuple[str, ...]:
    """Why running `body` (a function's, in `language`) could do more than read: empty when it is
    provably clean by the module's rules. `standard`: `body` is pg_get_functiondef's text of a
    SQL-standard body. Pure; cached (BODY_CACHE_SIZE) by its arguments."""
    if language in _NOT_JUDGED:
        return ()
    if language == "sql":
        return tuple(_sql_reasons(body, standard=standard))
    if language == "plpgsql":
        return tuple(_plpgsql_reasons(body))
    return (f"is written in LANGUAGE {language}, which the audit cannot read",)


def function_body_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    """One finding per function the role may execute whose configuration changes identity or whose
    body is not provably clean (the first MAX_LISTED, then a count)."""
    role = subject.role
    findings: list[Finding] = []
    more = 0
    for signature, language, config, body, standard, defaults, extension in conn.execute(
        FUNCTIONS_QUERY
    ).fetchall():
        revoke = f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC, {role};"
        found: list[Finding] = []
        for name in identity_settings(config):
            found.append(
                Finding(
                    "function-config",
                    f"the role can execute the function {signature}, declared with SET {name}: a call"
                    " of it changes who the call is (another role's privileges, or another person's claims)",
                    f"ALTER FUNCTION {signature} RESET {name}; (or {revoke})",
                )
            )
        # An extension's code is the extension's: the extension checks and the allow-list's review
        # of extensions judge it; its configuration is judged like any other.
        reasons = () if extension else judge_body(language, body or "", standard=bool(standard))
        if defaults and not extension:
            # Argument defaults run in the caller's query when the argument is left out.
            reasons += tuple(
                f"(in an argument's default) {r}" for r in judge_body("sql", f"SELECT {defaults}")
            )
        if reasons:
            found.append(
                Finding(
                    "function-body",
                    f"the role can execute the function {signature}, which runs with the caller's"
                    f" identity and {'; '.join(reasons)}: it could change who the call is, or do"
                    " what the policy refuses",
                    f"{revoke} (or rewrite it so that it does not)",
                )
            )
        for finding in found:
            if len(findings) < MAX_LISTED:
                findings.append(finding)
            else:
                more += 1
    if more:
        findings.append(
            Finding(
                "function-body",
                f"the role can execute {more} more such functions",
                "fix the functions above; mcp-suite check-role then lists the rest",
            )
        )
    return findings
