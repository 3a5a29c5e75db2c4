"""`explain_sql` against the demo cluster, through the whole runtime (the in-memory harness).

It is `read_only_sql`'s policy and execution path with EXPLAIN in place of the FETCH: every query
the corpus refuses is refused with the very same problem, the rewrite (the outer LIMIT) shows in the
plan, and `analyze` runs under the same statement timeout and cancellation.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.tools.sql.engine.executor import CallTicket
from mcp_suite.tools.sql.engine.policy import vet_sql
from tests.support.harness import Harness, open_session
from tests.support.injections import check_framed
from tests.support.pg import (
    LONG_QUERY,
    backends,
    open_executor,
    run_unvetted,
    sql_settings,
    wait_until_idle,
    wait_until_running,
)
from tests.support.sql_corpus import CORPUS, MAX_ROWS

pytestmark = pytest.mark.pg


async def result(h: Harness, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = (await h.response(await h.call(tool, arguments)))["result"]
    return answer


def problem(answer: dict[str, Any]) -> dict[str, Any]:
    assert answer["isError"] is True, answer
    assert "structuredContent" not in answer
    document: dict[str, Any] = json.loads(answer["content"][0]["text"])
    return document


async def test_the_plan_shows_the_rewrite_cost_and_estimate(demo_cluster: Cluster) -> None:
    sql = "SELECT slug FROM docs.pages WHERE section = 'guides' ORDER BY slug"
    with trio.fail_after(30):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), builtins=True) as h:
            await h.initialize()
            plan = await result(h, "explain_sql", {"sql": sql, "max_rows": 3})
            analyzed = await result(h, "explain_sql", {"sql": sql, "max_rows": 3, "analyze": True})
    _, structured = check_framed(plan)  # inside the untrusted-data frame
    top = structured["plan"]
    assert top["Node Type"] == "Limit"  # the outer LIMIT max_rows + 1, as read_only_sql runs it
    assert structured["total_cost"] == top["Total Cost"] > 0
    assert structured["estimated_rows"] == top["Plan Rows"] == 4
    assert "Actual Rows" not in json.dumps(top)
    assert not {"actual_rows", "actual_time_ms", "execution_time_ms"} & set(structured)
    run = analyzed["structuredContent"]
    assert run["actual_rows"] == 4  # min(10 guides pages, max_rows + 1)
    assert run["plan"]["Actual Rows"] == 4
    assert run["actual_time_ms"] >= 0
    assert run["execution_time_ms"] >= 0
    assert run["planning_time_ms"] >= 0


async def test_every_refusal_of_read_only_sql_is_the_same_refusal(demo_cluster: Cluster) -> None:
    refused = [case for case in CORPUS if not case.allowed]
    checked = 0
    with trio.fail_after(120):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), builtins=True) as h:
            await h.initialize()
            for case in refused:
                arguments = {"sql": case.sql, "max_rows": MAX_ROWS}
                query = problem(await result(h, "read_only_sql", arguments))
                for analyze in (False, True):
                    explained = problem(await result(h, "explain_sql", {**arguments, "analyze": analyze}))
                    assert explained == query, case.why
                checked += 1
            # What the database refuses is refused alike too (and points to sql_schema).
            for sql in ("SELECT * FROM docs.editors", "SELECT * FROM docs.no_such_table"):
                query = problem(await result(h, "read_only_sql", {"sql": sql}))
                assert "sql_schema" in query["detail"]
                for analyze in (False, True):
                    assert problem(await result(h, "explain_sql", {"sql": sql, "analyze": analyze})) == query
    assert checked == len(refused) > 100


async def test_an_explain_inside_the_query_is_refused_as_in_read_only_sql(demo_cluster: Cluster) -> None:
    with trio.fail_after(30):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), builtins=True) as h:
            await h.initialize()
            for sql in ("EXPLAIN SELECT 1", "EXPLAIN ANALYZE SELECT 1", "SELECT 1; EXPLAIN SELECT 1"):
                document = problem(await result(h, "explain_sql", {"sql": sql}))
                assert document["type"] == "urn:mcp-suite:problem:query-violation"


async def test_a_plain_explain_does_not_run_the_query(demo_cluster: Cluster) -> None:
    settings = sql_settings(demo_cluster.reader_dsn, sql_statement_timeout_ms=500)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True) as h:
            await h.initialize()
            plan = await result(h, "explain_sql", {"sql": LONG_QUERY})
    assert plan["isError"] is False
    assert plan["structuredContent"]["estimated_rows"] == 1


# Planning folds this constant: a 900 MB string built in the backend (1.7 GB, 4-5 s) before any row.
HEAVY_CONSTANT = "SELECT length(repeat(repeat('x', 1000000), 900)) AS n"


async def test_a_plain_plan_of_a_heavy_constant_is_stopped_by_the_statement_timeout(
    demo_cluster: Cluster,
) -> None:
    settings = sql_settings(demo_cluster.reader_dsn, sql_statement_timeout_ms=300, sql_pool_max_size=1)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True) as h:
            await h.initialize()
            document = problem(await result(h, "explain_sql", {"sql": HEAVY_CONSTANT}))
            again = await result(h, "explain_sql", {"sql": "SELECT 1 AS one"})
            query = await result(h, "read_only_sql", {"sql": "SELECT 1 AS one"})
    assert document["type"] == "urn:mcp-suite:problem:execution-timeout"
    assert document["metadata"]["statement_timeout_ms"] == 300
    # The session and its one pooled connection go on.
    assert again["structuredContent"]["estimated_rows"] == 1
    assert query["structuredContent"]["rows"] == [[1]]


async def test_analyze_of_a_slow_query_hits_the_timeout_and_leaves_nothing_running(
    demo_cluster: Cluster,
) -> None:
    settings = sql_settings(demo_cluster.reader_dsn, sql_statement_timeout_ms=500, sql_pool_max_size=1)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True) as h:
            await h.initialize()
            slow = await result(h, "explain_sql", {"sql": LONG_QUERY, "analyze": True})
            document = problem(slow)
            assert document["type"] == "urn:mcp-suite:problem:execution-timeout"
            assert document["metadata"]["statement_timeout_ms"] == 500
            sessions = await trio.to_thread.run_sync(backends, demo_cluster.admin_dsn)
            assert [s for s in sessions if s[1] == "active"] == []
            assert [s for s in sessions if "generate_series" in s[2] and s[1] != "idle"] == []
            # The one pooled connection came back clean.
            again = await result(h, "read_only_sql", {"sql": "SELECT 1 AS one"})
            assert again["structuredContent"]["rows"] == [[1]]


async def test_cancelling_an_analyze_stops_it_inside_postgres(demo_cluster: Cluster) -> None:
    settings = sql_settings(demo_cluster.reader_dsn, sql_pool_min_size=1, sql_pool_max_size=1)
    admin = demo_cluster.admin_dsn
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True) as h:
            await h.initialize()
            call_id = await h.call("explain_sql", {"sql": LONG_QUERY, "analyze": True})
            pid = await wait_until_running(admin, "EXPLAIN (ANALYZE")
            await h.notify("notifications/cancelled", {"requestId": call_id, "reason": "test"})
            with trio.fail_after(1.0):
                await wait_until_idle(admin, pid)
            after = await result(h, "read_only_sql", {"sql": "SELECT pg_backend_pid()"})
            assert after["structuredContent"]["rows"] == [[pid]]
            rest = await h.finish()
    assert [m for m in rest if m.get("id") == call_id] == []


async def test_a_plan_larger_than_the_byte_cap_is_refused(demo_cluster: Cluster) -> None:
    settings = sql_settings(demo_cluster.reader_dsn, sql_max_result_bytes=1_024)
    sql = " UNION ALL ".join(f"SELECT slug FROM docs.pages WHERE words > {n}" for n in range(20))
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True) as h:
            await h.initialize()
            document = problem(await result(h, "explain_sql", {"sql": sql}))
    assert document["type"] == "urn:mcp-suite:problem:result-too-large"
    # The next step: explain a part at a time (a plan is never cut: docs/tools/explain_sql.md).
    assert "one part of the query at a time" in document["detail"]
    assert document["metadata"]["max_result_bytes"] == 1_024


# With its own LIMIT, under max_rows + 1: the text the policy regenerates plans the same.
PLAN_SQL = " UNION ALL ".join(f"SELECT slug FROM docs.pages WHERE words > {n}" for n in range(8)) + " LIMIT 5"


def _plan_bytes(dsn: str) -> int:
    """What the byte cap counts of the plan of PLAN_SQL as it runs (inside the outer LIMIT;
    `result.fits`): the column list, the plan's JSON as sent and 64 bytes."""
    executor = open_executor(dsn, sql_max_result_bytes=16_777_216)
    executed = vet_sql(PLAN_SQL, max_rows=MAX_ROWS).sql
    try:
        plan = run_unvetted(executor, executed, max_rows=MAX_ROWS, ticket=CallTicket(), explain="plan")
    finally:
        executor.close()
    columns = compact_json([{"name": c.name, "type": c.type} for c in plan.columns])
    return len(columns) + len(plan.rows_json) + 64


async def test_a_plan_at_the_cap_is_shown_and_one_byte_over_is_refused(demo_cluster: Cluster) -> None:
    needed = _plan_bytes(demo_cluster.reader_dsn)
    shown: dict[str, Any] = {}
    for cap in (needed, needed - 1):
        settings = sql_settings(demo_cluster.reader_dsn, sql_max_result_bytes=cap)
        with trio.fail_after(30):
            async with open_session(settings=settings, builtins=True) as h:
                await h.initialize()
                shown[str(cap)] = await result(h, "explain_sql", {"sql": PLAN_SQL, "max_rows": MAX_ROWS})
    assert shown[str(needed)]["isError"] is False, (needed, shown[str(needed)])
    assert shown[str(needed)]["structuredContent"]["plan"]["Node Type"] == "Limit"
    assert problem(shown[str(needed - 1)])["type"] == "urn:mcp-suite:problem:result-too-large"


async def test_a_plan_too_large_over_a_hidden_table_is_refused_for_the_hidden_rows_first(
    demo_cluster: Cluster,
) -> None:
    # How large a plan is follows the plan chosen (statistics over hidden rows included), so the
    # size refusal must not answer before the hidden-rows check does.
    settings = sql_settings(demo_cluster.reader_dsn, sql_max_result_bytes=1_024)
    sql = " UNION ALL ".join(f"SELECT version FROM reports.releases WHERE version > '{n}'" for n in range(20))
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True) as h:
            await h.initialize()
            document = problem(await result(h, "explain_sql", {"sql": sql}))
    assert document["metadata"]["rule"] == "explain-hidden-rows"


async def test_arguments_are_read_only_sql_s_plus_analyze(demo_cluster: Cluster) -> None:
    settings = sql_settings(demo_cluster.reader_dsn, sql_max_rows=120)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True) as h:
            await h.initialize()
            tools = {t["name"]: t for t in (await h.request("tools/list"))["result"]["tools"]}
            wrong = await result(h, "explain_sql", {"sql": "SELECT 1", "analyze": "yes"})
            over = await result(h, "explain_sql", {"sql": "SELECT 1", "max_rows": 121})
    explain = tools["explain_sql"]
    assert set(explain["inputSchema"]["properties"]) == {"sql", "max_rows", "analyze"}
    assert explain["inputSchema"]["properties"]["max_rows"] == {
        "default": 50,
        "type": "integer",
        "maximum": 120,
    }
    assert explain["annotations"]["readOnlyHint"] is True
    assert problem(wrong)["invalid_params"] == ["analyze"]
    # The bound is advertised (issue 53), enforced, and the refusal says it.
    assert "less than or equal to 120" in problem(over)["detail"]


def nested(depth: int, table: str, column: str = "slug") -> str:
    """A query of `depth` subqueries, one inside the other: its plan is nested about as deep."""
    sql = f"SELECT {column} AS v FROM {table}"
    for level in range(depth):
        sql = f"SELECT v FROM ({sql} LIMIT {1000 - level}) AS s{level}"
    return sql


async def test_a_plan_nested_deeper_than_an_answer_may_be_is_a_typed_refusal(demo_cluster: Cluster) -> None:
    with trio.fail_after(30):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), builtins=True) as h:
            await h.initialize()
            shallow = await result(h, "explain_sql", {"sql": nested(10, "docs.pages")})
            deep = await result(h, "explain_sql", {"sql": nested(40, "docs.pages")})
            deep_analyzed = await result(h, "explain_sql", {"sql": nested(40, "docs.pages"), "analyze": True})
            # The session goes on.
            after = await result(h, "explain_sql", {"sql": "SELECT 1"})
    assert shallow["isError"] is False, shallow
    for answer in (deep, deep_analyzed):
        document = problem(answer)
        assert document["type"] == "urn:mcp-suite:problem:validation-error"
        assert document["metadata"]["max_depth"] == 64
        assert "nested more than 64 levels" in document["detail"]
    assert after["isError"] is False, after


async def test_a_deep_plan_over_rows_the_role_cannot_read_is_refused_for_those_rows_first(
    demo_cluster: Cluster,
) -> None:
    # The depth refusal comes after the hidden-rows check: a plan's depth follows the plan chosen,
    # which statistics over hidden rows decide. information_schema reads the system catalogue,
    # whose rows describe objects the role may not see.
    with trio.fail_after(30):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), builtins=True) as h:
            await h.initialize()
            sql = nested(40, "information_schema.tables", "table_name")
            answer = await result(h, "explain_sql", {"sql": sql})
    document = problem(answer)
    assert document["metadata"]["rule"] == "explain-hidden-rows", document
