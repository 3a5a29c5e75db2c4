"""What the views the role may read do when they run (issue 51), judged by the policy's own lists.

A view runs its definition with its owner's table privileges but calls its functions as the caller:
a view that calls `set_config` changes who the call is as surely as the caller's own query would.
And a view that hides rows of a table the role may not read in full is a filter only with
`security_barrier`: without it, a cheaper predicate of the caller's (a function that raises an error
quoting its argument, say) runs before the view's own and sees the hidden rows (the role guide's
rule, checked). One statement reads every view the role may SELECT from in the database's own
schemas, with PostgreSQL's rendering of its definition (`pg_get_viewdef`), its options, and the
relations it reads that the role may not read in full (no SELECT on them, or row-level security).

- The definition goes through the policy's public entry (`vet_sql`, the catalogue lifted: a curated
  view may read it): whatever the policy refuses in a caller's query (`set_config`, a function the
  allow-list refuses, a node it does not allow) is a finding for the view.
- A definition with a WHERE, HAVING or JOIN ... ON condition over such a relation, without
  `security_barrier` (and not `security_invoker`, whose reads are the caller's own), is a finding.
- The row-level security policies applied to the role on a table it may read run as the caller
  too (`policy_findings`, one statement): an expression the policy refuses is a finding.

Verdicts are cached by the definition's text (`judge_view`). Sync psycopg only; no trio.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Final

import psycopg
from pglast import parser as pg_parser

from mcp_suite.problems import InvalidArgumentsError, QueryViolationError
from mcp_suite.tools.sql.engine.policy import vet_sql
from mcp_suite.tools.sql.engine.role_audit.bodies import BODY_CACHE_SIZE
from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["POLICIES_QUERY", "VIEWS_QUERY", "judge_view", "policy_findings", "view_findings"]

VIEWS_QUERY: Final = """
SELECT c.oid::pg_catalog.regclass::text, pg_catalog.pg_get_viewdef(c.oid),
       EXISTS (SELECT FROM pg_catalog.pg_options_to_table(c.reloptions) o
               WHERE o.option_name = 'security_barrier' AND o.option_value::bool),
       EXISTS (SELECT FROM pg_catalog.pg_options_to_table(c.reloptions) o
               WHERE o.option_name = 'security_invoker' AND o.option_value::bool),
       ARRAY(SELECT DISTINCT rc.oid::pg_catalog.regclass::text
             FROM pg_catalog.pg_rewrite r
             JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
              AND d.objid = r.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
             JOIN pg_catalog.pg_class rc ON rc.oid = d.refobjid
             WHERE r.ev_class = c.oid AND rc.oid <> c.oid
               AND (rc.relrowsecurity OR NOT pg_catalog.has_table_privilege(rc.oid, 'SELECT'))
             ORDER BY 1)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'v' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
ORDER BY 1
"""

# The row-level security policies PostgreSQL applies when the role reads a table it may read: their
# expressions run in the caller's query, as the caller, like a view's functions.
POLICIES_QUERY: Final = """
SELECT c.oid::pg_catalog.regclass::text, p.polname::text,
       pg_catalog.pg_get_expr(p.polqual, p.polrelid), pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid)
FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
WHERE c.relrowsecurity AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
  AND (0::oid = ANY (p.polroles) OR EXISTS (SELECT FROM pg_catalog.unnest(p.polroles) AS r(oid)
                                            WHERE pg_catalog.pg_has_role(r.oid, 'USAGE')))
ORDER BY 1, 2
"""

# The parse tree's fields that hold a condition rows must pass.
_FILTERS: Final = frozenset({"whereClause", "havingClause", "quals"})
_READ_ROWS: Final = 1  # vet_sql's bound; the definition is judged, never run


class ViewVerdict(tuple[str, bool]):
    """(why the policy refuses the definition or "", whether it filters rows)."""


@functools.lru_cache(maxsize=BODY_CACHE_SIZE)
def judge_view(definition: str) -> tuple[str, bool]:
    """(the policy's refusal of `definition`, or ""; whether it has a row condition). Pure, cached."""
    try:
        vet_sql(definition, max_rows=_READ_ROWS, allow_catalogue=True)
        refusal = ""
    except (InvalidArgumentsError, QueryViolationError) as problem:
        refusal = problem.detail
    return refusal, _filters(definition)


def _filters(definition: str) -> bool:
    try:
        tree = json.loads(pg_parser.parse_sql_json(definition))
    except pg_parser.ParseError:
        return True  # unreadable: judged as filtering (failing closed)
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if _FILTERS.intersection(node):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def view_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    """A finding per readable view whose definition the policy refuses, or that filters rows of a
    relation the role may not read in full without security_barrier (the first MAX_LISTED)."""
    role = subject.role
    findings: list[Finding] = []
    for view, definition, barrier, invoker, hidden in conn.execute(VIEWS_QUERY).fetchall():
        refusal, filters = judge_view(definition)
        if refusal:
            findings.append(
                Finding(
                    "view-body",
                    f"the role can read the view {view}, whose definition the policy would refuse in a"
                    f" query ({refusal}): reading it runs that as the caller",
                    # A fix for the operator to read and run, not SQL this server runs.
                    f"REVOKE SELECT ON {view} FROM PUBLIC, {role}; (or CREATE OR REPLACE VIEW {view}"  # noqa: S608  # printed, never run
                    " without it)",
                )
            )
        if filters and hidden and not barrier and not invoker:
            findings.append(
                Finding(
                    "view-barrier",
                    f"the role can read the view {view}, which filters rows of {listed(hidden)} (which"
                    " the role may not read in full) without security_barrier: a predicate of the"
                    " caller's can run before the view's and see the rows it hides",
                    f"ALTER VIEW {view} SET (security_barrier = true);",
                )
            )
    if len(findings) > MAX_LISTED:
        more = len(findings) - MAX_LISTED
        findings = findings[:MAX_LISTED]
        findings.append(
            Finding(
                "view-body",
                f"the role can read {more} more such views",
                "fix the views above; mcp-suite check-role then lists the rest",
            )
        )
    return findings


def policy_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    """A finding per row-level security policy applied to the role whose expression the policy (the
    query policy) would refuse in a query: it runs as the caller in every read of its table."""
    role = subject.role
    findings: list[Finding] = []
    for table, policy, using, check in conn.execute(POLICIES_QUERY).fetchall():
        for expression in (using, check):
            refusal = judge_view(f"SELECT {expression}")[0] if expression else ""
            if refusal:
                findings.append(
                    Finding(
                        "policy-body",
                        f"the row-level security policy {policy} on {table}, applied when the role reads"
                        f" it, runs what the policy would refuse in a query ({refusal}) as the caller",
                        # A fix for the operator to read and run, not SQL this server runs.
                        f"ALTER POLICY {ident(conn, policy)} ON {table} USING (...); without it"  # noqa: S608  # printed, never run
                        f" (or REVOKE SELECT ON {table} FROM PUBLIC, {role};)",
                    )
                )
                break
    return findings[:MAX_LISTED]
