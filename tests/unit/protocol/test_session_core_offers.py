"""The session core's prompts, resource templates, subscriptions, binary reads and content-block tool
results: served, and advertised, only by a core given them (the product's core has none of them)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from mcp_suite.problems import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND
from mcp_suite.protocol import contents, core, mcp
from mcp_suite.protocol.mcp import ToolDescription, tool_entry
from mcp_suite.protocol.prompts import Prompt, PromptArgument, prompts_list_result
from mcp_suite.settings import MAX_SUBSCRIPTIONS
from tests.support.session_core import (
    SCHEMA,
    SCHEMA_URI,
    TOOLS,
    answer_of,
    counter,
    initialized,
    line,
    make_core,
    modern,
)


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def _greeting(arguments: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": {"type": "text", "text": f"Hello {arguments['who']}"}}]


GREETING = Prompt("greet", "Greet", "Greets someone.", _greeting, (PromptArgument("who", "Whom to greet"),))
TEMPLATE = contents.ResourceTemplate(
    uri_template="test://item/{id}/data",
    name="item",
    title="Item",
    description="One item.",
    mime_type="application/json",
)


def offering_core(
    *, subscriptions: bool = True, listed: Callable[[str], bool] | None = None
) -> core.SessionCore:
    """A core offering a prompt, a template and subscriptions; `listed`: what its caller may list
    (over HTTP, by its token's grants; None: all), which also makes its lists private."""
    return core.SessionCore(
        server_name="fixtures",
        server_version="9.9",
        tool_names=[tool.name for tool in TOOLS],
        tools=lambda: TOOLS,
        instructions="Fixtures.",
        resources=[SCHEMA],
        max_frame_bytes=1_048_576,
        max_json_depth=64,
        arg_max_depth=8,
        arg_max_items=1_000,
        call_deadline_s=30,
        draw_boundary=counter(),
        prompt_list=[GREETING],
        templates=[TEMPLATE],
        subscriptions=subscriptions,
        resources_listed=listed,
        per_caller_lists=listed is not None,
    )


def offering_initialized(**kwargs: Any) -> core.SessionCore:
    session = offering_core(**kwargs)
    answer_of(session.receive(line("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})))
    return session


def _capabilities(session: core.SessionCore, modern_era: bool) -> dict[str, Any]:
    if modern_era:
        frame = modern("server/discover")
    else:
        frame = line("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    capabilities: dict[str, Any] = answer_of(session.receive(frame))["result"]["capabilities"]
    return capabilities


@pytest.mark.parametrize("modern_era", [False, True])
def test_a_core_without_offers_advertises_what_the_product_always_did(modern_era: bool) -> None:
    # Logging in the handshake eras only: 2026-07-28 deprecates it.
    assert _capabilities(make_core(), modern_era) == {
        "tools": {"listChanged": False},
        "resources": {"listChanged": False, "subscribe": False},
    } | ({} if modern_era else {"logging": {}})


@pytest.mark.parametrize(
    "method", ["prompts/list", "prompts/get", "resources/subscribe", "resources/unsubscribe"]
)
def test_a_core_without_offers_does_not_know_their_methods(method: str) -> None:
    message = answer_of(initialized().receive(line(method, {"name": "greet", "uri": SCHEMA_URI})))
    assert message["error"]["code"] == METHOD_NOT_FOUND


def test_prompts_and_subscriptions_are_advertised_where_served_and_subscribe_only_in_the_legacy_era() -> None:
    assert _capabilities(offering_core(), modern_era=False) == {
        "tools": {"listChanged": False},
        "resources": {"listChanged": False, "subscribe": True},
        "prompts": {"listChanged": False},
        "logging": {},
    }
    # 2026-07-28 removed resources/subscribe; advertising it would promise subscriptions/listen.
    assert _capabilities(offering_core(), modern_era=True) == {
        "tools": {"listChanged": False},
        "resources": {"listChanged": False, "subscribe": False},
        "prompts": {"listChanged": False},
    }


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_prompts_are_listed_and_rendered_with_their_arguments(era: str) -> None:
    session = offering_initialized() if era == "legacy" else offering_core()
    frame = line if era == "legacy" else modern
    listed = answer_of(session.receive(frame("prompts/list")))["result"]
    assert listed["prompts"] == [
        {
            "name": "greet",
            "title": "Greet",
            "description": "Greets someone.",
            "arguments": [{"name": "who", "description": "Whom to greet", "required": True}],
        }
    ]
    got = answer_of(session.receive(frame("prompts/get", {"name": "greet", "arguments": {"who": "Ada"}})))
    assert got["result"]["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello Ada"}}]
    if era == "modern":
        assert listed["resultType"] == got["result"]["resultType"] == "complete"
        assert listed["cacheScope"] == "public"


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"name": "nope"}, ["name"]),
        ({}, ["name"]),
        ({"name": 7}, ["name"]),
        ({"name": "greet"}, ["who"]),
        ({"name": "greet", "arguments": None}, ["who"]),
        ({"name": "greet", "arguments": {"who": "Ada", "extra": "x"}}, ["extra"]),
        ({"name": "greet", "arguments": {"who": 1}}, ["arguments"]),
        ({"name": "greet", "arguments": ["who"]}, ["arguments"]),
    ],
)
def test_a_prompt_asked_wrongly_is_invalid_params_naming_what_is_wrong(
    params: dict[str, Any], named: list[str]
) -> None:
    message = answer_of(offering_initialized().receive(line("prompts/get", params)))
    assert message["error"]["code"] == INVALID_PARAMS
    assert message["error"]["data"]["invalid_params"] == named


def test_a_prompt_without_arguments_is_listed_without_them() -> None:
    bare = Prompt("bare", "Bare", "No arguments.", lambda _arguments: [])
    assert prompts_list_result([bare], {}) == {
        "prompts": [{"name": "bare", "title": "Bare", "description": "No arguments."}]
    }


def test_a_tool_without_an_output_schema_is_listed_without_one() -> None:
    entry = tool_entry(ToolDescription("t", "T", "Content only.", {"type": "object"}, None))
    assert "outputSchema" not in entry
    assert entry["inputSchema"] == {"type": "object"}


def test_prompts_list_refuses_a_cursor_it_did_not_issue() -> None:
    message = answer_of(offering_initialized().receive(line("prompts/list", {"cursor": "x"})))
    assert message["error"]["code"] == INVALID_PARAMS


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_templates_are_listed(era: str) -> None:
    session = offering_initialized() if era == "legacy" else offering_core()
    frame = line if era == "legacy" else modern
    result = answer_of(session.receive(frame("resources/templates/list")))["result"]
    assert result["resourceTemplates"] == [
        {
            "uriTemplate": "test://item/{id}/data",
            "name": "item",
            "title": "Item",
            "description": "One item.",
            "mimeType": "application/json",
        }
    ]


def _only_the_schema(uri: str) -> bool:
    return uri == SCHEMA_URI


def test_a_caller_lists_only_the_templates_it_may_read_and_privately() -> None:
    hidden = offering_core(listed=_only_the_schema)
    result = answer_of(hidden.receive(modern("resources/templates/list")))["result"]
    assert (result["resourceTemplates"], result["cacheScope"]) == ([], "private")
    shown = offering_core(listed=lambda _uri: True)
    result = answer_of(shown.receive(modern("resources/templates/list")))["result"]
    assert (len(result["resourceTemplates"]), result["cacheScope"]) == (1, "private")


@pytest.mark.parametrize(
    ("listed", "uri", "found"),
    [
        (_only_the_schema, SCHEMA_URI, True),
        (_only_the_schema, "test://item/1/data", False),
        (lambda uri: uri == TEMPLATE.uri_template, "test://item/1/data", True),
        (lambda uri: uri == TEMPLATE.uri_template, SCHEMA_URI, False),
    ],
)
def test_a_caller_subscribes_only_to_what_it_may_read(
    listed: Callable[[str], bool], uri: str, found: bool
) -> None:
    message = answer_of(
        offering_initialized(listed=listed).receive(line("resources/subscribe", {"uri": uri}))
    )
    if found:
        assert message["result"] == {}
    else:
        assert message["error"]["code"] == RESOURCE_NOT_FOUND


def test_a_uri_a_template_serves_is_read_as_a_call_of_the_template_and_answered_for_that_uri() -> None:
    session = offering_initialized()
    start = session.receive(line("resources/read", {"uri": "test://item/42/data"}, 5))
    assert isinstance(start, core.StartCall)
    assert (start.kind, start.name, start.arguments) == (
        core.CallKind.RESOURCE,
        "test://item/{id}/data",
        {"uri": "test://item/42/data"},
    )
    answer = answer_of(session.call_finished(start.key, core.ResourceRead('{"id":"42"}')))
    assert answer["result"]["contents"] == [
        {"uri": "test://item/42/data", "mimeType": "application/json", "text": '{"id":"42"}'}
    ]


@pytest.mark.parametrize(
    "uri", ["test://item//data", "test://item/4/2/data", "test://item/42/data/x", "test://item/{id}/data"]
)
def test_a_uri_no_template_matches_is_not_found(uri: str) -> None:
    message = answer_of(offering_initialized().receive(line("resources/read", {"uri": uri})))
    assert message["error"]["code"] == RESOURCE_NOT_FOUND


def test_a_binary_read_is_sent_as_base64() -> None:
    session = offering_initialized()
    start = session.receive(line("resources/read", {"uri": SCHEMA_URI}, 6))
    assert isinstance(start, core.StartCall)
    answer = answer_of(session.call_finished(start.key, core.ResourceRead("", blob=b"\x89PNG\x00\xff")))
    (entry,) = answer["result"]["contents"]
    assert entry == {
        "uri": SCHEMA_URI,
        "mimeType": SCHEMA.mime_type,
        "blob": base64.b64encode(b"\x89PNG\x00\xff").decode(),
    }


@pytest.mark.parametrize("failed", [False, True])
def test_a_content_result_is_sent_as_its_blocks_without_structured_content(failed: bool) -> None:
    session = offering_initialized()
    start = session.receive(line("tools/call", {"name": "echo", "arguments": {}}, 7))
    assert isinstance(start, core.StartCall)
    blocks = ({"type": "image", "data": "AA==", "mimeType": "image/png"},)
    answer = session.call_finished(
        start.key, contents.ToolContent(contents.ContentResult(blocks, is_error=failed))
    )
    assert answer.outcome == ("error" if failed else "ok")
    # (not `answer_of`: its wire check knows the product's tool results, one text block each)
    assert answer.frame is not None
    assert json.loads(answer.frame)["result"] == {"content": list(blocks), "isError": failed}


def test_subscriptions_are_kept_once_each_and_unsubscribing_is_idempotent() -> None:
    session = offering_initialized()
    for method, uri in [
        ("resources/subscribe", SCHEMA_URI),
        ("resources/subscribe", SCHEMA_URI),
        ("resources/subscribe", "test://item/1/data"),
        ("resources/unsubscribe", SCHEMA_URI),
        ("resources/unsubscribe", SCHEMA_URI),
        ("resources/unsubscribe", "test://never-subscribed"),
    ]:
        assert answer_of(session.receive(line(method, {"uri": uri})))["result"] == {}


def test_subscribing_to_a_uri_nobody_serves_is_not_found() -> None:
    message = answer_of(
        offering_initialized().receive(line("resources/subscribe", {"uri": "test://nothing"}))
    )
    assert message["error"]["code"] == RESOURCE_NOT_FOUND


@pytest.mark.parametrize("params", [{}, {"uri": ""}, {"uri": 3}])
def test_a_subscription_without_a_uri_is_invalid_params(params: dict[str, Any]) -> None:
    message = answer_of(offering_initialized().receive(line("resources/unsubscribe", params)))
    assert message["error"]["code"] == INVALID_PARAMS


def test_a_session_holds_at_most_max_subscriptions() -> None:
    session = offering_initialized()
    for n in range(MAX_SUBSCRIPTIONS):
        assert "result" in answer_of(
            session.receive(line("resources/subscribe", {"uri": f"test://item/{n}/data"}))
        )
    again = answer_of(session.receive(line("resources/subscribe", {"uri": "test://item/0/data"})))
    assert again["result"] == {}  # one already held is not a new one
    over = answer_of(session.receive(line("resources/subscribe", {"uri": "test://item/new/data"})))
    assert over["error"]["code"] == INVALID_PARAMS
    assert over["error"]["data"]["metadata"]["max_subscriptions"] == MAX_SUBSCRIPTIONS


@pytest.mark.parametrize("method", ["resources/subscribe", "resources/unsubscribe"])
def test_subscriptions_do_not_exist_in_the_modern_era(method: str) -> None:
    message = answer_of(offering_core().receive(modern(method, {"uri": SCHEMA_URI})))
    assert message["error"]["code"] == METHOD_NOT_FOUND


def test_a_core_offering_no_subscriptions_does_not_know_them() -> None:
    session = offering_initialized(subscriptions=False)
    message = answer_of(session.receive(line("resources/subscribe", {"uri": SCHEMA_URI})))
    assert message["error"]["code"] == METHOD_NOT_FOUND


def test_the_prompt_list_is_cached_as_long_as_the_other_lists() -> None:
    result = answer_of(offering_core().receive(modern("prompts/list")))["result"]
    assert (result["ttlMs"], result["cacheScope"]) == (mcp.LIST_TTL_MS, "public")


def test_unsubscribing_frees_the_place_it_held() -> None:
    session = offering_initialized()
    for n in range(MAX_SUBSCRIPTIONS):
        session.receive(line("resources/subscribe", {"uri": f"test://item/{n}/data"}))
    answer_of(session.receive(line("resources/unsubscribe", {"uri": "test://item/0/data"})))
    fresh = answer_of(session.receive(line("resources/subscribe", {"uri": "test://item/new/data"})))
    assert fresh["result"] == {}


def test_the_refusals_of_a_subscription_say_what_is_wrong() -> None:
    session = offering_initialized()
    missing = answer_of(session.receive(line("resources/unsubscribe", {})))["error"]["data"]
    assert (missing["detail"], missing["invalid_params"]) == (
        'resources/unsubscribe needs "uri", a resource\'s URI.',
        ["uri"],
    )
    unknown = answer_of(session.receive(line("resources/subscribe", {"uri": "test://nothing"})))["error"][
        "data"
    ]
    assert (unknown["detail"], unknown["invalid_params"]) == (
        'resources/subscribe needs the "uri" of a resource this server serves.',
        ["uri"],
    )


def test_a_core_with_templates_and_no_fixed_resource_offers_resources() -> None:
    session = core.SessionCore(
        server_name="fixtures",
        server_version="9.9",
        tool_names=[],
        tools=list,
        instructions="",
        max_frame_bytes=1_048_576,
        max_json_depth=64,
        arg_max_depth=8,
        arg_max_items=1_000,
        call_deadline_s=30,
        draw_boundary=counter(),
        templates=[TEMPLATE],
    )
    assert _capabilities(session, modern_era=True)["resources"] == {"listChanged": False, "subscribe": False}
    listed = answer_of(session.receive(modern("resources/templates/list")))["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in listed] == [TEMPLATE.uri_template]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_content_result_answers_its_call_in_its_era_with_what_the_audit_reads(era: str) -> None:
    session = offering_initialized() if era == "legacy" else offering_core()
    frame = line if era == "legacy" else modern
    start = session.receive(frame("tools/call", {"name": "echo", "arguments": {"text": "a"}}, 9))
    assert isinstance(start, core.StartCall)
    blocks = ({"type": "text", "text": "hi"},)
    answer = session.call_finished(start.key, contents.ToolContent(contents.ContentResult(blocks)))
    assert (answer.request_id, answer.method, answer.outcome, answer.tool, answer.arguments) == (
        9,
        "tools/call",
        "ok",
        "echo",
        {"text": "a"},
    )
    assert answer.frame is not None
    message = json.loads(answer.frame)
    assert message["id"] == 9
    assert ("resultType" in message["result"]) is (era == "modern")


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_templated_read_starts_with_its_id_era_and_trace_and_answers_in_its_era(era: str) -> None:
    session = offering_initialized() if era == "legacy" else offering_core()
    params: dict[str, Any] = {"uri": "test://item/42/data"}
    if era == "legacy":
        params["_meta"] = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
        request = line("resources/read", params, 5)
    else:
        request = line(
            "resources/read",
            {
                **params,
                "_meta": {
                    **modern_meta(),
                    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                },
            },
            5,
        )
    start = session.receive(request)
    assert isinstance(start, core.StartCall)
    assert start.request_id == 5
    assert start.trace_parent == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert start.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
    result = answer_of(session.call_finished(start.key, core.ResourceRead("{}")))["result"]
    assert ("cacheScope" in result) is (era == "modern")


@pytest.mark.parametrize("params", [{}, {"uri": 5}, {"uri": None}])
def test_a_read_without_a_string_uri_is_invalid_params_where_templates_are_served(
    params: dict[str, Any],
) -> None:
    message = answer_of(offering_initialized().receive(line("resources/read", params)))
    assert message["error"]["code"] == INVALID_PARAMS


def test_a_caller_allowed_only_the_template_lists_it() -> None:
    session = offering_core(listed=lambda uri: uri == TEMPLATE.uri_template)
    listed = answer_of(session.receive(modern("resources/templates/list")))["result"]["resourceTemplates"]
    assert len(listed) == 1


def test_an_empty_template_list_is_public_even_where_lists_are_private() -> None:
    result = answer_of(make_core(per_caller_lists=True).receive(modern("resources/templates/list")))["result"]
    assert (result["resourceTemplates"], result["cacheScope"]) == ([], "public")
