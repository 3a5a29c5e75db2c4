"""The SQL tools under tracing, against the real cluster: a call's span has the policy and the database
work as children, the policy's span carries the fingerprint of the normalized statement (the same
for queries that differ only in their constants) and never the text; the statement's audit record
carries the trace id; the source's gauges say its role passes the audit and how its pool is."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Final

import pytest
import trio
from pglast.parser import fingerprint

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import READER_USER
from mcp_suite.runtime.log_sink import shutdown_logging
from mcp_suite.runtime.telemetry import Telemetry
from mcp_suite.tools.registry import Registry
from tests.support.harness import open_session
from tests.support.log_lines import captured_log_lines
from tests.support.pg import sql_settings
from tests.support.telemetry import InMemory, in_memory_telemetry

pytestmark = pytest.mark.pg

SECRET: Final = "a-constant-never-in-a-span"
FIRST: Final = f"SELECT count(*) AS n FROM docs.pages WHERE '{SECRET}' <> ''"
SECOND: Final = "SELECT count(*) AS n FROM docs.pages WHERE 'another constant' <> ''"


@pytest.fixture
def audit_lines() -> Iterator[io.StringIO]:
    with captured_log_lines() as stream:
        yield stream


async def test_a_query_s_span_has_the_policy_and_the_database_as_children_and_no_sql_text(
    demo_cluster: Cluster, audit_lines: io.StringIO
) -> None:
    made: list[InMemory] = []

    def watch(registry: Registry) -> Telemetry:
        made.append(in_memory_telemetry(registry))
        return made[0].telemetry

    try:
        with trio.fail_after(60):
            async with open_session(
                settings=sql_settings(demo_cluster.reader_dsn),
                builtins=True,
                test_tools=False,
                telemetry=watch,
            ) as harness:
                await harness.initialize()
                for sql in (FIRST, SECOND):
                    answer = await harness.response(await harness.call("read_only_sql", {"sql": sql}))
                    assert answer["result"].get("structuredContent", {}).get("rows") == [[30]], answer
                (watched,) = made
                states = {
                    (a["source"], a["role"]): v for a, v in watched.points("mcp_suite.sql.audit.passing")
                }
                assert states == {("default", READER_USER): 1}
                assert watched.points("mcp_suite.sql.reachable") == [({"source": "default"}, 1)]
                in_use = watched.points("mcp_suite.sql.pool.in_use")
                assert in_use == [({"source": "default"}, 0)]  # nothing lent between calls
                assert watched.points("mcp_suite.sql.pool.waiting") == [({"source": "default"}, 0)]
        spans = made[0].spans()
    finally:
        for watched in made:
            watched.telemetry.close()
    calls = [s for s in spans if s.name == "tools/call read_only_sql"]
    assert len(calls) == 2
    for call in calls:
        children = {
            s.name: s for s in spans if s.parent is not None and s.parent.span_id == call.context.span_id
        }
        assert set(children) == {"sql.policy", "sql.database", "mcp.encode"}, sorted(children)
        policy_end, database_start = children["sql.policy"].end_time, children["sql.database"].start_time
        assert policy_end is not None
        assert database_start is not None
        assert database_start >= policy_end
    policies = [s for s in spans if s.name == "sql.policy"]
    prints = [dict(s.attributes or {})["mcp_suite.sql.fingerprint"] for s in policies]
    assert prints == [fingerprint(FIRST)] * 2  # the same statement, other constants
    for span in spans:
        for value in (span.attributes or {}).values():
            assert SECRET not in str(value), span.name
            assert "docs.pages" not in str(value), span.name
    shutdown_logging()
    records = [json.loads(line) for line in audit_lines.getvalue().splitlines()]
    statements = [r for r in records if r.get("event") == "statement"]
    assert [int(r["trace_id"], 16) for r in statements] == [c.context.trace_id for c in calls]


async def test_a_failed_query_s_spans_carry_the_error_s_type_never_postgresql_s_message(
    demo_cluster: Cluster,
) -> None:
    made: list[InMemory] = []

    def watch(registry: Registry) -> Telemetry:
        made.append(in_memory_telemetry(registry))
        return made[0].telemetry

    # PostgreSQL quotes the value it could not read in its message: a stored value, as often.
    failing = f"SELECT title::int FROM docs.pages WHERE title <> '{SECRET}'"
    try:
        with trio.fail_after(60):
            async with open_session(
                settings=sql_settings(demo_cluster.reader_dsn),
                builtins=True,
                test_tools=False,
                telemetry=watch,
            ) as harness:
                await harness.initialize()
                answer = await harness.response(await harness.call("read_only_sql", {"sql": failing}))
                assert answer["result"]["isError"] is True, answer
        spans = made[0].spans()
    finally:
        for watched in made:
            watched.telemetry.close()
    database = [s for s in spans if s.name == "sql.database"]
    assert database
    assert database[0].status.status_code.name == "ERROR"
    assert str(dict(database[0].attributes or {})["error.type"]).isidentifier()  # a class's name
    for span in spans:
        said = [span.status.description or "", *(str(v) for v in (span.attributes or {}).values())]
        said += [str(event.attributes) + event.name for event in span.events]
        assert not [text for text in said if "invalid input syntax" in text or '"' in text], (span.name, said)
