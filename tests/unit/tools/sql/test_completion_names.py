"""The names completion/complete offers are read with `sql_schema`'s own visibility predicate."""

from __future__ import annotations

import pytest

from mcp_suite.tools.sql.engine.introspect import names, objects

# The lines of `objects._OBJECTS_SQL` that decide what the role may see.
PREDICATE = (
    objects._OBJECTS_SQL[
        objects._OBJECTS_SQL.index("  FROM pg_catalog.pg_class c") : objects._OBJECTS_SQL.index(
            "   AND (%(schema)s"
        )
    ]
    .replace("  LEFT JOIN pg_catalog.pg_description d\n", "")
    .replace(
        "         ON d.objoid = c.oid AND d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0\n",
        "",
    )
)


def test_the_predicate_taken_from_sql_schema_is_its_privilege_checks() -> None:
    assert "has_schema_privilege(n.oid, 'USAGE')" in PREDICATE
    assert "has_any_column_privilege(c.oid, 'SELECT')" in PREDICATE
    assert "NOT c.relispartition" in PREDICATE


@pytest.mark.parametrize("argument", ["schema", "table"])
def test_each_completion_query_holds_sql_schema_s_visibility_predicate_word_for_word(argument: str) -> None:
    assert PREDICATE in names._SQL[argument]


@pytest.mark.parametrize("argument", ["schema", "table"])
def test_the_typed_prefix_is_only_ever_a_bound_parameter(argument: str) -> None:
    text = names._SQL[argument]
    assert "%(prefix)s::text" in text
    assert "LIKE %(prefix)s" not in text
    assert "LIMIT %(limit)s" in text
