"""The catalogue rule of the SQL policy (docs/tools/read_only_sql.md, "The catalogue"), on both parsers.

Each refused query is refused by PostgreSQL's reading (pglast) and by sqlglot's where sqlglot can read
it, and by the whole policy with the `catalogue` rule; each allowed one passes all three; with the
rule off (MCP_SQL_ALLOW_CATALOGUE) every refused one passes the whole policy.
"""

from __future__ import annotations

import pytest

from mcp_suite.problems import QueryViolationError
from mcp_suite.settings import NAME_ECHO_CHARS, SettingsError, load_settings
from mcp_suite.tools.sql.engine.policy import QueryPolicy, vet_sql
from mcp_suite.tools.sql.engine.policy.catalogue import (
    CATALOGUE_FUNCTIONS,
    CATALOGUE_PREFIXES,
    CATALOGUE_TYPES,
    READABLE_INFORMATION_SCHEMA,
    READABLE_PG_FUNCTIONS,
    READABLE_PG_RELATIONS,
    READABLE_SETTINGS,
    REFUSED_INFORMATION_SCHEMA,
    check_catalogue,
    function_reason,
    relation_reason,
    setting_reason,
    type_reason,
)
from mcp_suite.tools.sql.engine.policy.postgres_walk import check_postgres
from mcp_suite.tools.sql.engine.policy.refusals import UnreadableError
from mcp_suite.tools.sql.engine.policy.sqlglot_walk import check_sqlglot, parse_sqlglot

# Each refused query, and what the refusal names (`metadata["object"]`).
REFUSED = (
    ("SELECT * FROM pg_class", "pg_class"),
    ("SELECT relname FROM pg_catalog.pg_class", "pg_catalog.pg_class"),
    ('SELECT * FROM "pg_catalog"."pg_description"', "pg_catalog.pg_description"),
    ("SELECT * FROM PG_CATALOG.PG_NAMESPACE", "pg_catalog.pg_namespace"),
    ("TABLE pg_roles", "pg_roles"),
    ("WITH c AS (SELECT relname FROM pg_class) SELECT * FROM c", "pg_class"),
    ("SELECT (SELECT count(*) FROM pg_roles) AS n", "pg_roles"),
    ("SELECT 1 WHERE EXISTS (SELECT 1 FROM pg_stat_activity)", "pg_stat_activity"),
    (
        "SELECT p.slug, d.description FROM docs.pages AS p "
        "CROSS JOIN LATERAL (SELECT description FROM pg_catalog.pg_description) AS d",
        "pg_catalog.pg_description",
    ),
    ("SELECT * FROM docs.pages AS p JOIN pg_policies AS q ON true", "pg_policies"),
    ("SELECT * FROM pg_toast.pg_toast_2619", "pg_toast.pg_toast_2619"),
    ("SELECT * FROM pg_temp.notes", "pg_temp.notes"),
    ("WITH pg_class AS (SELECT 1 AS x) SELECT * FROM pg_class", "pg_class"),
    ("SELECT * FROM information_schema.routines", "information_schema.routines"),
    ("SELECT * FROM information_schema.parameters", "information_schema.parameters"),
    ("SELECT * FROM information_schema.not_reviewed", "information_schema.not_reviewed"),
    ("SELECT obj_description(1)", "obj_description()"),
    ("SELECT col_description(1, 1)", "col_description()"),
    ("SELECT pg_catalog.shobj_description(1, 'pg_authid')", "shobj_description()"),
    ("SELECT pg_get_functiondef(1)", "pg_get_functiondef()"),
    ("SELECT pg_get_viewdef(1)", "pg_get_viewdef()"),
    ("SELECT pg_get_expr('x', 1)", "pg_get_expr()"),
    ("SELECT pg_tablespace_location(1663)", "pg_tablespace_location()"),
    ("SELECT inet_server_addr()", "inet_server_addr()"),
    ("SELECT inet_server_port()", "inet_server_port()"),
    ("SELECT inet_client_addr()", "inet_client_addr()"),
    ("SELECT * FROM pg_stat_get_activity(NULL)", "pg_stat_get_activity()"),
    ("SELECT pg_get_userbyid(10)", "pg_get_userbyid()"),
    ("SELECT format_type(23, NULL)", "format_type()"),
    ("SELECT to_regclass('docs.pages')", "to_regclass()"),
    ("SELECT has_table_privilege('docs.pages', 'SELECT')", "has_table_privilege()"),
    ("SELECT pg_has_role('postgres', 'MEMBER')", "pg_has_role()"),
    ("SELECT acldefault('r', 10)", "acldefault()"),
    ("SELECT regclass('docs.pages')", "regclass()"),
    ("SELECT txid_current_snapshot()", "txid_current_snapshot()"),
    ("SELECT public.obj_description(1)", "obj_description()"),
    ("SELECT 'docs.pages'::regclass", "the type regclass"),
    ("SELECT CAST(10 AS pg_catalog.regrole)", "the type regrole"),
    ('SELECT CAST(10 AS "pg_catalog"."regrole")', "the type regrole"),
    ("SELECT 1::mcp_demo.pg_catalog.regrole", "the type regrole"),
    ("SELECT regproc 'now'", "the type regproc"),
    ("SELECT '{}'::aclitem[]", "the type aclitem"),
    ('SELECT * FROM json_to_record(\'{"a": "x"}\') AS t(a regclass)', "the type regclass"),
    ("SELECT current_setting('port')", "current_setting('port')"),
    ("SELECT current_setting('LISTEN_ADDRESSES')", "current_setting('LISTEN_ADDRESSES')"),
    ("SELECT current_setting('por' || 't')", "current_setting()"),
    ("SELECT current_setting(1)", "current_setting()"),
    ("SELECT collation for (relname) FROM pg_class", "pg_class"),
    ("SELECT current_setting()", "current_setting()"),
    ("SELECT * FROM docs.pg_notes", "docs.pg_notes"),
    ("SELECT * FROM public.pg_stat_statements", "public.pg_stat_statements"),
    ("SELECT pg_typeof(1)", "pg_typeof()"),
    ("SELECT CASE WHEN false THEN get_current_ts_config() ELSE 3748 END", "get_current_ts_config()"),
    ("SELECT * FROM pgstattuple('docs.pages')", "pgstattuple()"),
    ("SELECT information_schema._pg_index_position(1, 1::int2)", "_pg_index_position()"),
)

ALLOWED = (
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'docs'",
    "SELECT column_name FROM information_schema.columns",
    "SELECT * FROM pg_timezone_names WHERE name = 'UTC'",
    "SELECT * FROM pg_catalog.pg_timezone_abbrevs",
    "SELECT current_user, current_database(), version(), now(), pg_backend_pid(), 1::regr_x",
    "SELECT current_setting('statement_timeout'), current_setting('TimeZone', true)",
    "SELECT collation for ('a')",
    "SELECT has_x(1), hash_x(2), regexp_replace('a', 'a', 'b'), regr_slope(1, 2)",
    "SELECT x::int[], y::numeric(10, 2), z::text FROM docs.pages",
    "SELECT * FROM generate_series(1, 2) AS g",
    "SELECT * FROM pg_get_keywords()",
)


def _refusal(sql: str, *, allow_catalogue: bool = False) -> QueryViolationError:
    with pytest.raises(QueryViolationError) as caught:
        vet_sql(sql, max_rows=10, allow_catalogue=allow_catalogue)
    return caught.value


@pytest.mark.parametrize(("sql", "named"), REFUSED, ids=[sql for sql, _ in REFUSED])
def test_the_policy_refuses_a_catalogue_read_and_names_it(sql: str, named: str) -> None:
    problem = _refusal(sql)
    assert problem.metadata == {"rule": "catalogue", "object": named}
    assert "sql_schema" in problem.detail


@pytest.mark.parametrize(("sql", "named"), REFUSED, ids=[sql for sql, _ in REFUSED])
def test_postgres_reading_refuses_a_catalogue_read(sql: str, named: str) -> None:
    with pytest.raises(QueryViolationError) as caught:
        check_postgres(sql, executed=False)
    assert caught.value.metadata["rule"] == "catalogue"
    check_postgres(sql, executed=False, allow_catalogue=True)


@pytest.mark.parametrize(("sql", "named"), REFUSED, ids=[sql for sql, _ in REFUSED])
def test_sqlglot_reading_refuses_a_catalogue_read_it_can_see(sql: str, named: str) -> None:
    try:
        tree = parse_sqlglot(sql)
    except UnreadableError:
        return  # PostgreSQL's tree stands in (vet_sql); its reading is checked above
    check_sqlglot(tree, allow_catalogue=True)
    if "current_setting" in sql:
        return  # current_setting()'s argument is read on PostgreSQL's tree only
    with pytest.raises(QueryViolationError) as caught:
        check_sqlglot(tree)
    assert caught.value.metadata["rule"] == "catalogue"


@pytest.mark.parametrize("sql", ALLOWED)
def test_privilege_filtered_and_built_in_reads_stay_allowed(sql: str) -> None:
    check_postgres(sql, executed=False)
    vet_sql(sql, max_rows=10)
    try:
        tree = parse_sqlglot(sql)
    except UnreadableError:
        return  # PostgreSQL's tree stands in (vet_sql, above)
    check_sqlglot(tree)


@pytest.mark.parametrize(("sql", "named"), REFUSED, ids=[sql for sql, _ in REFUSED])
def test_the_setting_allows_every_catalogue_read(sql: str, named: str) -> None:
    vetted = vet_sql(sql, max_rows=10, allow_catalogue=True)
    assert vetted.limit == 11


def test_a_policy_built_with_the_setting_lets_the_catalogue_through_and_one_without_does_not() -> None:
    allowed = QueryPolicy(
        cache_size=4, vet=lambda sql, *, max_rows: vet_sql(sql, max_rows=max_rows, allow_catalogue=True)
    )
    assert "pg_class" in allowed.vet("SELECT relname FROM pg_class", max_rows=5).sql
    with pytest.raises(QueryViolationError):
        QueryPolicy(cache_size=4).vet("SELECT relname FROM pg_class", max_rows=5)


def test_the_denylist_still_answers_first_for_a_denied_catalogue_function() -> None:
    assert _refusal("SELECT pg_sleep(1) FROM pg_class").metadata["rule"] == "denied-function"
    assert _refusal("SELECT pg_sleep(1)", allow_catalogue=True).metadata["rule"] == "denied-function"


def test_the_refusal_order_does_not_depend_on_set_order() -> None:
    problem = _refusal("SELECT obj_description(1), 1::regrole FROM pg_roles, pg_authid")
    assert problem.metadata["object"] == "pg_authid"


# --- the lists themselves ---------------------------------------------------------------------------


def test_every_reviewed_entry_has_a_reason_and_the_lists_do_not_overlap() -> None:
    assert all(READABLE_PG_RELATIONS.values())
    assert all(READABLE_PG_FUNCTIONS.values())
    assert all(CATALOGUE_FUNCTIONS.values())
    assert not READABLE_INFORMATION_SCHEMA & REFUSED_INFORMATION_SCHEMA
    assert [name for name in READABLE_PG_FUNCTIONS if function_reason(name)] == []
    assert [name for name in READABLE_PG_RELATIONS if relation_reason("pg_catalog", name)] == []
    assert all(function_reason(prefix + "x") for prefix, _ in CATALOGUE_PREFIXES)
    assert all(type_reason(name.upper()) for name in CATALOGUE_TYPES)
    assert [name for name in READABLE_SETTINGS if setting_reason(name.upper())] == []


# Settings that name the host's files and paths, where it listens, or what it runs; and a custom one.
HOST_SETTINGS = (
    "data_directory",
    "config_file",
    "hba_file",
    "ident_file",
    "external_pid_file",
    "log_directory",
    "log_filename",
    "unix_socket_directories",
    "listen_addresses",
    "port",
    "dynamic_library_path",
    "extension_control_path",
    "extension_destdir",
    "shared_preload_libraries",
    "ssl_key_file",
    "archive_command",
    "restore_command",
    "primary_conninfo",
    "cluster_name",
    "app.secret",
)


@pytest.mark.parametrize("name", HOST_SETTINGS)
def test_a_setting_off_the_reviewed_list_is_refused_in_any_case(name: str) -> None:
    assert setting_reason(name)
    assert setting_reason(name.upper())
    with pytest.raises(QueryViolationError) as refused:
        vet_sql(f"SELECT current_setting('{name}')", max_rows=5)
    assert refused.value.metadata["rule"] == "catalogue"


@pytest.mark.parametrize(
    ("schema", "name", "why"),
    [
        ("", "pg_stat_activity", "sessions"),
        ("pg_catalog", "pg_locks", "sessions"),
        ("pg_catalog", "pg_proc", "reviewed list"),
        ("information_schema", "routines", "does not filter"),
        ("pg_toast", "pg_timezone_names", "reviewed list"),
        ("docs", "pg_class", "reviewed list"),
        ("PG_CATALOG", "PG_PROC", "reviewed list"),
        ("INFORMATION_SCHEMA", "ROUTINES", "does not filter"),
        ("pg_temp", "notes", "reviewed list"),
    ],
)
def test_a_relation_is_refused_with_its_reason(schema: str, name: str, why: str) -> None:
    assert why in (relation_reason(schema, name) or "")


@pytest.mark.parametrize(
    ("schema", "name"),
    [
        ("", "pages"),
        ("docs", "pages"),
        ("Docs", "Notes_pg_"),
        ("pg_catalog", "PG_TIMEZONE_NAMES"),
        ("", "Pg_Timezone_Abbrevs"),
    ],
)
def test_a_relation_outside_the_catalogue_is_not_the_rules_business(schema: str, name: str) -> None:
    assert relation_reason(schema, name) is None


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("pg_stat_get_activity", "sessions"),
        ("pg_locks_x", "sessions"),
        ("pg_blocking_pids", "sessions"),
        ("pg_get_ruledef", "definitions"),
        ("pg_get_triggerdef", "definitions"),
        ("pg_describe_object", "definitions"),
        ("pg_identify_object", "definitions"),
        ("pg_relation_filepath", "host"),
        ("pg_settings_get_flags", "reviewed list"),
        ("PG_TABLESPACE_LOCATION", "host"),
        ("has_schema_privilege", "exist"),
        ("inet_client_port", "host"),
        ("enum_in", "objects, roles or sessions"),
        ("pg_has_role", "exist"),
        ("pg_safe_snapshot_blocking_pids", "sessions"),
        ("pg_backend_memory_contexts", "sessions"),
        ("pg_relation_filenode", "host"),
        ("format_type", "identifiers"),
    ],
)
def test_a_function_is_refused_with_its_reason(name: str, why: str) -> None:
    assert why in (function_reason(name) or "")


@pytest.mark.parametrize(
    "name", ["now", "has_foo", "lower", "regexp_match", "pg_backend_pid", "current_setting"]
)
def test_a_function_outside_the_catalogue_is_not_the_rules_business(name: str) -> None:
    assert function_reason(name) is None


def test_a_setting_is_refused_only_when_it_shows_the_host_or_cannot_be_read() -> None:
    assert "host" in (setting_reason("Port") or "")
    assert "cannot see" in (setting_reason(None) or "")
    assert setting_reason("work_mem") is None
    assert type_reason("text") is None


def test_check_catalogue_on_its_own_refuses_a_setting_last() -> None:
    check_catalogue(
        relations=[("docs", "pages")], functions=["now"], types=["int4"], settings=["work_mem", "TimeZone"]
    )
    with pytest.raises(QueryViolationError) as empty:
        check_catalogue(relations=[], functions=[], types=[], settings=["work_mem", ""])
    assert empty.value.metadata["object"] == "current_setting()"
    with pytest.raises(QueryViolationError) as caught:
        check_catalogue(relations=[], functions=[], types=[], settings=["work_mem", None])
    assert caught.value.metadata["object"] == "current_setting()"


def test_the_catalogue_is_refused_unless_the_operator_sets_mcp_sql_allow_catalogue() -> None:
    assert load_settings({}).sql_allow_catalogue is False
    assert load_settings({"MCP_SQL_ALLOW_CATALOGUE": "true"}).sql_allow_catalogue is True
    with pytest.raises(SettingsError) as info:
        load_settings({"MCP_SQL_ALLOW_CATALOGUE": "maybe"})
    assert "MCP_SQL_ALLOW_CATALOGUE" in str(info.value)


_POINTER = (
    "Read the tables, columns and comments the role may read with the sql_schema tool, or in "
    "information_schema, which PostgreSQL filters by the role's privileges."
)


@pytest.mark.parametrize(
    ("sql", "sentence"),
    [
        (
            "SELECT * FROM pg_catalog.pg_proc",
            "pg_catalog.pg_proc is a catalogue relation that is not on the reviewed list.",
        ),
        (
            "SELECT obj_description(1)",
            "obj_description() shows other objects' definitions or comments whatever the role's grants.",
        ),
        (
            "SELECT 1::regrole",
            "the type regrole turns identifiers into the names of objects or roles the role may not read.",
        ),
        (
            "SELECT current_setting(slug) FROM docs.pages",
            "current_setting() reads a setting whose name the policy cannot see "
            "(write the name as a literal).",
        ),
        (
            "SELECT current_setting('port')",
            "current_setting('port') is not on the reviewed list of settings a query may read (the others "
            "describe the host, its files, where it listens, other servers, or are custom).",
        ),
    ],
)
def test_the_refusal_says_what_and_why_and_points_to_sql_schema(sql: str, sentence: str) -> None:
    assert _refusal(sql).detail == f"The query is not allowed: {sentence} {_POINTER}"


def test_the_refused_name_is_echoed_at_most_name_echo_chars_long() -> None:
    long_name = "pg_" + "x" * 70
    problem = _refusal(f"SELECT * FROM pg_catalog.{long_name}")
    shown = problem.metadata["object"]
    assert len(shown) == NAME_ECHO_CHARS
    assert shown.endswith("\u2026")
    assert f" {shown} is a catalogue relation" in problem.detail


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ('SELECT * FROM U&"pg\\005fclass"', "pg_class"),
        ('SELECT U&"obj\\005fdescription"(1)', "obj_description()"),
        ('SELECT 1::U&"reg\\0063lass"', "the type regclass"),
        ("SELECT * FROM pg_catalog . /* c */ pg_class", "pg_catalog.pg_class"),
    ],
)
def test_unicode_escapes_and_comments_do_not_hide_a_catalogue_name(sql: str, named: str) -> None:
    """PostgreSQL's reading of the caller's text resolves them first (sqlglot misreads `U&"…"`)."""
    assert _refusal(sql).metadata == {"rule": "catalogue", "object": named}
