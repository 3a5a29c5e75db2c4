"""Hypothesis property of the catalogue rule (docs/tools/read_only_sql.md, "The catalogue").

A catalogue relation, function or identifier type, in any spelling (case, quoting, qualification,
comments between the parts) and in any place of a query (FROM, a join, a CTE, a subquery in the select
list or WHERE, LATERAL, a set operation, TABLE), is refused with the `catalogue` rule; the same text
passes the whole policy when the operator allows the catalogue, so the refusal is the rule's.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_suite.problems import QueryViolationError
from mcp_suite.tools.sql.engine.policy import vet_sql
from tests.support.properties import security_property

RELATIONS = (
    "pg_class",
    "pg_description",
    "pg_proc",
    "pg_roles",
    "pg_authid",
    "pg_stat_activity",
    "pg_policies",
    "pg_views",
    "pg_settings",
    "pg_tablespace",
    "pg_namespace",
    "pg_type",
)
FUNCTIONS = (
    "obj_description",
    "col_description",
    "pg_get_functiondef",
    "pg_get_viewdef",
    "pg_tablespace_location",
    "inet_server_addr",
    "inet_server_port",
    "pg_typeof",
    "to_regclass",
    "has_table_privilege",
    "format_type",
)
TYPES = ("regclass", "regrole", "regproc", "regtype", "regnamespace", "aclitem")

COMMENTS = ("", " ", " /* c */ ", "\n-- c\n")


def _spelled(name: str, case: str) -> str:
    """`name` unquoted in lower or upper case (PostgreSQL folds both), or quoted."""
    return {"lower": name, "upper": name.upper(), "quoted": f'"{name}"'}[case]


CASES = st.sampled_from(("lower", "upper", "quoted"))


@st.composite
def qualified(draw: st.DrawFn, names: tuple[str, ...], *, schema: str = "pg_catalog") -> str:
    name = _spelled(draw(st.sampled_from(names)), draw(CASES))
    if not draw(st.booleans()):
        return name
    return f"{_spelled(schema, draw(CASES))}{draw(st.sampled_from(COMMENTS))}.{name}"


FROM_PLACES = (
    "SELECT * FROM {r}",
    "SELECT * FROM {r} AS r",
    "TABLE {r}",
    "SELECT p.slug FROM docs.pages AS p JOIN {r} AS q ON true",
    "WITH c AS (SELECT * FROM {r}) SELECT * FROM c",
    "SELECT (SELECT count(*) FROM {r}) AS n",
    "SELECT 1 WHERE EXISTS (SELECT 1 FROM {r})",
    "SELECT p.slug FROM docs.pages AS p CROSS JOIN LATERAL (SELECT 1 AS one FROM {r}) AS x",
    "SELECT slug FROM docs.pages UNION ALL SELECT 'x' FROM {r}",
    "WITH a AS (SELECT 1), b AS (SELECT * FROM (SELECT * FROM {r}) AS s) SELECT * FROM b",
)
CALL_PLACES = (
    "SELECT {f}(1) AS v",
    "SELECT slug FROM docs.pages WHERE {f}(1) IS NULL",
    "SELECT slug FROM docs.pages ORDER BY {f}(1)",
    "SELECT * FROM {f}(1) AS f",
    "SELECT p.slug FROM docs.pages AS p CROSS JOIN LATERAL (SELECT {f}(1) AS v) AS x",
    "WITH c AS (SELECT {f}(1) AS v) SELECT * FROM c",
)
TYPE_PLACES = (
    "SELECT 1::{t} AS v",
    "SELECT CAST(1 AS {t}) AS v",
    "SELECT words::{t} FROM docs.pages",
    "SELECT {t} 'x' AS v",
    "SELECT * FROM docs.pages WHERE (SELECT 1::{t}) IS NULL",
)


@st.composite
def catalogue_reads(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(("relation", "information_schema", "function", "type")))
    if kind == "relation":
        return draw(st.sampled_from(FROM_PLACES)).format(r=draw(qualified(RELATIONS)))
    if kind == "information_schema":
        view = draw(qualified(("routines", "parameters", "udt_privileges"), schema="information_schema"))
        return draw(st.sampled_from(FROM_PLACES)).format(
            r=view if "." in view else f"information_schema.{view}"
        )
    if kind == "function":
        return draw(st.sampled_from(CALL_PLACES)).format(f=draw(qualified(FUNCTIONS)))
    return draw(st.sampled_from(TYPE_PLACES)).format(t=draw(qualified(TYPES)))


@security_property
@given(catalogue_reads())
def test_a_catalogue_read_in_any_spelling_and_place_is_refused_by_the_rule(sql: str) -> None:
    try:
        vet_sql(sql, max_rows=50)
    except QueryViolationError as problem:
        assert problem.metadata.get("rule") == "catalogue", (sql, problem.detail)
    else:
        raise AssertionError(f"accepted: {sql}")
    vet_sql(sql, max_rows=50, allow_catalogue=True)
