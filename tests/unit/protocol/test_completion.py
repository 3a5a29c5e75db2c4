"""completion/complete in the core, driven directly: what is completed, the bounds, the capability
per era, and the refusals; and the 2026-07-28 resource-not-found error's `data.uri`."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    ConcurrencyLimitError,
    InvalidParamsError,
    ProblemError,
    ResourceAccessDeniedError,
)
from mcp_suite.protocol import completion, core
from mcp_suite.protocol.completion import Completions, DatabaseNames, parse_complete_params
from mcp_suite.protocol.prompts import Prompt, PromptArgument
from mcp_suite.settings import COMPLETION_MAX_VALUE_CHARS, COMPLETION_MAX_VALUES, ECHO_MAX_CHARS
from tests.support.session_core import SCHEMA, TOOLS, answer_of, counter, line, make_core, modern

OTHER_URI = "postgres://other/schema"
# SCHEMA (`postgres://db/schema`) is named as MCP_SQL_DSN names it: by its database, not its source.
SOURCES = {
    SCHEMA.uri: "default",
    "postgres://main/schema": "main",
    OTHER_URI: "other",
    "postgres://mainly/schema": "mainly",
}


def completing_core(listed: Any = None, *, completions: bool = True) -> core.SessionCore:
    other = type(SCHEMA)(
        uri=OTHER_URI, name="schema-other", title="T", description="D", mime_type="application/json"
    )
    return core.SessionCore(
        server_name="mcp-suite",
        server_version="9.9",
        tool_names=[tool.name for tool in TOOLS],
        tools=lambda: TOOLS,
        instructions="Use echo.",
        resources=[SCHEMA, other],
        max_frame_bytes=1_048_576,
        max_json_depth=64,
        arg_max_depth=8,
        arg_max_items=1_000,
        call_deadline_s=30,
        draw_boundary=counter(),
        completions=Completions(SOURCES if completions else {}, listed),
    )


def ask(uri: str, name: str, value: object, **extra: Any) -> dict[str, Any]:
    return {"ref": {"type": "ref/resource", "uri": uri}, "argument": {"name": name, "value": value}, **extra}


def legacy(version: str = "2025-11-25", **kwargs: Any) -> core.SessionCore:
    session = completing_core(**kwargs)
    answer_of(session.receive(line("initialize", {"protocolVersion": version, "capabilities": {}})))
    return session


# -- the capability, per era ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "advertised"),
    [("2025-11-25", True), ("2025-06-18", True), ("2025-03-26", True), ("2024-11-05", False)],
)
def test_completions_capability_is_advertised_in_every_handshake_version_that_defines_it(
    version: str, advertised: bool
) -> None:
    session = completing_core()
    result = answer_of(session.receive(line("initialize", {"protocolVersion": version})))["result"]
    assert ("completions" in result["capabilities"]) is advertised
    if advertised:
        assert result["capabilities"]["completions"] == {}


def test_server_discover_advertises_completions_only_where_served() -> None:
    served = answer_of(completing_core().receive(modern("server/discover")))["result"]
    assert served["capabilities"]["completions"] == {}
    unserved = answer_of(completing_core(completions=False).receive(modern("server/discover")))["result"]
    assert "completions" not in unserved["capabilities"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_core_that_completes_nothing_does_not_know_the_method(era: str) -> None:
    params = ask(completion.SOURCE_TEMPLATE, "source", "")
    if era == "modern":
        message = answer_of(completing_core(completions=False).receive(modern("completion/complete", params)))
    else:
        session = legacy(completions=False)
        message = answer_of(session.receive(line("completion/complete", params)))
    assert message["error"]["code"] == METHOD_NOT_FOUND


def test_the_method_is_served_in_2024_11_05_though_the_capability_is_not_there() -> None:
    session = legacy("2024-11-05")
    message = answer_of(
        session.receive(line("completion/complete", ask(completion.SOURCE_TEMPLATE, "source", "m")))
    )
    assert message["result"]["completion"]["values"] == ["main", "mainly"]


def test_legacy_completion_needs_the_handshake_first() -> None:
    message = answer_of(
        completing_core().receive(line("completion/complete", ask(completion.SOURCE_TEMPLATE, "source", "")))
    )
    assert message["error"]["code"] == -32600


# -- sources: answered by the core, from what the caller may list ---------------------------------


@pytest.mark.parametrize(
    ("prefix", "values"),
    [
        ("", ["main", "mainly", "other"]),
        ("ma", ["main", "mainly"]),
        ("MAIN", ["main", "mainly"]),
        ("mainl", ["mainly"]),
        ("x", []),
        ("%", []),
    ],
)
def test_source_completion_is_a_case_insensitive_prefix_match_in_name_order(
    prefix: str, values: list[str]
) -> None:
    result = answer_of(
        completing_core().receive(
            modern("completion/complete", ask(completion.SOURCE_TEMPLATE, "source", prefix))
        )
    )["result"]
    assert result["completion"] == {"values": values, "total": len(values), "hasMore": False}
    assert result["resultType"] == "complete"


def test_source_completion_shows_only_the_sources_whose_schema_resource_the_caller_may_list() -> None:
    session = completing_core(listed=lambda uri: uri == OTHER_URI)
    result = answer_of(
        session.receive(modern("completion/complete", ask(completion.SOURCE_TEMPLATE, "source", "")))
    )["result"]
    assert result["completion"]["values"] == ["other"]


def test_completion_result_is_capped_at_the_specification_s_hundred_values() -> None:
    names = [f"s{i:03d}" for i in range(COMPLETION_MAX_VALUES + 5)]
    result = completion.completion_result(names, len(names))["completion"]
    assert result["values"] == names[:COMPLETION_MAX_VALUES]
    assert result["total"] == COMPLETION_MAX_VALUES + 5
    assert result["hasMore"] is True


def test_a_hundred_and_one_sources_complete_to_a_hundred_with_has_more() -> None:
    many = {f"postgres://s{i:03d}/schema": f"s{i:03d}" for i in range(COMPLETION_MAX_VALUES + 1)}
    plan = Completions(many).plan(parse_complete_params(ask(completion.SOURCE_TEMPLATE, "source", "s")))
    assert isinstance(plan, dict)
    assert len(plan["completion"]["values"]) == COMPLETION_MAX_VALUES
    assert plan["completion"]["hasMore"] is True
    assert plan["completion"]["total"] == COMPLETION_MAX_VALUES + 1


# -- schema and table names: started as a call of the schema resource --------------------------


@pytest.mark.parametrize(
    ("params", "arguments"),
    [
        (ask(SCHEMA.uri, "schema", "pu"), {"argument": "schema", "prefix": "pu", "schema": None}),
        (ask(SCHEMA.uri, "table", ""), {"argument": "table", "prefix": "", "schema": None}),
        (
            ask(SCHEMA.uri, "table", "or", context={"arguments": {"schema": "public"}}),
            {"argument": "table", "prefix": "or", "schema": "public"},
        ),
        # a schema's completion is not narrowed by a schema already chosen
        (
            ask(SCHEMA.uri, "schema", "", context={"arguments": {"schema": "public"}}),
            {"argument": "schema", "prefix": "", "schema": None},
        ),
    ],
)
def test_schema_and_table_names_are_read_as_a_call_of_the_schema_resource(
    params: dict[str, Any], arguments: dict[str, Any]
) -> None:
    session = completing_core()
    event = session.receive(modern("completion/complete", params, 7))
    assert isinstance(event, core.StartCall)
    assert event.kind is core.CallKind.COMPLETE
    assert event.name == SCHEMA.uri
    assert event.arguments == arguments
    assert session.in_flight == 1
    answer = session.call_finished(event.key, core.Completed(("orders", "orgs"), 2))
    message = answer_of(answer)
    assert message["id"] == 7
    assert message["result"]["completion"] == {"values": ["orders", "orgs"], "total": 2, "hasMore": False}
    assert message["result"]["resultType"] == "complete"
    assert session.in_flight == 0


def test_names_completion_that_passes_the_deadline_is_an_internal_error_saying_so() -> None:
    session = legacy()
    event = session.receive(line("completion/complete", ask(SCHEMA.uri, "table", "")))
    assert isinstance(event, core.StartCall)
    message = answer_of(session.call_finished(event.key, core.CallInterrupted(deadline_passed=True)))
    assert message["error"]["code"] == -32603
    assert "completed within the call deadline" in message["error"]["data"]["detail"]


def test_a_cancelled_names_completion_gets_no_answer() -> None:
    session = legacy()
    event = session.receive(line("completion/complete", ask(SCHEMA.uri, "table", ""), 3))
    assert isinstance(event, core.StartCall)
    cancelled = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}'
    assert session.receive(cancelled) == core.CancelCall(event.key)
    answer = session.call_finished(event.key, core.CallInterrupted(deadline_passed=False))
    assert answer.frame is None


# -- refusals: -32602, the session goes on ---------------------------------------------------------

LONG = "x" * (COMPLETION_MAX_VALUE_CHARS + 1)
REFUSALS = [
    (
        {"ref": {"type": "ref/prompt", "name": "code_review"}, "argument": {"name": "a", "value": ""}},
        "ref",
        "serves no prompts",
    ),
    ({"argument": {"name": "a", "value": ""}}, "ref", '"ref"'),
    ({"ref": {"type": "ref/prompt"}, "argument": {"name": "a", "value": ""}}, "ref", '"name"'),
    (
        {"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}},
        "ref",
        '"ref/resource" or "ref/prompt"',
    ),
    ({"ref": {"type": "ref/resource"}, "argument": {"name": "a", "value": ""}}, "ref", '"uri"'),
    (
        {"ref": {"type": "ref/resource", "uri": LONG}, "argument": {"name": "a", "value": ""}},
        "ref",
        "at most",
    ),
    ({"ref": {"type": "ref/resource", "uri": SCHEMA.uri}}, "argument", '"argument"'),
    (ask(SCHEMA.uri, "", ""), "argument", '"name"'),
    (
        {"ref": {"type": "ref/resource", "uri": SCHEMA.uri}, "argument": {"name": "table"}},
        "argument",
        '"value"',
    ),
    (ask(SCHEMA.uri, "table", 5), "argument", '"value"'),
    (ask(SCHEMA.uri, "table", LONG), "argument", "at most"),
    (ask(SCHEMA.uri, "table", "pa\x00ges"), "argument", "control or bidirectional"),
    (ask(SCHEMA.uri, "table\u202e", ""), "argument", "control or bidirectional"),
    (ask(SCHEMA.uri + "\x1b", "table", ""), "ref", "control or bidirectional"),
    (
        ask(SCHEMA.uri, "table", "", context={"arguments": {"schema": "\ud800"}}),
        "context",
        "control or bidirectional",
    ),
    (ask(SCHEMA.uri, "table", "", context=[]), "context", "context"),
    (ask(SCHEMA.uri, "table", "", context={"arguments": "public"}), "context", "context"),
    (ask(SCHEMA.uri, "table", "", context={"arguments": {"schema": 1}}), "context", "context"),
    (ask("file:///{path}", "path", ""), "ref", "no resource template"),
    (ask(completion.SOURCE_TEMPLATE, "schema", ""), "argument", "completes source"),
    (ask(SCHEMA.uri, "source", ""), "argument", "completes schema, table"),
    (ask(SCHEMA.uri, "column", ""), "argument", "completes schema, table"),
]


@pytest.mark.parametrize(("params", "where", "words"), REFUSALS)
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_malformed_or_unserved_completions_are_invalid_params_and_the_session_goes_on(
    era: str, params: dict[str, Any], where: str, words: str
) -> None:
    session = legacy() if era == "legacy" else completing_core()
    frame = (
        line("completion/complete", params, 9)
        if era == "legacy"
        else modern("completion/complete", params, 9)
    )
    message = answer_of(session.receive(frame))
    assert message["id"] == 9
    assert message["error"]["code"] == INVALID_PARAMS
    assert message["error"]["data"]["invalid_params"] == [where]
    assert words in message["error"]["data"]["detail"]
    assert session.in_flight == 0
    again = line("tools/list") if era == "legacy" else modern("tools/list")
    assert "result" in answer_of(session.receive(again))


def test_a_parse_error_never_echoes_more_than_a_name_of_the_caller_s_text() -> None:
    with pytest.raises(ProblemError) as caught:
        Completions(SOURCES).plan(parse_complete_params(ask("q" * 200, "a", "")))
    assert "q" * 100 not in str(caught.value.detail)


def test_the_prefix_is_carried_as_a_value_whatever_it_holds() -> None:
    prefix = "x'; DROP TABLE t; --%_\\"
    plan = Completions(SOURCES).plan(parse_complete_params(ask(SCHEMA.uri, "table", prefix)))
    assert plan == DatabaseNames(SCHEMA.uri, "table", prefix)


# -- 2026-07-28 resources, "Error Handling": data.uri on a resource not found -----------------------


def test_a_modern_resource_not_found_names_the_uri_in_its_data() -> None:
    message = answer_of(make_core().receive(modern("resources/read", {"uri": "postgres://nope/schema"}, 5)))
    assert message["error"]["code"] == INVALID_PARAMS
    assert message["error"]["data"]["uri"] == "postgres://nope/schema"
    assert message["error"]["data"]["invalid_params"] == ["uri"]


def test_a_modern_resource_not_found_with_an_overlong_uri_does_not_repeat_it() -> None:
    uri = "postgres://" + "n" * ECHO_MAX_CHARS
    message = answer_of(make_core().receive(modern("resources/read", {"uri": uri})))
    assert message["error"]["code"] == INVALID_PARAMS
    assert "uri" not in message["error"]["data"]


@pytest.mark.parametrize("uri", [None, 5])
def test_a_modern_read_without_a_string_uri_has_no_data_uri(uri: object) -> None:
    message = answer_of(make_core().receive(modern("resources/read", {"uri": uri})))
    assert message["error"]["code"] == INVALID_PARAMS
    assert "uri" not in message["error"]["data"]


def test_a_legacy_resource_not_found_keeps_its_code() -> None:
    message = answer_of(legacy().receive(line("resources/read", {"uri": "postgres://nope/schema"})))
    assert message["error"]["code"] == RESOURCE_NOT_FOUND


def test_a_names_completion_refused_at_the_call_limiter_is_a_json_rpc_error_not_in_band() -> None:
    session = legacy()
    event = session.receive(line("completion/complete", ask(SCHEMA.uri, "table", ""), 4))
    assert isinstance(event, core.StartCall)
    busy = ConcurrencyLimitError("No call slot became free within 5 s; retry later.", metadata={"slots": 1})
    message = answer_of(session.call_finished(event.key, core.CallRaised(busy)))
    assert message["error"]["code"] == INVALID_REQUEST
    assert message["error"]["data"]["type"].endswith(":concurrency-limit")
    assert message["error"]["data"]["metadata"] == {"slots": 1}


def test_a_names_completion_the_database_refuses_carries_the_refusal_as_it_is() -> None:
    session = completing_core()
    event = session.receive(modern("completion/complete", ask(SCHEMA.uri, "schema", ""), 4))
    assert isinstance(event, core.StartCall)
    denied = ResourceAccessDeniedError("No rule of the identity map maps this caller.")
    message = answer_of(session.call_finished(event.key, core.CallRaised(denied)))
    assert message["error"]["code"] == INVALID_REQUEST
    assert message["error"]["data"]["type"].endswith(":access-denied")


class PromptCompleter:
    """A completer of its own, as a test server brings one: it completes a prompt's argument."""

    def __init__(self) -> None:
        self.asked: list[completion.Ask] = []

    def __bool__(self) -> bool:
        return True

    def plan(self, ask: completion.Ask) -> dict[str, Any] | DatabaseNames:
        self.asked.append(ask)
        return completion.completion_result(["test-value"], 1)


def test_a_core_given_its_own_completer_hands_it_a_prompt_ref_by_name() -> None:
    completer = PromptCompleter()
    session = core.SessionCore(
        server_name="t",
        server_version="1",
        tool_names=[],
        tools=list,
        instructions="",
        max_frame_bytes=65_536,
        max_json_depth=32,
        arg_max_depth=8,
        arg_max_items=64,
        call_deadline_s=10.0,
        draw_boundary=counter(),
        completions=completer,
    )
    params = {
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "test"},
    }
    result = answer_of(session.receive(modern("completion/complete", params)))["result"]
    assert result["completion"] == {"values": ["test-value"], "total": 1, "hasMore": False}
    assert completer.asked == [completion.Ask("test_prompt_with_arguments", "arg1", "test", {}, prompt=True)]


def test_a_source_whose_schema_resource_is_not_the_template_s_expansion_is_not_completed() -> None:
    # MCP_SQL_DSN: the one schema resource is named by its database, and the tools take no source.
    single = Completions({"postgres://mcp_demo/schema": "default"})
    plan = single.plan(parse_complete_params(ask(completion.SOURCE_TEMPLATE, "source", "")))
    assert plan == {"completion": {"values": [], "total": 0, "hasMore": False}}


def _prompt_ask(name: str, argument: str, value: str) -> completion.Ask:
    return parse_complete_params(
        {"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": argument, "value": value}}
    )


def test_a_prompt_argument_completes_to_its_declared_values_by_prefix() -> None:
    city = PromptArgument("city", "A city", values=("Paris", "park", "party", "Rome"))
    served = Completions({}, prompts=[Prompt("trip", "Trip", "A trip.", lambda _a: [], (city,))])
    assert served  # a prompt with an argument is something to complete
    assert served.plan(_prompt_ask("trip", "city", "PAR")) == completion.completion_result(
        ["Paris", "park", "party"], 3
    )
    assert served.plan(_prompt_ask("trip", "city", "x")) == completion.completion_result([], 0)
    with pytest.raises(InvalidParamsError, match="no prompt named 'other'"):
        served.plan(_prompt_ask("other", "city", ""))
    with pytest.raises(
        InvalidParamsError, match="'trip' has no argument 'day' to complete; it completes city"
    ):
        served.plan(_prompt_ask("trip", "day", ""))


def test_prompts_without_arguments_give_nothing_to_complete() -> None:
    served = Completions({}, prompts=[Prompt("hello", "Hello", "Hi.", lambda _a: [])])
    assert not served
    with pytest.raises(InvalidParamsError, match="This server serves no prompts"):
        served.plan(_prompt_ask("hello", "x", ""))
