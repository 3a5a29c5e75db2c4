"""The pure parts of the reach, search_path and default-privilege findings (no database)."""

from __future__ import annotations

import pytest

from mcp_suite.settings import SettingsError, load_settings
from mcp_suite.tools.sql.engine.role_audit.defaults import (
    Creator,
    creator_findings,
    search_path_entries,
    shadowing_entries,
    shadowing_findings,
)
from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED
from mcp_suite.tools.sql.engine.role_audit.reach import ReachEdge, reach_findings


@pytest.mark.parametrize(
    ("raw", "entries"),
    [
        ('"$user", public', ["$user", "public"]),
        ("util, pg_catalog, public", ["util", "pg_catalog", "public"]),
        ("Util,PG_CATALOG", ["util", "pg_catalog"]),
        ('"My, ""odd"" one", pg_catalog', ['My, "odd" one', "pg_catalog"]),
        ("", []),
        (" , public ,", ["public"]),
    ],
)
def test_a_search_path_value_is_split_into_its_schemas_as_postgresql_reads_them(
    raw: str, entries: list[str]
) -> None:
    assert search_path_entries(raw) == entries


@pytest.mark.parametrize(
    ("entries", "before"),
    [
        (["$user", "public"], []),  # pg_catalog not named: PostgreSQL searches it first
        (["pg_catalog", "util"], []),
        (["util", "pg_catalog", "public"], ["util"]),
        (["pg_temp", "$user", "pg_catalog"], ["pg_temp", "$user"]),
    ],
)
def test_only_schemas_named_before_pg_catalog_shadow_it(entries: list[str], before: list[str]) -> None:
    assert shadowing_entries(entries) == before


def test_a_shadowing_search_path_is_a_refusal_whose_fix_puts_pg_catalog_first() -> None:
    (finding,) = shadowing_findings('util, pg_catalog, "My Schema"', role='"r"', db='"d"')
    assert (finding.capability, finding.warning) == ("search-path", False)
    assert "the schemas util come before pg_catalog" in finding.problem
    assert finding.fix == 'ALTER ROLE "r" IN DATABASE "d" SET search_path = pg_catalog, "util", "My Schema";'
    assert shadowing_findings('"$user", public', role='"r"', db='"d"') == []


def _edge(family: str = "aggregate", kind: str = "SECURITY DEFINER", name: str = "step") -> ReachEdge:
    return ReachEdge(
        family=family,
        via="util.agg(text)",
        via_owner="dba",
        step="transition function",
        function=f"util.{name}(text,text)",
        schema="util",
        name=name,
        function_owner="postgres",
        kind=kind,
        extension="dblink" if kind == "extension" else None,
    )


def test_a_reach_path_names_the_path_both_owners_and_the_fix() -> None:
    (finding,) = reach_findings([_edge()], role='"r"', accepted=frozenset())
    assert (finding.capability, finding.warning) == ("reach", False)
    assert (
        "aggregate util.agg(text) → transition function util.step(text,text)"
        " (function owner postgres, aggregate owner dba) is a SECURITY DEFINER function"
    ) in finding.problem
    assert finding.fix == (
        'REVOKE EXECUTE ON FUNCTION util.agg(text) FROM PUBLIC, "r"; or ALTER FUNCTION'
        " util.step(text,text) SECURITY INVOKER; (as postgres)"
    )


def test_a_path_to_an_extension_or_administrative_function_is_fixed_by_removing_the_object() -> None:
    extension, administrative = reach_findings(
        [_edge(family="type", kind="extension"), _edge(family="type", kind="administrative")],
        role='"r"',
        accepted=frozenset(),
    )
    assert "a function of the extension dblink" in extension.problem
    assert "withholds from PUBLIC" in administrative.problem
    assert extension.fix == "remove the type util.agg(text), or make it use another function"


def test_an_accepted_definer_function_on_a_path_is_a_warning_but_an_accepted_name_excuses_nothing_else() -> (
    None
):
    findings = reach_findings(
        [_edge(), _edge(kind="administrative")], role='"r"', accepted=frozenset({"util.step"})
    )
    assert [(f.capability, f.warning) for f in findings] == [("reach-accepted", True), ("reach", False)]
    assert "MCP_SQL_ACCEPT_DEFINER_FUNCTIONS" in findings[0].problem


def test_paths_beyond_the_listed_ones_are_counted_in_one_more_refusal() -> None:
    edges = [_edge(name=f"step{i}") for i in range(MAX_LISTED + 3)]
    findings = reach_findings(edges, role='"r"', accepted=frozenset())
    assert len(findings) == MAX_LISTED + 1
    assert "3 more such functions" in findings[-1].problem


def test_a_function_creator_gets_one_default_privilege_fix_per_grant() -> None:
    creator = Creator("dba", False, ("docs",), (("", ""), ("docs", "mcp reader")))
    (finding,) = creator_findings([creator], accepted=frozenset(), db='"shop"')
    assert (finding.capability, finding.warning) == ("function-creator", False)
    assert "may create in the schemas docs" in finding.problem
    assert "PUBLIC and mcp reader may execute" in finding.problem
    # Default privileges belong to one database: the fix says which one to run it in.
    assert finding.fix.startswith(
        'connected to the database "shop" (psql -d "shop") as a superuser or "dba", run:'
        ' ALTER DEFAULT PRIVILEGES FOR ROLE "dba" REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;'
        ' ALTER DEFAULT PRIVILEGES FOR ROLE "dba" IN SCHEMA "docs" REVOKE EXECUTE ON FUNCTIONS'
        ' FROM "mcp reader";'
    )


def test_an_accepted_function_creator_is_a_warning_naming_the_setting() -> None:
    superuser = Creator("postgres", True, ("public",), (("", ""),))
    (finding,) = creator_findings([superuser], accepted=frozenset({"postgres"}))
    assert (finding.capability, finding.warning) == ("function-creator-accepted", True)
    assert "(a superuser)" in finding.problem
    assert "accepted as a known risk by MCP_SQL_ACCEPT_FUNCTION_CREATORS" in finding.problem


def test_the_creators_setting_reads_role_names_and_refuses_quotes() -> None:
    settings = load_settings({"MCP_SQL_ACCEPT_FUNCTION_CREATORS": " postgres ,, rds_superuser "})
    assert settings.sql_accept_function_creators == ("postgres", "rds_superuser")
    with pytest.raises(SettingsError, match="role names"):
        load_settings({"MCP_SQL_ACCEPT_FUNCTION_CREATORS": '"postgres"'})
