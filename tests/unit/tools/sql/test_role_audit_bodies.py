"""The role audit's judgement of function bodies, configurations and view definitions (issue 51),
without a database: what PostgreSQL would store is given as text."""

from __future__ import annotations

import pytest

from mcp_suite.tools.sql.engine.role_audit.bodies import identity_settings, judge_body
from mcp_suite.tools.sql.engine.role_audit.views import judge_view


def test_settings_that_decide_who_a_call_is_are_named_whatever_their_case() -> None:
    config = [
        "search_path=pg_catalog",
        "ROLE=x",
        "session_authorization=y",
        "request.jwt.claims={}",
        "work_mem=1MB",
    ]
    assert identity_settings(config) == ["ROLE", "session_authorization", "request.jwt.claims"]
    assert identity_settings(None) == []


@pytest.mark.parametrize(
    "body",
    [
        "SELECT pg_catalog.set_config('role', $1, true)",
        "SELECT 1; SELECT set_config('request.jwt.claims', $1, true)",
        "SELECT lower(t) FROM (SELECT SET_CONFIG('a.b', 'c', true) AS t) AS s",
    ],
)
def test_a_sql_body_calling_set_config_is_refused_by_the_allow_list(body: str) -> None:
    assert any("set_config()" in reason for reason in judge_body("sql", body))


@pytest.mark.parametrize(
    "body", ["SET ROLE other", "RESET ROLE", "SET SESSION AUTHORIZATION other", "DO $$ BEGIN END $$"]
)
def test_a_sql_body_with_a_statement_other_than_a_query_is_a_finding(body: str) -> None:
    assert judge_body("sql", f"SELECT 1; {body}")


def test_a_sql_standard_body_is_read_from_postgres_rendering() -> None:
    atomic = (
        "CREATE FUNCTION f() RETURNS text LANGUAGE sql"
        " BEGIN ATOMIC SELECT 1; SELECT set_config('a', 'b', true); END"
    )
    returned = (
        "CREATE FUNCTION f(t text) RETURNS text LANGUAGE sql RETURN pg_catalog.set_config('a', t, true)"
    )
    assert judge_body("sql", atomic, standard=True) == ("calls set_config(), which the policy refuses",)
    assert judge_body("sql", returned, standard=True) == (
        "calls pg_catalog.set_config(), which the policy refuses",
    )
    assert (
        judge_body(
            "sql", "CREATE FUNCTION f(t text) RETURNS text LANGUAGE sql RETURN upper(t)", standard=True
        )
        == ()
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("BEGIN EXECUTE q; END", "dynamic SQL"),
        ("BEGIN RETURN QUERY EXECUTE q; END", "dynamic SQL"),
        ("DECLARE c refcursor; BEGIN OPEN c FOR EXECUTE q; END", "dynamic SQL"),
        ("BEGIN PERFORM pg_catalog.set_config('role', 'x', true); END", "set_config()"),
        ("BEGIN PERFORM \"set_config\"('role', 'x', true); END", "set_config()"),
        ("BEGIN SET LOCAL role = x; END", "(SET)"),
        ("BEGIN RESET role; END", "(RESET)"),
        ("BEGIN PERFORM U&\"\\0073et_config\"('role', 'x', true); END", "Unicode"),
        ("BEGIN PERFORM pg_sleep(1); END", "pg_sleep()"),
    ],
)
def test_a_plpgsql_body_is_judged_failing_closed(body: str, reason: str) -> None:
    assert any(reason in found for found in judge_body("plpgsql", body)), judge_body("plpgsql", body)


def test_a_plpgsql_body_whose_every_call_is_allowed_is_clean() -> None:
    body = (
        "DECLARE v varchar(20); n numeric(10, 2); BEGIN IF (x > 0) THEN v := format('%s', lower(t)); END IF;"
        ' RETURN QUERY SELECT "Mixed"(1), count(*) FROM s.t WHERE y IN (1, 2) GROUP BY 1; END'
    )
    assert judge_body("plpgsql", body) == ()


def test_other_languages_are_findings_and_c_is_left_to_the_other_checks() -> None:
    assert judge_body("plpython3u", "return 1") == (
        "is written in LANGUAGE plpython3u, which the audit cannot read",
    )
    assert judge_body("c", "anything") == ()
    assert judge_body("internal", "anything") == ()


def test_an_unreadable_body_is_a_finding() -> None:
    assert judge_body("sql", "SELECT (") == ("cannot be read by PostgreSQL's grammar here",)
    assert judge_body("sql", "SELECT 1", standard=True) == ("cannot be read by PostgreSQL's grammar here",)
    assert judge_body("plpgsql", "BEGIN RETURN 'unterminated; END") == (
        "cannot be read by PostgreSQL's lexer here",
    )


def test_a_view_definition_goes_through_the_policy_and_its_filters_are_seen() -> None:
    refusal, filters = judge_view(
        " SELECT slug, set_config('a.b'::text, 'c'::text, true) AS s FROM docs.pages;"
    )
    assert "set_config()" in refusal
    assert not filters
    assert judge_view(" SELECT slug FROM docs.pages WHERE (words > 10);") == ("", True)
    assert judge_view(" SELECT section, sum(words) AS words FROM docs.pages GROUP BY section;") == ("", False)
    assert judge_view(" SELECT section FROM docs.pages GROUP BY section HAVING (count(*) > 1);")[1]
    assert judge_view(
        " SELECT p.slug FROM (docs.pages p JOIN docs.editors e ON ((e.editor_id = p.editor_id)));"
    )[1]
    # The catalogue is lifted (a curated view may read it); what else the policy refuses is not.
    assert judge_view(" SELECT relname FROM pg_catalog.pg_class;") == ("", False)
