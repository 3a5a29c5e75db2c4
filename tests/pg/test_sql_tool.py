"""read_only_sql through the whole runtime (the in-memory trio harness of tests/support/harness.py):
advertised schema, results, the schema resource, cancellation that stops the query in PostgreSQL,
and a database restart mid-session."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.settings import Settings
from tests.support.harness import open_session
from tests.support.injections import check_framed
from tests.support.pg import LONG_QUERY, sql_settings, wait_until_idle, wait_until_running

pytestmark = pytest.mark.pg


def settings_for(cluster: Cluster, **overrides: Any) -> Settings:
    return sql_settings(cluster.reader_dsn, **overrides)


async def test_max_rows_is_bound_to_the_settings_shown_as_its_maximum_and_told_by_the_refusal(
    demo_cluster: Cluster,
) -> None:
    settings = settings_for(demo_cluster, sql_max_rows=120)
    with trio.fail_after(20):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            listed = await h.request("tools/list")
            over = await h.response(await h.call("read_only_sql", {"sql": "SELECT 1", "max_rows": 121}))
            empty = await h.response(await h.call("read_only_sql", {"sql": ""}))
    (tool,) = [t for t in listed["result"]["tools"] if t["name"] == "read_only_sql"]
    # What a model is shown (issue 46): the types and the default, no bounds but max_rows's maximum,
    # the setting's (issue 53), and what sql is.
    assert tool["inputSchema"]["properties"] == {
        "sql": {"type": "string", "description": "One PostgreSQL query"},
        "max_rows": {"default": 50, "type": "integer", "maximum": 120},
    }
    assert set(tool["outputSchema"]["properties"]) == {
        "columns",
        "rows",
        "row_count",
        "truncated",
        "hint",
        "invisible",
        "untrusted_data",
    }
    # The limits are enforced all the same, and the refusal that meets one says it.
    refusals = ((over, "max_rows: Input should be less than or equal to 120"), (empty, "at least 1"))
    for response, said in refusals:
        assert response["result"]["isError"] is True
        assert said in json.loads(response["result"]["content"][0]["text"])["detail"]


async def test_a_query_returns_columns_and_rows(demo_cluster: Cluster) -> None:
    with trio.fail_after(20):
        async with open_session(settings=settings_for(demo_cluster), builtins=True, test_tools=False) as h:
            await h.initialize()
            response = await h.response(
                await h.call(
                    "read_only_sql",
                    {"sql": "SELECT section, count(*) AS pages FROM docs.pages GROUP BY 1 ORDER BY 1"},
                )
            )
    result = response["result"]
    assert result.get("isError") is not True
    boundary, answer = check_framed(result)  # inside the untrusted-data frame
    assert answer == {
        "columns": [{"name": "section", "type": "text"}, {"name": "pages", "type": "bigint"}],
        "rows": [["changelog", 10], ["guides", 10], ["reference", 10]],
        "row_count": 3,
        "truncated": False,
    }
    assert result["structuredContent"] == {**answer, "untrusted_data": boundary}


async def test_the_schema_resource_lists_what_the_role_can_see(demo_cluster: Cluster) -> None:
    with trio.fail_after(20):
        async with open_session(settings=settings_for(demo_cluster), builtins=True, test_tools=False) as h:
            await h.initialize()
            listed = await h.request("resources/list")
            uri = "postgres://mcp_demo/schema"
            assert uri in [r["uri"] for r in listed["result"]["resources"]]
            read = await h.request("resources/read", {"uri": uri})
    (content,) = read["result"]["contents"]
    assert content["mimeType"] == "application/json"
    schema = json.loads(content["text"])
    assert schema["database"] == "mcp_demo"
    assert [(t["schema"], t["name"]) for t in schema["objects"]] == [
        ("docs", "pages"),
        ("reports", "releases"),
        ("reports", "words_per_section"),
    ]
    columns = [(c["name"], c["type"], c["nullable"]) for c in schema["objects"][0]["columns"]]
    assert columns == [
        ("slug", "text", False),
        ("editor_id", "text", False),
        ("section", "text", False),
        ("words", "integer", False),
    ]


async def test_notifications_cancelled_stops_the_query_in_postgres(demo_cluster: Cluster) -> None:
    # One pooled connection: the call after the cancelled one must get that same connection back.
    settings = settings_for(demo_cluster, sql_pool_min_size=1, sql_pool_max_size=1)
    admin = demo_cluster.admin_dsn
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            call_id = await h.call("read_only_sql", {"sql": LONG_QUERY})
            # The rows are produced by the cursor's FETCH (the DECLARE only plans).
            pid = await wait_until_running(admin, "FETCH")
            await h.notify("notifications/cancelled", {"requestId": call_id, "reason": "test"})
            # docs/wire.md: the backend is idle again within 1 s of the cancellation.
            with trio.fail_after(1.0):
                await wait_until_idle(admin, pid)
            # A cancelled request gets no response: the next message answers the next request.
            after = await h.response(await h.call("read_only_sql", {"sql": "SELECT pg_backend_pid()"}))
            assert after["id"] != call_id
            assert after["result"]["structuredContent"]["rows"] == [[pid]]
            rest = await h.finish()
    assert [m for m in rest if m.get("id") == call_id] == []


async def test_a_database_restart_gives_internal_errors_then_recovers(
    demo_cluster: Cluster,
) -> None:
    settings = settings_for(demo_cluster, sql_connect_timeout_s=1.0)
    query = {"sql": "SELECT count(*) FROM docs.pages"}
    with trio.fail_after(40):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            ok = await h.response(await h.call("read_only_sql", query))
            assert ok["result"]["structuredContent"]["rows"] == [[30]]
            await trio.to_thread.run_sync(demo_cluster.stop)
            try:
                down = await h.response(await h.call("read_only_sql", query))
            finally:
                with trio.CancelScope(shield=True):  # bounded: start() waits at most 30 s
                    await trio.to_thread.run_sync(demo_cluster.start)
            # In-band: a tool result the model reads and can act on (issue 53).
            assert down["result"]["isError"] is True
            outage = json.loads(down["result"]["content"][0]["text"])
            assert outage["type"] == "urn:mcp-suite:problem:database-unavailable"
            assert outage["metadata"]["retryable"] is True
            assert outage["metadata"]["source"] == "default"
            assert "password" not in json.dumps(down)
            back = await h.response(await h.call("read_only_sql", query))
            assert back["result"]["structuredContent"]["rows"] == [[30]]


async def test_policy_refusals_and_database_refusals_are_in_band(demo_cluster: Cluster) -> None:
    with trio.fail_after(20):
        async with open_session(settings=settings_for(demo_cluster), builtins=True, test_tools=False) as h:
            await h.initialize()
            denied = await h.response(await h.call("read_only_sql", {"sql": "SELECT * FROM docs.editors"}))
            too_many = await h.response(await h.call("read_only_sql", {"sql": "SELECT 1", "max_rows": 1000}))
    for response, slug in ((denied, "access-denied"), (too_many, "validation-error")):
        assert response["result"]["isError"] is True
        problem = json.loads(response["result"]["content"][0]["text"])
        assert problem["type"] == f"urn:mcp-suite:problem:{slug}"


async def test_a_database_down_at_start_up_is_served_and_audited_when_it_is_back(
    demo_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    query = {"sql": "SELECT count(*) FROM docs.pages"}
    await trio.to_thread.run_sync(demo_cluster.stop)
    try:
        with trio.fail_after(40):
            async with open_session(
                settings=settings_for(demo_cluster, sql_connect_timeout_s=1.0),
                builtins=True,
                test_tools=False,
            ) as h:
                await h.initialize()
                down = await h.response(await h.call("read_only_sql", query))
                assert down["result"]["isError"] is True
                assert "database-unavailable" in down["result"]["content"][0]["text"]
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(demo_cluster.start)
                back = await h.response(await h.call("read_only_sql", query))
                assert back["result"]["structuredContent"]["rows"] == [[30]]
    finally:
        with trio.CancelScope(shield=True):  # bounded: start() waits at most 30 s
            await trio.to_thread.run_sync(demo_cluster.start)
    assert "the database of MCP_SQL_DSN is unreachable at start-up" in caplog.text


async def test_a_role_the_database_refuses_is_logged_with_its_reason_and_never_its_password(
    demo_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "Wr0ng-pa55word-of-the-test"
    dsn, replaced = re.subn(r"password=\S+", f"password={wrong}", demo_cluster.reader_dsn)
    assert replaced == 1
    with trio.fail_after(40):
        async with open_session(
            settings=sql_settings(dsn, sql_connect_timeout_s=1.0), builtins=True, test_tools=False
        ) as h:
            await h.initialize()
            refused = await h.response(await h.call("read_only_sql", {"sql": "SELECT 1"}))
            again = await h.response(await h.call("read_only_sql", {"sql": "SELECT 1"}))
    for response in (refused, again):
        assert response["result"]["isError"] is True
        problem = json.loads(response["result"]["content"][0]["text"])
        assert problem["type"] == "urn:mcp-suite:problem:database-unavailable"
        assert problem["metadata"]["retryable"] is False
        assert "incident" not in json.dumps(response)
        assert "password authentication" not in json.dumps(response)  # the reason is for the log only
    reason = 'password authentication failed for user "…"'  # the reason, no part of the DSN
    ours = [r for r in caplog.records if r.name.startswith("mcp_suite")]
    states = [r.getMessage() for r in ours if "the database of MCP_SQL_DSN is" in r.getMessage()]
    assert len(states) == 1  # one line for the state, none per call
    assert "refusing the login at start-up" in states[0]
    assert reason in states[0]  # not "down": the server said why
    assert "mcp_reader" not in states[0]
    assert "127.0.0.1" not in states[0]
    assert not [r for r in ours if r.exc_info]  # not a bug: no traceback
    assert wrong not in caplog.text


async def test_a_role_audited_late_is_still_refused(
    demo_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    # The superuser cannot serve; with the database down at start-up the audit runs on the
    # first connection instead, and then every call fails without running a query.
    settings = sql_settings(demo_cluster.admin_dsn, sql_connect_timeout_s=1.0)
    await trio.to_thread.run_sync(demo_cluster.stop)
    try:
        with trio.fail_after(40):
            async with open_session(settings=settings, builtins=True, test_tools=False) as h:
                await h.initialize()
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(demo_cluster.start)
                refused = await h.response(
                    await h.call("read_only_sql", {"sql": "SELECT count(*) FROM docs.pages"})
                )
                # In-band, as a re-audit's refusal: the same gate, lifted only by a passing re-audit.
                assert refused["result"]["isError"] is True
                problem = json.loads(refused["result"]["content"][0]["text"])
                assert problem["type"] == "urn:mcp-suite:problem:role-refused"
                assert "superuser" in problem["detail"]
                assert "structuredContent" not in refused["result"]
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(demo_cluster.start)
    assert "is a superuser" in caplog.text
